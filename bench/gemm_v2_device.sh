#!/usr/bin/env bash
# One device call for the staged GEMM tile entries (docs/benchmarks_dense.md,
# "Staged, not yet run on a GPU"): GPU info, the per-entry smoke test (each
# entry in its own process with a time limit, so a hanging entry cannot eat
# the call), then bench_dense.py --gemm-only --tiles over the entries that
# passed: bitwise tile invariance at every M bucket, hashes, accuracy, mode
# checks, and the per-entry timing sweep beside cuBLAS.
# Run from the repository root; CARRY holds libsamebits.so and, when this
# branch is not merged yet, bench/ (this script, gemm_tile_smoke.py,
# bench_dense.py) and python/ (the Python layer of the same commit).
# usage: CARRY=.carry/gemm2 bash .carry/gemm2/bench/gemm_v2_device.sh
set -uo pipefail
CARRY=${CARRY:-.carry/gemm2}
OUT=${OUT:-/tmp/out}
BENCH=$CARRY/bench
[ -f "$BENCH/bench_dense.py" ] || BENCH=bench
export SAMEBITS_LIBRARY=$PWD/$CARRY/libsamebits.so
PY=$CARRY/python  # the Python layer the library was built with, when carried
[ -d "$PY/samebits" ] || PY=python
export PYTHONPATH=$PWD/$PY${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$SAMEBITS_LIBRARY" | tee "$OUT/lib_sha256.txt"
echo "bench: $BENCH  python: $PY"

timeout ${SMOKE_TIMEOUT:-200} python "$BENCH/gemm_tile_smoke.py" --timeout ${ENTRY_TIMEOUT:-40} \
  --out "$OUT/gemm_tile_smoke.json" 2>&1 | tee "$OUT/gemm_tile_smoke.log"
tiles=$(sed -n 's/^PASSED //p' "$OUT/gemm_tile_smoke.log" | tail -1)
echo "entries for the sweep: ${tiles:-<none>}"
if [ -z "$tiles" ]; then
  echo "no entry passed the smoke test: no sweep"
  exit 1
fi
timeout ${BENCH_TIMEOUT:-360} python "$BENCH/bench_dense.py" --gemm-only --tiles --tile-list "$tiles" \
  --out "$OUT/dense_gemm_v2.json" > "$OUT/dense_gemm_v2.log" 2>&1
rc=$?
grep -E '^tiles |^\[|FAILS' "$OUT/dense_gemm_v2.log" | tail -80
echo "bench rc=$rc"
exit $rc
