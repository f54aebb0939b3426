#!/usr/bin/env bash
# ncu of the RMSNorm backward kernels (dx alone; dx + dw fused, its fold) at
# M = 4096 and 16384, N = 4096 bf16 (the fused kernel on both grids): throughput, warp states, and stall
# sampling per SASS instruction of the fused kernel. Writes $OUT/ncu_summary.txt.
# usage: CARRY=.carry/dwf bash bench/rows_dw_ncu.sh
set -uo pipefail
source bench/device_common.sh
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
R=/tmp/rows_dw
timeout 400 "$NCU" --clock-control none --cache-control all -k 'regex:rmsnorm_(bwd|dw)' \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section Occupancy --section LaunchStats --section SourceCounters \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,sm__cycles_active.avg \
  -o $R -f \
  python3 bench/rows_dw_ncu_driver.py > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"
"$NCU" --import $R.ncu-rep --page details --csv > /tmp/details.csv 2>&1
xz -c /tmp/details.csv > "$OUT/details.csv.xz"
"$NCU" --import $R.ncu-rep --page source --csv --print-source sass > /tmp/source.csv 2>/dev/null
python3 - /tmp/details.csv /tmp/source.csv "$OUT/ncu_summary.txt" <<'PY'
import csv, io, sys
det, src, out = sys.argv[1:4]
keep = ("Duration", "DRAM Throughput", "Memory Throughput", "L2 Hit Rate", "L1/TEX Hit Rate", "Compute (SM) Throughput",
        "Issued Warp Per Scheduler", "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
        "Warp Cycles Per Issued Instruction", "Achieved Occupancy", "Registers Per Thread", "Grid Size",
        "Stall", "Mem Busy", "Max Bandwidth", "Executed Ipc Active", "dram__bytes", "lts__t_sectors",
        "sm__cycles_active")
with open(out, "w") as f:
    rows = list(csv.reader(open(det, errors="replace")))
    head = rows[0] if rows else []
    last = None
    for r in rows[1:]:
        if len(r) < 15: continue
        kid = (r[0], r[4])
        if kid != last:
            f.write(f"\n== {r[0]} {r[4][:90]} grid {r[6] if len(r) > 6 else ''}\n"); last = kid
        if any(k in r[12] for k in keep):
            f.write(f"   {r[12]}: {r[14]} {r[13]}\n")
    text = open(src, errors="replace").read()
    tables, cur = [], []
    for line in text.splitlines():
        if line.startswith('"Address"') or line.startswith("Address"):
            if cur: tables.append(cur)
            cur = [line]
        elif cur: cur.append(line)
    if cur: tables.append(cur)
    f.write(f"\n{len(tables)} source tables\n")
    for ti, t in enumerate(tables):
        rr = list(csv.reader(io.StringIO("\n".join(t))))
        h = rr[0]
        def col(name):
            for i, x in enumerate(h):
                if x.strip() == name: return i
            for i, x in enumerate(h):
                if name in x: return i
        ia, isrc, iall = col("Address"), col("Source"), col("Warp Stall Sampling (All Samples)")
        if iall is None: continue
        num = lambda x: float(x.replace(",", "")) if x.replace(",", "").replace(".", "").isdigit() else 0.0
        data = rr[1:]
        tot = sum(num(r[iall]) for r in data if len(r) > iall)
        f.write(f"== table {ti}: {len(data)} instructions, {tot:.0f} samples\n")
        for r in sorted(data, key=lambda r: -num(r[iall]) if len(r) > iall else 0)[:25]:
            f.write(f"{num(r[iall]) / max(tot, 1) * 100:5.1f}%  {r[ia]}  {r[isrc][:100]}\n")
        reasons = [(i, x) for i, x in enumerate(h) if x.startswith("stall_") or ("Stall" in x and "Sampling" not in x)]
        for i, x in reasons:
            s = sum(num(r[i]) for r in data if len(r) > i)
            if s: f.write(f"   {x}: {s:.0f}\n")
PY
wc -l "$OUT/ncu_summary.txt"
