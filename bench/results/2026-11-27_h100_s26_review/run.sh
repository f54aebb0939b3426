#!/usr/bin/env bash
# One device call for the block ending past lk by TMA in the mma consumer's
# schedules (DecodeProducer::load_kv, DecodeMmaConsumer::zero_rows_from):
# the decode suite with every decode call under the default rule, main's
# schedule, schedule 4 and main's with the fold forced (--quick --variants
# auto,0,4,0f: each equal to the forward's rows), the full suite under the
# default rule, memcheck / racecheck / synccheck of --small with main's
# schedule, test_cuda.py; then decode beside cuDNN / flash with every
# sequence ending one key inside a block (bench_decode.py --graph --short 1),
# this library (CARRY) and the one before (BEFORE) alternated, ROUNDS
# rounds, and the kernel-only C bench --short 1 of both (also with the wgmma
# consumer forced, SAMEBITS_DECODE_MMA=0, which gets the same TMA block).
set -uo pipefail
CARRY=${CARRY:-.carry/tmaend}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
B=$PWD/${BEFORE:-.carry/fold}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$B/libsamebits.so.xz" "$B/libsamebits.so"
sha256sum "$C/libsamebits.so" "$B/libsamebits.so" | tee "$OUT/lib_sha256.txt"
T=$C/test_attention_decode_sm90
chmod +x "$T" "$B/test_attention_decode_sm90"
if [ "${CHECKS:-1}" = 1 ]; then
  LD_LIBRARY_PATH=$C timeout 150 "$T" --quick --variants auto,0,4,0f > "$OUT/decode_quick.log" 2>&1
  sum+=("decode --quick auto,0,4,0f rc=$? $(count "$OUT/decode_quick.log")")
  grep '^\[FAIL\]' "$OUT/decode_quick.log" | head -5
  LD_LIBRARY_PATH=$C timeout 150 "$T" > "$OUT/decode_default.log" 2>&1
  sum+=("decode default full rc=$? $(count "$OUT/decode_default.log")")
  grep '^\[FAIL\]' "$OUT/decode_default.log" | head -5
  SAMEBITS_DECODE_MMA=0 LD_LIBRARY_PATH=$C timeout 150 "$T" --quick --variants auto,0,4 > "$OUT/decode_quick_wgmma.log" 2>&1
  sum+=("decode --quick, wgmma consumer (SAMEBITS_DECODE_MMA=0) auto,0,4 rc=$? $(count "$OUT/decode_quick_wgmma.log")")
  grep '^\[FAIL\]' "$OUT/decode_quick_wgmma.log" | head -5
  for tool in memcheck racecheck; do
    SAMEBITS_DECODE_MMA=0 SAMEBITS_DECODE_VARIANT=0 LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool $tool "$T" --small > "$OUT/decode_${tool}_wgmma.log" 2>&1
    sum+=("decode $tool --small (v0, wgmma consumer) rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/decode_${tool}_wgmma.log")")
  done
  for tool in memcheck racecheck synccheck; do
    SAMEBITS_DECODE_VARIANT=0 LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool $tool "$T" --small > "$OUT/decode_$tool.log" 2>&1
    sum+=("decode $tool --small (v0) rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/decode_$tool.log")")
  done
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
  sum+=("pytest test_cuda rc=$? $(tail -1 "$OUT/pytest.log")")
fi
SH=${SHAPES:-1x1024,2x1024,1x2048,1x4096,4x1024,16x1024,4x4096,8x2048,1x16384}
for r in $(seq 1 ${ROUNDS:-2}); do
  for lib in new before; do
    L=$C; [ $lib = before ] && L=$B
    SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench timeout 150 python3 bench/bench_decode.py \
      --graph --captures 3 --reps 15 --no-flex --short 1 --shapes $SH --out "$OUT/${lib}_r$r" > "$OUT/peers_${lib}_r$r.log" 2>&1
    sum+=("bench_decode --short 1 $lib r$r rc=$?")
  done
done
for lib in new before; do
  L=$C; [ $lib = before ] && L=$B
  LD_LIBRARY_PATH=$L timeout 100 "$L/test_attention_decode_sm90" --bench --graph --short 1 --variants auto,0 --max-tokens 262144 > "$OUT/bench_c_$lib.md" 2>&1
  sum+=("C bench --short 1 $lib rc=$? $(tail -1 "$OUT/bench_c_$lib.md")")
done
for lib in new before; do
  L=$C; [ $lib = before ] && L=$B
  SAMEBITS_DECODE_MMA=0 LD_LIBRARY_PATH=$L timeout 100 "$L/test_attention_decode_sm90" --bench --graph --short 1 --variants auto --max-tokens 65536 > "$OUT/bench_c_wgmma_$lib.md" 2>&1
  sum+=("C bench --short 1, wgmma consumer, $lib rc=$?")
done
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
for lib in new before; do f="$OUT/${lib}_r1/bench_decode_graph_short1.md"; [ -f "$f" ] && { echo "== $lib"; tail -n +3 "$f"; }; done
exit 0
