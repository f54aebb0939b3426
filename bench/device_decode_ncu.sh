#!/usr/bin/env bash
# One device call: ncu of decode at large shapes, samebits's kernels beside
# SDPA cuDNN's and flash's (bench/decode_ncu_driver.py): duration, DRAM
# throughput and bytes, occupancy, issue and warp stall statistics of each
# kernel, caches flushed before each (ncu's default). CARRY: the library.
set -uo pipefail
CARRY=${CARRY:-.carry/final28c}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench
for sh in ${SHAPES:-64x4096 1x131072}; do
  timeout 200 ncu --profile-from-start off --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats \
    -o /tmp/dec_$sh -f python3 bench/decode_ncu_driver.py $sh > "$OUT/ncu_$sh.log" 2>&1
  echo "ncu $sh rc=$?" | tee -a "$OUT/summary.txt"
  ncu --import /tmp/dec_$sh.ncu-rep --page details --csv > "$OUT/details_$sh.csv" 2>&1
  python3 - "$OUT/details_$sh.csv" <<'PY' | tee -a "$OUT/summary.txt"
import csv, sys, collections
keep = ("Duration", "DRAM Throughput", "Memory Throughput", "Achieved Occupancy", "Registers Per Thread",
        "Grid Size", "Block Size", "Dynamic Shared Memory Per Block", "Issue Slots Busy", "Eligible Warps Per Scheduler",
        "Active Warps Per Scheduler", "No Eligible", "Warp Cycles Per Issued Instruction", "Mem Busy", "Max Bandwidth",
        "L2 Hit Rate", "Mem Pipes Busy", "Waves Per SM", "Theoretical Occupancy", "Elapsed Cycles", "SM Frequency",
        "DRAM Frequency")
rows = collections.OrderedDict()
for r in csv.DictReader(open(sys.argv[1], errors="replace")):
    k = (r.get("ID"), r.get("Kernel Name", "")[:70])
    if r.get("Metric Name") in keep:
        rows.setdefault(k, []).append(f"{r['Metric Name']}={r['Metric Value']}{r.get('Metric Unit', '')}")
for (i, name), v in rows.items():
    print(f"[{i}] {name}\n    " + "; ".join(v))
PY
done
