#!/usr/bin/env bash
# One device call for the small-M GEMM entries (mma.sync consumers,
# gemm_tile_configs.h): the f32-accumulator experiment against the wgmma
# entries, the GEMM's Python GPU tests, bench_dense.py's GEMM checks and
# timings, and L2-flushed kernel times of the small-M entries beside the
# default and cuBLAS (profile_kernels.py). CARRY holds libsamebits.so and
# experiment_mma_sync_vs_wgmma. Logs in $OUT/gemm_mma.tgz, summary printed.
set -uo pipefail
C=$PWD/${CARRY:-.carry/mmas}
FINAL_OUT=${OUT:-/tmp/out}
OUT=$(mktemp -d)
sum=()
trap 'tar czf "$FINAL_OUT/gemm_mma.tgz" -C "$OUT" . ; printf "%s\n" "${sum[@]}" | tee "$FINAL_OUT/summary.txt"' EXIT
PYENV=(env SAMEBITS_LIBRARY="$C/libsamebits.so" PYTHONPATH="$PWD/python")
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$C/libsamebits.so" | tee "$OUT/lib_sha256.txt"

LD_LIBRARY_PATH=$C timeout 120 "$C/experiment_mma_sync_vs_wgmma" > "$OUT/experiment.log" 2>&1
sum+=("experiment rc=$? $(grep -E '^total|ALL EQUAL|^DIFF|latency' "$OUT/experiment.log" | tr '\n' ' ')")

source bench/gemm_device_checks.sh
gemm_python_checks  # FULL=1: every CUDA test and verify; bench_dense's GEMM checks

"${PYENV[@]}" timeout ${PROFILE_TIMEOUT:-200} python3 bench/profile_kernels.py --only gemm --reps 5 --out "$OUT" \
  --gemm-tiles "${TILES:-64x32,64x64,64x128,64x256,16x32s,16x64s,32x64s}" --gemm-ms "${MS:-1,8,16,32,64,96,128,192,256}" \
  --gemm-shapes "${SHAPES:-4096x4096,14336x4096,4096x14336,128256x4096}" > "$OUT/profile_gemm.log" 2>&1
sum+=("profile_kernels rc=$?")
if [ -n "${EXTRA:-}" ]; then bash -c "$EXTRA" > "$OUT/extra.log" 2>&1; sum+=("extra rc=$?"); fi
