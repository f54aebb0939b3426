#!/usr/bin/env bash
# One device call: GPU info, the CUDA tests, a sanitizer pass on tiny cases,
# and the benchmark. Expects the library and test binary under .carry/ and
# writes logs under $OUT. usage: tests/cuda/device_run.sh [test args] ; env
# BENCH_ARGS passes arguments to bench/bench_attention.py, SKIP_* skip steps.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.carry/sm90:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout ${TEST_TIMEOUT:-240} .carry/sm90/test_attention_fwd_sm90 "$@" 2>&1 | tee "$OUT/tests.log" | grep -v '^\[PASS\]'
  echo "tests rc=${PIPESTATUS[0]}"
fi
if [ -z "${SKIP_SANITIZER:-}" ]; then
  timeout 180 compute-sanitizer --tool memcheck .carry/sm90/test_attention_fwd_sm90 --small > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
  timeout 180 compute-sanitizer --tool racecheck .carry/sm90/test_attention_fwd_sm90 --small > "$OUT/racecheck.log" 2>&1
  echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-300} python3 bench/bench_attention.py --lib .carry/sm90/libsamebits.so --out "$OUT" ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"; grep -v '^{' "$OUT/bench.log" | tail -45
fi
