#!/usr/bin/env bash
# Kernel times (L2 flushed, graph replay) of the default GEMM entry under
# several scheduler groups (SAMEBITS_GEMM_GROUP_M, BITS-FREE), beside cuBLAS,
# and the group's bits against the default's (bench_dense --gemm-only under
# one of them). CARRY holds libsamebits.so. Writes $OUT/g<G>/profile_kernels.json.
set -uo pipefail
C=$PWD/${CARRY:-.carry/epi}
for g in ${GROUPS_M:-4 8 16 32}; do
  mkdir -p "$OUT/g$g"
  SAMEBITS_GEMM_GROUP_M=$g SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 200 python3 \
    bench/profile_kernels.py --only gemm --reps 5 --out "$OUT/g$g" --gemm-tiles "${TILES:-}" \
    --gemm-ms "${MS:-2048,4096,16384}" --gemm-shapes "${SHAPES:-4096x4096,14336x4096,4096x14336}" \
    > "$OUT/g$g/log" 2>&1
  echo "group $g rc=$?"
done
