#!/usr/bin/env bash
# device: ncu of the GEMM at 512 x 4096 x 14336 (the default 128x128, 128x128m2 forced, cuBLAS's clustered
# 128x128): does shared-memory traffic bound the k tile? (main's library)
set -uo pipefail
C=$PWD/.carry/ncu13b
xz -d -k -f $C/libsamebits.so.xz
cp $0 $OUT/run.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
CARRY=.carry/ncu13b TILES=128x128m2 DRIVER_ARGS="--m 512 --n 4096 --k 14336" \
EXTRA_METRICS="lts__t_sectors_op_read.sum lts__t_requests_srcunit_tex_op_read.sum lts__t_sectors_srcunit_ltcfabric.sum lts__t_sectors_srcunit_tex.sum lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum lts__m_xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed lts__t_sectors_op_read_lookup_hit.sum l1tex__m_xbar2l1tex_read_sectors.sum lts__average_t_sector_hit_rate_srcunit_tex_op_read.pct" \
timeout 450 bash bench/gemm_v3_ncu.sh > $OUT/ncu.log 2>&1
echo "ncu rc=$?"
rm -f $OUT/*.ncu-rep.tmp
tail -60 $OUT/ncu.log
