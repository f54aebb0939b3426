#!/usr/bin/env bash
# One device call for the GEMM cluster-entry fix of branch gemm3 (the remote
# empty-barrier arrive without the cluster-scope release, see
# docs/benchmarks_dense.md, "GEMM cluster entries: the per-k-tile fence"):
#   1. GPU info and the library's sha256;
#   2. the per-entry smoke test of the cluster entries (each in its own
#      process with a time limit: a hang costs its limit only);
#   3. bench_dense.py --gemm-only --tiles over the default's large-M entries and
#      the cluster entries that passed, at a few M for the two K = 4096 shapes:
#      row invariance, every forced entry bitwise equal to the default choice
#      (tiles_*), hashes, accuracy, mode checks, then the sweep beside cuBLAS;
#   4. profile_kernels.py: per-kernel durations (torch.profiler, L2 flushed,
#      graph replay), the method of the day's other H100 GEMM numbers.
# Run from the repository root; CARRY holds libsamebits.so and bench/.
# usage: CARRY=.carry/gemm3 bash .carry/gemm3/bench/gemm_v3_device.sh
set -uo pipefail
CARRY=${CARRY:-.carry/gemm3}
OUT=${OUT:-/tmp/out}
BENCH=$CARRY/bench
[ -f "$BENCH/bench_dense.py" ] || BENCH=bench
export SAMEBITS_LIBRARY=$PWD/$CARRY/libsamebits.so
PY=$CARRY/python
[ -d "$PY/samebits" ] || PY=python
export PYTHONPATH=$PWD/$PY${PYTHONPATH:+:$PYTHONPATH}
CLUSTER=${CLUSTER:-128x256m2,128x128m2,128x128ppm2}
BASE=${BASE:-128x256,128x128,128x128pp}
MS=${MS:-1,256,1024,2048,4096,16384}
SHAPES=${SHAPES:-4096x4096,14336x4096}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$SAMEBITS_LIBRARY" | tee "$OUT/lib_sha256.txt"
echo "bench: $BENCH  python: $PY"

t0=$SECONDS
timeout ${SMOKE_TIMEOUT:-150} python "$BENCH/gemm_tile_smoke.py" --timeout ${ENTRY_TIMEOUT:-40} --entries "$CLUSTER" \
  --out "$OUT/gemm_tile_smoke.json" 2>&1 | tee "$OUT/gemm_tile_smoke.log"
passed=$(sed -n 's/^PASSED //p' "$OUT/gemm_tile_smoke.log" | tail -1)
echo "cluster entries that passed the smoke test: ${passed:-<none>} ($((SECONDS - t0)) s)"
tiles=$BASE${passed:+,$passed}

t0=$SECONDS
timeout ${BENCH_TIMEOUT:-240} python "$BENCH/bench_dense.py" --gemm-only --tiles --tile-list "$tiles" \
  --ms "$MS" --shapes "$SHAPES" --out "$OUT/dense_gemm_v3.json" > "$OUT/dense_gemm_v3.log" 2>&1
rc=$?
grep -E '^tiles |^gemm |^\[|FAILS' "$OUT/dense_gemm_v3.log" | tail -60
echo "bench rc=$rc ($((SECONDS - t0)) s)"

t0=$SECONDS
timeout ${PROFILE_TIMEOUT:-150} python "$BENCH/profile_kernels.py" --only gemm --out "$OUT" --reps 5 \
  --gemm-tiles "$tiles" --gemm-ms 256,2048,16384 --gemm-shapes "$SHAPES" > "$OUT/profile_kernels.log" 2>&1
prc=$?
grep -E '^gemm|\]' "$OUT/profile_kernels.log" | grep -v "^\s*\[[1-9]" | tail -80
echo "profile rc=$prc ($((SECONDS - t0)) s)"
exit $rc
