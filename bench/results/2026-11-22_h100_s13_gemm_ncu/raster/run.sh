#!/usr/bin/env bash
# device: does the tile raster change the L2 reads of the GEMM at 512 x 4096 x 14336? ncu of the default
# 128x128 and 128x128m2 (and cuBLAS) under SAMEBITS_GEMM_GROUP_M = 1, 2, 4 (main's library)
set -uo pipefail
C=$PWD/.carry/ncu13c
xz -d -k -f $C/libsamebits.so.xz
cp $0 $OUT/run.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
for g in 1 2 4; do
  mkdir -p $OUT/g$g
  SAMEBITS_GEMM_GROUP_M=$g CARRY=.carry/ncu13c OUT=$OUT/g$g TILES=128x128m2 DRIVER_ARGS="--m 512 --n 4096 --k 14336" \
  EXTRA_METRICS="lts__t_sectors_srcunit_tex_op_read.sum lts__t_sectors_srcunit_ltcfabric.sum lts__t_requests_srcunit_tex_op_read.sum" \
  timeout 150 bash bench/gemm_v3_ncu.sh > $OUT/g$g/ncu.log 2>&1
  echo "group_m=$g rc=$?"
  rm -f $OUT/g$g/*.ncu-rep
  grep -E "Kernel Name|gpu__time|hmma_cycles|srcunit_tex_op_read.sum|ltcfabric" $OUT/g$g/ncu.log | cut -c1-120
done
