#!/usr/bin/env bash
# device: ncu of the GEMM at 512 x 4096 x 14336 (the default 128x128, 128x128m2 forced, cuBLAS's clustered
# 128x128): does shared-memory traffic bound the k tile? (main's library)
set -uo pipefail
C=$PWD/.carry/ncu13
xz -d -k -f $C/libsamebits.so.xz
cp $0 $OUT/run.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
CARRY=.carry/ncu13 TILES=128x128m2 DRIVER_ARGS="--m 512 --n 4096 --k 14336" \
EXTRA_METRICS="l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed l1tex__data_bank_reads.sum l1tex__data_bank_writes.sum l1tex__throughput.avg.pct_of_peak_sustained_active l1tex__data_pipe_lsu_wavefronts_mem_shared.sum smsp__inst_executed_pipe_uniform.sum sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active l1tex__m_l1tex2xbar_write_bytes.sum lts__t_sectors_srcunit_tex_op_read.sum" \
timeout 450 bash bench/gemm_v3_ncu.sh > $OUT/ncu.log 2>&1
echo "ncu rc=$?"
rm -f $OUT/*.ncu-rep.tmp
tail -60 $OUT/ncu.log
