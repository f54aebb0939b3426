#!/usr/bin/env bash
# ncu of bench/cutlass_probe/ncu_driver.py's launches (one each), caches
# flushed, clocks not locked: duration, tensor pipe, L2 / DRAM counters,
# warp stall reasons. Writes $OUT/ncu_summary.txt and ncu.ncu-rep.
set -uo pipefail
C=$PWD/${CARRY:-.carry/cutl}
OUT=${OUT:-/tmp/out}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
M="gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__cluster_dim_x,launch__cluster_dim_y,smsp__inst_executed.sum,sm__cycles_active.avg,lts__t_sectors_srcunit_ltcfabric.sum,l1tex__m_xbar2l1tex_read_bytes.sum"
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 300 "$NCU" --clock-control none --cache-control all \
  -k 'regex:gemm_tma_wgmma_kernel|nvjet|sm90_xmma|cutlass|device_kernel' --metrics "$M" \
  --section WarpStateStats -o "$OUT/ncu" -f python3 bench/cutlass_probe/ncu_driver.py --lib "$C/libsbcutlass.so" ${DARGS:-} > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"
"$NCU" --import "$OUT/ncu.ncu-rep" --page raw --csv > "$OUT/ncu_raw.csv" 2>/dev/null
python3 - "$OUT/ncu_raw.csv" > "$OUT/ncu_summary.txt" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head, data = rows[0], rows[2:]
keep = [i for i, h in enumerate(head) if h == "Kernel Name" or h.startswith(("gpu__", "sm__pipe", "lts__", "dram__", "launch__", "smsp__inst", "sm__cycles", "l1tex__", "smsp__average_warps_issue_stalled", "smsp__average_warp_latency_issue_stalled"))]
for r in data:
    print("----")
    for i in keep:
        v = r[i]
        if head[i].startswith("smsp__average_warp") and v in ("0", "0.00"):
            continue
        print(f"  {head[i][:80]:80s} {v[:90]}")
PY
cat "$OUT/ncu_summary.txt" | grep -v "^  smsp__average_warp" | head -150
grep -A0 "issue_stalled" "$OUT/ncu_summary.txt" | awk '$2+0 > 0.3' | head -80
