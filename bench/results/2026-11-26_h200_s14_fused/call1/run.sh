#!/usr/bin/env bash
# One device call for the fused backward (docs/backward_design.md, "Fused
# dQ"): two carried builds of this tree, $CARRY/new (the change) and
# $CARRY/base (the library before it), each with libsamebits.so and
# test_attention_bwd_sm90. Runs: the full GPU test of new (accuracy, 50-run
# hashes, batch / varlen / grid invariance), the C bench of both, racecheck
# and memcheck --small of new, then the peers' benchmark (PyTorch SDPA
# cuDNN / flash / flash deterministic) beside both libraries in turn.
# Logs and a summary under $OUT.
# env: CARRY (default .carry/fused), DIMS (default 128), LENGTHS, SKIP_SAN,
#      SKIP_PEERS, TEST_ARGS (default empty: the full test).
set -uo pipefail
CARRY=$PWD/${CARRY:-.carry/fused}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
sum=()
# Libraries travel xz-compressed (the carried tree is capped at 64 MiB).
for v in base new; do
  if [ -f "$CARRY/$v/libsamebits.so.xz" ]; then
    python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
      "$CARRY/$v/libsamebits.so.xz" "$CARRY/$v/libsamebits.so"
  fi
done
export SAMEBITS_BWD_TMA_STRICT=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }

LD_LIBRARY_PATH=$CARRY/new timeout ${TEST_TIMEOUT:-150} "$CARRY/new/test_attention_bwd_sm90" ${TEST_ARGS:-} > "$OUT/new_test.log" 2>&1
rc=$?
sum+=("new test rc=$rc $(count "$OUT/new_test.log") $(grep -o 'hash [0-9a-f]\{16\}' "$OUT/new_test.log" | sort -u | tr '\n' ' ')")
grep '^\[FAIL\]' "$OUT/new_test.log" | head -8
for v in base new; do
  LD_LIBRARY_PATH=$CARRY/$v timeout 120 "$CARRY/$v/test_attention_bwd_sm90" --bench-only > "$OUT/${v}_cbench.log" 2>&1
  sum+=("$v C bench rc=$?")
done
if [ -z "${SKIP_SAN:-}" ] && [ $rc -ne 124 ]; then
  LD_LIBRARY_PATH=$CARRY/new timeout 120 compute-sanitizer --tool racecheck "$CARRY/new/test_attention_bwd_sm90" --small > "$OUT/new_race.log" 2>&1
  sum+=("new racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/new_race.log")")
  LD_LIBRARY_PATH=$CARRY/new timeout 90 compute-sanitizer --tool memcheck "$CARRY/new/test_attention_bwd_sm90" --small > "$OUT/new_mem.log" 2>&1
  sum+=("new memcheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/new_mem.log")")
fi
if [ -z "${SKIP_PEERS:-}" ]; then
  PYTHONPATH=${PYDIR:-$PWD/python} SAMEBITS_LIBRARY=$CARRY/new/libsamebits.so timeout 200 python3 bench/bench_attention_backward.py \
    --out "$OUT/peers_new" --reps 10 --dims ${DIMS:-128} --lengths ${LENGTHS:-1024,2048,4096,8192,16384} --no-flex \
    --impls samebits,cudnn,flash_det > "$OUT/peers_new.log" 2>&1
  sum+=("peers new rc=$?")
  PYTHONPATH=${PYDIR:-$PWD/python} SAMEBITS_LIBRARY=$CARRY/base/libsamebits.so timeout 100 python3 bench/bench_attention_backward.py \
    --out "$OUT/peers_base" --reps 10 --dims ${DIMS:-128} --lengths ${LENGTHS:-1024,2048,4096,8192,16384} --no-flex \
    --impls samebits > "$OUT/peers_base.log" 2>&1
  sum+=("peers base rc=$?")
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
echo "== C bench base"; grep -E '^\|' "$OUT/base_cbench.log"
echo "== C bench new"; grep -E '^\|' "$OUT/new_cbench.log"
[ -f "$OUT/peers_new/bench_attention_backward.md" ] && cat "$OUT/peers_new/bench_attention_backward.md"
[ -f "$OUT/peers_base/bench_attention_backward.md" ] && cat "$OUT/peers_base/bench_attention_backward.md"
exit 0
