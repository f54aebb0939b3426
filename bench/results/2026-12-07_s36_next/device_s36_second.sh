#!/usr/bin/env bash
# Second device call (thirty-sixth session): 1) decode's lean split kernels
# (DecodeConfig::kLean: no hand loads, no softcap form; .carry/s36dlean):
# the decode suite with them (the default) and --quick with
# SAMEBITS_DECODE_LEAN=0, racecheck --small; 2) bench_decode --graph, main's
# library (.carry/s35e) beside the lean kernels and beside
# SAMEBITS_DECODE_LEAN=0 (the same library), 2 rounds rotated; 3) a second
# round of issue 6's 76 GEMM points with the lean GEMM kernels (WITH_TABLE=1).
# WITH_OFF=1 adds the LEAN=0 setting to 2); WITH_MMA_LEAN=1 checks and times
# gemm_mma_lean.patch (.carry/s36mlean). Packed into $OUT/all.tgz.
set -uo pipefail
# Run from the repository root: bash bench/results/2026-12-07_s36_next/device_s36_second.sh
OUT=${OUT:-/tmp/out}
C=$PWD/${DLEAN:-.carry/s36dlean}
mkdir -p "$OUT/bits"
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x "$C/test_attention_decode_sm90"
cnt() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
B=$OUT/bits
LD_LIBRARY_PATH=$C timeout 120 "$C/test_attention_decode_sm90" > "$B/full.log" 2>&1; echo "== suite (lean) rc=$? $(cnt "$B/full.log")"
SAMEBITS_DECODE_LEAN=0 LD_LIBRARY_PATH=$C timeout 60 "$C/test_attention_decode_sm90" --quick > "$B/quick_off.log" 2>&1; echo "== --quick LEAN=0 rc=$? $(cnt "$B/quick_off.log")"
LD_LIBRARY_PATH=$C timeout 90 compute-sanitizer --tool racecheck "$C/test_attention_decode_sm90" --small > "$B/racecheck.log" 2>&1; echo "== racecheck rc=$? $(cnt "$B/racecheck.log") $(grep -E 'RACECHECK SUMMARY' "$B/racecheck.log")"
grep -h '^\[FAIL\]' "$B"/*.log | head -3
gzip "$B"/*.log
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache" > "$OUT/pytest_decode.log" 2>&1
echo "== pytest decode rc=$? $(tail -1 "$OUT/pytest_decode.log")"
LIBS="main=.carry/s35e lean=${DLEAN:-.carry/s36dlean}${WITH_OFF:+ off=${DLEAN:-.carry/s36dlean}:SAMEBITS_DECODE_LEAN=0}" ROUNDS=2 CARRY=${DLEAN:-.carry/s36dlean} \
  SHAPES=1x4096,2x2048,4x1024,1x8192,1x16384,8x2048 OUT=$OUT/dec bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
if [ -n "${WITH_TABLE:-}" ]; then
export PYTHONPATH=$PWD/python:$PWD/bench
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" ${TLIB:-.carry/s36lean}/libsamebits.so.xz ${TLIB:-.carry/s36lean}/libsamebits.so
MS="1 16 64 128 192 256 384 512 640 768 896 1024 1152 1280 1536 1792 2048 4096 16384"
SH=""
for nk in 4096x4096 14336x4096 4096x14336 128256x4096; do for m in $MS; do SH="$SH${SH:+,}${m}x$nk"; done; done
SAMEBITS_LIBRARY=$PWD/${TLIB:-.carry/s36lean}/libsamebits.so timeout 200 python3 bench/gemm_cluster_probe.py --configs default --shapes "$SH" \
  --reps 11 --captures 2 --out "$OUT/table_2.json" > "$OUT/table_2.log" 2>&1
echo "== table rc=$?"
python3 - "$OUT/table_2.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
r = sorted((round(x["us"]["cuBLAS"] / x["us"]["default"], 3), f'{x["M"]}x{x["N"]}x{x["K"]}') for x in rows)
print("points", len(r), "below 0.95:", [x for x in r if x[0] < 0.95], "lowest", r[:4])
PY
fi
if [ -n "${WITH_MMA_LEAN:-}" ]; then
  # gemm_mma_lean.patch (the mma.sync entries' lean kernels; apply it to the
  # tree before the call, its tests are in it), library .carry/s36mlean
  M=$PWD/${MLEAN:-.carry/s36mlean}
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$M/libsamebits.so.xz" "$M/libsamebits.so"
  export PYTHONPATH=$PWD/python:$PWD/bench
  SAMEBITS_LIBRARY=$M/libsamebits.so timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/mbits_lean.json" > "$OUT/mbits.log" 2>&1
  SAMEBITS_LIBRARY=$M/libsamebits.so SAMEBITS_GEMM_LEAN=0 timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/mbits_generic.json" >> "$OUT/mbits.log" 2>&1
  echo "== mma lean bits: $(python3 bench/gemm_bits_dump.py compare "$OUT/mbits_generic.json" "$OUT/mbits_lean.json")"
  SAMEBITS_LIBRARY=$M/libsamebits.so timeout 150 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py -q -p no:cacheprovider \
    -k "gemm or linear or matmul or bmm or addmm" > "$OUT/mpytest.log" 2>&1
  echo "== mma lean pytest rc=$? $(tail -1 "$OUT/mpytest.log")"
  SAMEBITS_LIBRARY=$M/libsamebits.so timeout 120 python3 bench/gemm_cluster_probe.py --configs default,generic --reps 11 --captures 2 \
    --shapes 1x4096x4096,16x4096x4096,32x4096x4096,1x14336x4096,16x14336x4096,1x4096x14336,16x4096x14336,1x128256x4096 \
    --out "$OUT/mab.json" > "$OUT/mab.log" 2>&1
  echo "== mma lean A/B rc=$?"; cat "$OUT/mab.log"
fi
cd "$OUT" && tar czf /tmp/all.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
