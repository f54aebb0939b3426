#!/usr/bin/env bash
# One device call for the decode consumer on mma.sync (DecodeConfig::kMma):
# the decode suite under the default schedule and under v4 forced (both with
# the mma consumer wherever a tile holds <= 16 packed rows) and under
# SAMEBITS_DECODE_MMA=0 (the wgmma consumer, --quick); racecheck and memcheck
# of --small; a clock64 trace when CARRY/trace holds a traced library; the kernel-only C bench under CUDA graphs, mma on and off,
# alternated twice; decode beside cuDNN / flash SDPA (bench_decode.py --graph);
# the Python CUDA tests and `samebits verify`. Carried folder CARRY holds
# libsamebits.so.xz (or libsamebits.so) and test_attention_decode_sm90.
# Logs in $OUT/decode_mma.tgz, the summary in $OUT/summary.txt.
set -uo pipefail
sum=()
C=$PWD/${CARRY:-.carry/dmma}
FINAL_OUT=${OUT:-/tmp/out}
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/decode_mma.tgz" -C "$OUT" . && printf "%s\n" "${sum[@]}" > "$FINAL_OUT/summary.txt"' EXIT
mkdir -p "$FINAL_OUT"
if [ -f "$C/libsamebits.so.xz" ] && [ ! -f "$C/libsamebits.so" ]; then
  xz -d -k "$C/libsamebits.so.xz" && chmod +x "$C/libsamebits.so"
fi
chmod +x "$C/test_attention_decode_sm90"
PYENV=(env SAMEBITS_LIBRARY="$C/libsamebits.so" PYTHONPATH="$PWD/python")
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$C/libsamebits.so" | tee "$OUT/lib_sha256.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
T=$C/test_attention_decode_sm90
export LD_LIBRARY_PATH=$C

timeout 90 "$T" > "$OUT/decode_default.log" 2>&1
sum+=("decode default (mma) rc=$? $(count "$OUT/decode_default.log")")
SAMEBITS_DECODE_VARIANT=4 timeout 90 "$T" > "$OUT/decode_v4.log" 2>&1
sum+=("decode v4 (mma) rc=$? $(count "$OUT/decode_v4.log")")
SAMEBITS_DECODE_MMA=0 timeout 60 "$T" --quick > "$OUT/decode_nomma_quick.log" 2>&1
sum+=("decode mma off --quick rc=$? $(count "$OUT/decode_nomma_quick.log")")
timeout 150 compute-sanitizer --tool racecheck "$T" --small > "$OUT/decode_race.log" 2>&1
sum+=("decode racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/decode_race.log") $(tail -1 "$OUT/decode_race.log")")
timeout 120 compute-sanitizer --tool memcheck "$T" --small > "$OUT/decode_mem.log" 2>&1
sum+=("decode memcheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/decode_mem.log")")
# A library built with SAMEBITS_DECODE_TRACE (optional, CARRY/trace): clock64
# events of one CTA at batch x context <= 4096 tokens.
if [ -f "$C/trace/libsamebits.so.xz" ]; then
  xz -d -k "$C/trace/libsamebits.so.xz"
  for v in 0 4; do
    LD_LIBRARY_PATH=$C/trace timeout 60 "$T" --bench --graph --variants $v --max-tokens 4096 --reps 3 > "$OUT/trace_v$v.log" 2>&1
    sum+=("trace v$v rc=$?")
  done
fi

for r in 1 2; do
  for m in 1 0; do
    SAMEBITS_DECODE_MMA=$m timeout 60 "$T" --bench --graph --variants auto --max-tokens ${BENCH_MAX_TOKENS:-8388608} > "$OUT/bench_mma${m}_r$r.md" 2>&1
    sum+=("C bench mma=$m run $r rc=$?")
  done
done
"${PYENV[@]}" timeout 120 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache or cache" > "$OUT/pytest_cuda.log" 2>&1
sum+=("pytest test_cuda (decode) rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
"${PYENV[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json "$OUT/verify.json" > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
"${PYENV[@]}" timeout 100 python3 bench/bench_decode.py --graph --reps 15 --no-flex --out "$OUT" > "$OUT/decode_peers_graph.log" 2>&1
sum+=("bench_decode --graph rc=$?")

printf '%s\n' "${sum[@]}"
for f in "$OUT"/bench_mma*_r1.md; do echo "== $f"; grep -E "^\| (1|4|16|64|256) \|" "$f" | head -24; done
echo "== decode peers (graph)"; cat "$OUT/bench_decode_graph.md" 2>/dev/null
echo "== trace"; grep -A9 "decode trace: blocks 8" "$OUT/trace_v0.log" 2>/dev/null | tail -10
