#!/usr/bin/env bash
# One device call: ncu's speed-of-light and memory-workload sections for the
# GEMM's default pick and cuBLAS (F.linear) at issue 6's low points: is the
# L2 -> SM path the limit? Prints, per kernel, the duration and the L2,
# DRAM, L1 and SM throughputs (% of peak) and the L2 hit rate; since call 10
# of the thirtieth session also the launch (grid, block, cluster size:
# whether cuBLAS runs one tile a CTA at these shapes).
# usage: CARRY=.carry/rev29 bash bench/gemm_l2_ncu.sh (SHAPES="384x4096x4096 ...")
set -uo pipefail
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
"$NCU" --version | tail -1
for sh in ${SHAPES:-384x4096x4096 1280x4096x4096 4096x4096x4096}; do
  IFS=x read -r M N K <<< "$sh"
  R=/tmp/gemm_l2_$sh
  timeout 200 "$NCU" --clock-control none --cache-control all -k 'regex:gemm_tma_wgmma_kernel|nvjet' \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats -o $R -f \
    python3 bench/gemm_v3_ncu_driver.py --tiles "" --m $M --n $N --k $K > "$OUT/ncu_$sh.log" 2>&1
  echo "== $sh ncu rc=$?"
  "$NCU" --import $R.ncu-rep --page details --csv > "$OUT/details_$sh.csv" 2>&1
  python3 - "$OUT/details_$sh.csv" <<'PY'
import csv, sys
want = ("Grid Size", "Block Size", "Cluster Size", "Registers Per Thread", "Duration", "Memory Throughput", "DRAM Throughput", "L1/TEX Cache Throughput", "L2 Cache Throughput",
        "Compute (SM) Throughput", "L2 Hit Rate", "Mem Busy", "Max Bandwidth", "Mem Pipes Busy")
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = rows[0] if rows else []
ki = hdr.index("Kernel Name") if "Kernel Name" in hdr else 4
mi = hdr.index("Metric Name") if "Metric Name" in hdr else 12
vi = hdr.index("Metric Value") if "Metric Value" in hdr else 14
ui = hdr.index("Metric Unit") if "Metric Unit" in hdr else 13
for r in rows[1:]:
    if len(r) > vi and r[mi] in want:
        print(f"{r[ki][:60]:60s} {r[mi]:26s} {r[vi]:>10s} {r[ui]}")
PY
done
