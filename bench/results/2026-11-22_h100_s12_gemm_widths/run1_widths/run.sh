#!/usr/bin/env bash
# device: GEMM widths 128x160 / 128x224 staged (branch gemm-widths): bits, then a width sweep
set -uo pipefail
sum=()
N=$PWD/.carry/gw
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz
export SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/gpu.txt
timeout 150 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "gemm" > $R/pytest.log 2>&1; sum+=("pytest gemm rc=$? $(tail -1 $R/pytest.log)")
mkdir -p $R/sweep
timeout 400 python3 bench/profile_kernels.py --only gemm --reps 5 --out $R/sweep --gemm-tiles "${TILES:-128x256,128x224,128x192,128x160,128x128}" --gemm-ms "${MS:-192,256,384,512,640,768,896,1024,1152,1280,1536,1792,2048}" --gemm-shapes "${SH:-4096x4096,14336x4096,4096x14336}" > $R/sweep/log 2>&1
sum+=("sweep rc=$?")
printf '%s\n' "${sum[@]}"
