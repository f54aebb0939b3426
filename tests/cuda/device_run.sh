#!/usr/bin/env bash
# One device call, the integrated GPU check of the project, in this order:
#   1. GPU info; the CUDA test binary (accuracy + bitwise invariance, all
#      configurations); optionally compute-sanitizer on tiny cases;
#   2. the Python layer on the GPU: pytest tests/python/test_cuda.py and
#      `samebits.cli verify --device cuda` (JSON under $OUT);
#   3. the attention benchmark beside cuDNN and FA2.
# Expects the library and test binary under .carry/sm90/ (built here, no GPU
# needed) and writes logs under $OUT; prints a short summary last.
# usage: tests/cuda/device_run.sh [test args]
# env: BENCH_ARGS (passed to bench/bench_attention.py), SKIP_TESTS,
#      SKIP_SANITIZER (default: skipped; set RUN_SANITIZER=1), SKIP_PYTHON,
#      SKIP_BENCH, *_TIMEOUT.
set -uo pipefail
LIB=$PWD/.carry/sm90/libsamebits.so
export LD_LIBRARY_PATH=$PWD/.carry/sm90:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
summary=()
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"

if [ -z "${SKIP_TESTS:-}" ]; then
  timeout ${TEST_TIMEOUT:-150} .carry/sm90/test_attention_fwd_sm90 "$@" > "$OUT/tests.log" 2>&1
  rc=$?
  grep -v '^\[PASS\]' "$OUT/tests.log" | tail -15
  summary+=("cuda tests rc=$rc pass=$(grep -c '^\[PASS\]' "$OUT/tests.log") fail=$(grep -c '^\[FAIL\]' "$OUT/tests.log")")
fi

if [ -n "${RUN_SANITIZER:-}" ]; then
  timeout 180 compute-sanitizer --tool memcheck .carry/sm90/test_attention_fwd_sm90 --small > "$OUT/memcheck.log" 2>&1
  summary+=("memcheck rc=$?")
  timeout 180 compute-sanitizer --tool racecheck .carry/sm90/test_attention_fwd_sm90 --small > "$OUT/racecheck.log" 2>&1
  summary+=("racecheck rc=$?")
fi

if [ -z "${SKIP_PYTHON:-}" ]; then
  # pytest is not in the device image: install carried wheels (.whl/) if so.
  PYEXTRA=
  if ! python3 -c "import pytest" 2>/dev/null && ls .whl/pytest-*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
      .whl/*.whl > /dev/null 2>&1 && PYEXTRA=:/tmp/site
  fi
  PYTHONPATH=python$PYEXTRA SAMEBITS_LIBRARY=$LIB timeout ${PYTEST_TIMEOUT:-90} \
    python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest_cuda.log" 2>&1
  rc=$?
  tail -3 "$OUT/pytest_cuda.log"
  summary+=("pytest test_cuda rc=$rc: $(tail -1 "$OUT/pytest_cuda.log")")
  PYTHONPATH=python SAMEBITS_LIBRARY=$LIB timeout ${VERIFY_TIMEOUT:-90} \
    python3 -m samebits.cli verify --device cuda --json "$OUT/verify.json" > "$OUT/verify.log" 2>&1
  rc=$?
  summary+=("verify rc=$rc")
fi

# Benchmark: BENCH_ARGS into $OUT/b1, then (time left permitting) BENCH2_ARGS
# into $OUT/b2; DEADLINE (seconds since the script started, default 400)
# bounds the second. The device call returns at most 8 files: PNGs and the
# second Markdown table are dropped (the JSON holds every number).
if [ -z "${SKIP_BENCH:-}" ]; then
  mkdir -p "$OUT/b1"
  PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-200} python3 bench/bench_attention.py --lib "$LIB" \
    --out "$OUT/b1" ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1
  summary+=("bench1 rc=$? (${BENCH_ARGS:-defaults})")
  left=$(( ${DEADLINE:-400} - SECONDS ))
  if [ -n "${BENCH2_ARGS:-}" ] && [ "$left" -gt 30 ]; then
    mkdir -p "$OUT/b2"
    PYTHONUNBUFFERED=1 timeout "$left" python3 bench/bench_attention.py --lib "$LIB" \
      --out "$OUT/b2" ${BENCH2_ARGS} >> "$OUT/bench.log" 2>&1
    summary+=("bench2 rc=$? (${BENCH2_ARGS}, ${left}s left)")
    rm -f "$OUT/b2/bench_attention.md"
  fi
  rm -f "$OUT"/b1/*.png "$OUT"/b2/*.png
fi
cat "$OUT/gpu.txt" >> "$OUT/tests.log" 2>/dev/null; rm -f "$OUT/gpu.txt"

echo "================ verify"
[ -f "$OUT/verify.log" ] && tail -40 "$OUT/verify.log"
echo "================ bench"
[ -f "$OUT/bench.log" ] && grep -E '^\|' "$OUT/bench.log" | tail -50
echo "================ summary (${SECONDS}s)"
printf '%s\n' "${summary[@]}"
