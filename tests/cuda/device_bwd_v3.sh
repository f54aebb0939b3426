#!/usr/bin/env bash
# One device call for the backward's v3 dQ kernel (docs/backward_design.md,
# "v3 (TMA producer)"): the same checks on two builds of this tree,
#   .carry/bwd3/off  default build (v2 kernels, SAMEBITS_BWD_TMA=OFF)
#   .carry/bwd3/on   -DSAMEBITS_BWD_TMA=ON (v3 dQ pass)
# each with libsamebits.so and test_attention_bwd_sm90 (built here, no GPU
# needed). Per build: the full GPU test with --bench, the six 50-run hashes
# (which must be v1/v2's), the peers' benchmark; then racecheck and memcheck
# --small on the v3 build. Logs under $OUT/{off,on}; a summary last.
# usage (repository root of the device copy): bash tests/cuda/device_bwd_v3.sh
#   or bash .carry/bwd3/device_bwd_v3.sh
# env: CARRY (default .carry/bwd3), BUILDS (default "off on"), SKIP_BENCH,
#      SKIP_SANITIZER, TEST_ARGS (default --bench).
set -uo pipefail
CARRY=${CARRY:-.carry/bwd3}
OUT=${OUT:-/tmp/out}
HASHES="095ab3ce908393b1 a34b04d384a85ba9 96f88718f444baf8 7fcb7c2cf59f3c98 b06c70128a2a960f 55665f6d9eb3b414"
summary=()
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for v in ${BUILDS:-off on}; do
  dir=$PWD/$CARRY/$v
  mkdir -p "$OUT/$v"
  export LD_LIBRARY_PATH=$dir
  timeout ${TEST_TIMEOUT:-100} "$dir/test_attention_bwd_sm90" ${TEST_ARGS:---bench} > "$OUT/$v/bwd.log" 2>&1
  rc=$?
  missing=""
  for h in $HASHES; do grep -q "hash $h" "$OUT/$v/bwd.log" || missing="$missing $h"; done
  summary+=("$v: test rc=$rc pass=$(grep -c '^\[PASS\]' "$OUT/$v/bwd.log") fail=$(grep -c '^\[FAIL\]' "$OUT/$v/bwd.log") hashes missing:${missing:- none}")
  grep '^\[FAIL\]' "$OUT/$v/bwd.log" | head -5
  grep -E '^\| bf16' "$OUT/$v/bwd.log" > "$OUT/$v/test_bench.md"
  if [ -z "${SKIP_BENCH:-}" ]; then
    PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$dir/libsamebits.so timeout ${BENCH_TIMEOUT:-120} \
      python3 bench/bench_attention_backward.py --out "$OUT/$v" --reps 10 --dims 128,64,256 \
      --no-flex > "$OUT/$v/bench.log" 2>&1
    summary+=("$v: bench rc=$?")
  fi
done
if [ -z "${SKIP_SANITIZER:-}" ]; then
  export LD_LIBRARY_PATH=$PWD/$CARRY/on
  timeout ${SAN_TIMEOUT:-60} compute-sanitizer --tool racecheck "$CARRY/on/test_attention_bwd_sm90" --small > "$OUT/on/race.log" 2>&1
  summary+=("on: racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|hazard' "$OUT/on/race.log" | tail -1)")
  timeout ${SAN_TIMEOUT:-60} compute-sanitizer --tool memcheck "$CARRY/on/test_attention_bwd_sm90" --small > "$OUT/on/mem.log" 2>&1
  summary+=("on: memcheck rc=$? $(grep 'ERROR SUMMARY' "$OUT/on/mem.log" | tail -1)")
fi
printf '%s\n' "${summary[@]}"
# Side by side: the test's own --bench tables (C ABI, TFLOP/s).
for v in ${BUILDS:-off on}; do echo "== $v"; cat "$OUT/$v/test_bench.md" 2>/dev/null; done
