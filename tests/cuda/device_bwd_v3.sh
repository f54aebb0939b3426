#!/usr/bin/env bash
# One device call for the backward's v3 kernels (docs/backward_design.md,
# "v3 (TMA producer)"): the same checks on three builds of this tree,
#   .carry/bwd3/off  default build (v2 kernels)
#   .carry/bwd3/on   -DSAMEBITS_BWD_TMA=ON (v3 dQ pass, v2 dK/dV pass)
#   .carry/bwd3/all  -DSAMEBITS_BWD_TMA=ON -DSAMEBITS_BWD_TMA_DKDV=ON (both v3)
# each with libsamebits.so and test_attention_bwd_sm90 (built here, no GPU
# needed). Per build: the full GPU test with --bench, the six 50-run hashes
# (which must be v1/v2's), the peers' benchmark (only if the test passed);
# then racecheck and memcheck --small on the v3 builds (not after a test
# that timed out). Logs under $OUT/<build>; a summary last.
# usage (repository root of the device copy): bash tests/cuda/device_bwd_v3.sh
#   or bash .carry/bwd3/device_bwd_v3.sh
# env: CARRY (default .carry/bwd3), BUILDS (default "off on all"), SKIP_BENCH,
#      SKIP_SANITIZER, TEST_ARGS (default --bench).
set -uo pipefail
CARRY=${CARRY:-.carry/bwd3}
OUT=${OUT:-/tmp/out}
HASHES="095ab3ce908393b1 a34b04d384a85ba9 96f88718f444baf8 7fcb7c2cf59f3c98 b06c70128a2a960f 55665f6d9eb3b414"
summary=()
declare -A test_rc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for v in ${BUILDS:-off on all}; do
  dir=$PWD/$CARRY/$v
  mkdir -p "$OUT/$v"
  export LD_LIBRARY_PATH=$dir
  # v3 builds: fail instead of falling back to v2 when a map cannot be made.
  export SAMEBITS_BWD_TMA_STRICT=1
  timeout ${TEST_TIMEOUT:-100} "$dir/test_attention_bwd_sm90" ${TEST_ARGS:---bench} > "$OUT/$v/bwd.log" 2>&1
  rc=$?
  test_rc[$v]=$rc
  missing=""
  for h in $HASHES; do grep -q "hash $h" "$OUT/$v/bwd.log" || missing="$missing $h"; done
  summary+=("$v: test rc=$rc pass=$(grep -c '^\[PASS\]' "$OUT/$v/bwd.log") fail=$(grep -c '^\[FAIL\]' "$OUT/$v/bwd.log") hashes missing:${missing:- none}")
  grep '^\[FAIL\]' "$OUT/$v/bwd.log" | head -5
  grep -E '^\| bf16' "$OUT/$v/bwd.log" > "$OUT/$v/test_bench.md"
  if [ -z "${SKIP_BENCH:-}" ] && [ $rc -eq 0 ]; then
    PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$dir/libsamebits.so timeout ${BENCH_TIMEOUT:-120} \
      python3 bench/bench_attention_backward.py --out "$OUT/$v" --reps 10 --dims 128,64,256 \
      --no-flex > "$OUT/$v/bench.log" 2>&1
    summary+=("$v: bench rc=$?")
  fi
done
if [ -z "${SKIP_SANITIZER:-}" ]; then
  for v in ${BUILDS:-off on all}; do
    [ "$v" = off ] && continue
    [ "${test_rc[$v]:-124}" -ge 124 ] && { summary+=("$v: sanitizers skipped (test timed out)"); continue; }
    export LD_LIBRARY_PATH=$PWD/$CARRY/$v
    timeout ${SAN_TIMEOUT:-60} compute-sanitizer --tool racecheck "$CARRY/$v/test_attention_bwd_sm90" --small > "$OUT/$v/race.log" 2>&1
    summary+=("$v: racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|hazard' "$OUT/$v/race.log" | tail -1)")
    timeout ${SAN_TIMEOUT:-60} compute-sanitizer --tool memcheck "$CARRY/$v/test_attention_bwd_sm90" --small > "$OUT/$v/mem.log" 2>&1
    summary+=("$v: memcheck rc=$? $(grep 'ERROR SUMMARY' "$OUT/$v/mem.log" | tail -1)")
  done
fi
printf '%s\n' "${summary[@]}"
# Side by side: the test's own --bench tables (C ABI, TFLOP/s).
for v in ${BUILDS:-off on all}; do echo "== $v"; cat "$OUT/$v/test_bench.md" 2>/dev/null; done
