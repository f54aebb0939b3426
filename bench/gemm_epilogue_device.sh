#!/usr/bin/env bash
# One device call for the GEMM's staged epilogue (TileConfig kTmaStore,
# gemm_epilogue_sm90.cuh): the GEMM's Python GPU tests (the staged epilogue
# against the direct one), bench_dense.py's GEMM checks (every entry and
# "@direct" bitwise equal to the default), and L2-flushed kernel times of the
# default entry staged and direct ("@direct") and of forced entries, beside
# cuBLAS; then the same cases with the previous library (CARRY/old) for the
# stage counts the buffers took. PROFILE_ARGS go to both profiles (e.g.
# --gemm-bias: the cases with a bias). CARRY holds libsamebits.so and
# old/libsamebits.so. Logs in $OUT/gemm_epi.tgz, summary printed.
set -uo pipefail
C=$PWD/${CARRY:-.carry/epi}
FINAL_OUT=${OUT:-/tmp/out}
OUT=$(mktemp -d)
sum=()
trap 'tar czf "$FINAL_OUT/gemm_epi.tgz" -C "$OUT" . ; printf "%s\n" "${sum[@]}" | tee "$FINAL_OUT/summary.txt"' EXIT
PYENV=(env SAMEBITS_LIBRARY="$C/libsamebits.so" PYTHONPATH="$PWD/python")
OLDENV=(env SAMEBITS_LIBRARY="$C/old/libsamebits.so" PYTHONPATH="$PWD/python")
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$C/libsamebits.so" "$C/old/libsamebits.so" | tee "$OUT/lib_sha256.txt"

source bench/gemm_device_checks.sh
gemm_python_checks  # FULL=1: every CUDA test and verify; bench_dense's GEMM checks

for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$C/old/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/gemm_bits_$v.json" > "$OUT/gemm_bits_$v.log" 2>&1
done
python3 bench/gemm_bits_dump.py compare "$OUT/gemm_bits_old.json" "$OUT/gemm_bits_new.json" > "$OUT/gemm_bits_compare.log" 2>&1
sum+=("gemm bits vs old library rc=$? $(tail -1 "$OUT/gemm_bits_compare.log")")

MS=${MS:-128,192,256,512,1024,2048,4096,16384}
SHAPES=${SHAPES:-4096x4096,14336x4096,4096x14336}
mkdir -p "$OUT/new" "$OUT/old"
"${PYENV[@]}" timeout ${PROFILE_TIMEOUT:-200} python3 bench/profile_kernels.py --only gemm --reps 5 --out "$OUT/new" \
  --gemm-tiles "${TILES:-@direct,128x128,128x128@direct,192x128,192x128@direct}" --gemm-ms "$MS" \
  --gemm-shapes "$SHAPES" ${PROFILE_ARGS:-} > "$OUT/new/profile_gemm.log" 2>&1
sum+=("profile new rc=$?")
"${OLDENV[@]}" timeout ${PROFILE_TIMEOUT:-200} python3 bench/profile_kernels.py --only gemm --reps 5 --out "$OUT/old" \
  --gemm-tiles "${OLD_TILES:-128x128,192x128}" --gemm-ms "$MS" --gemm-shapes "$SHAPES" ${PROFILE_ARGS:-} > "$OUT/old/profile_gemm.log" 2>&1
sum+=("profile old rc=$?")
if [ -n "${EXTRA:-}" ]; then bash -c "$EXTRA" > "$OUT/extra.log" 2>&1; sum+=("extra rc=$?"); fi
