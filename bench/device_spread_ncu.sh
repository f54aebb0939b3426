#!/usr/bin/env bash
# ncu of the spread decode kernel (variant 8) at the C bench's shapes of at
# most 4096 tokens (1 x 1k, 1 x 2k, 1 x 4k, 4 x 1k; direct launches): why a
# grid of 32 clusters (1 x 4k, 4 x 1k) takes twice the time of 8 (1 x 1k).
# Prints, per profiled launch, the grid, the duration, DRAM and L2
# throughput, issue activity, occupancy and the warp-state breakdown.
# CARRY holds libsamebits.so.xz and test_attention_decode_sm90.
set -uo pipefail
C=$PWD/${CARRY:-.carry/fold}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x "$C/test_attention_decode_sm90"
export LD_LIBRARY_PATH=$C
R=/tmp/spread_ncu
timeout 240 ncu --cache-control all -k 'regex:spread' --launch-skip 0 --launch-count ${COUNT:-12} --set full \
  -o $R -f "$C/test_attention_decode_sm90" --bench --variants ${VARIANT:-8} --max-tokens 4096 --reps 1 > "$OUT/spread_ncu.log" 2>&1
echo "ncu rc=$?"
ncu --import $R.ncu-rep --page details --csv > "$OUT/spread_ncu_details.csv" 2>&1
python3 - "$OUT/spread_ncu_details.csv" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1], errors="replace")))
by = collections.OrderedDict()
for r in rows:
    by.setdefault(r["ID"], []).append(r)
want = ["Duration", "DRAM Throughput", "Memory Throughput", "L2 Cache Throughput", "Issue Slots Busy",
        "Issued Ipc Active", "Achieved Occupancy", "Achieved Active Warps Per SM", "Waves Per SM",
        "Block Limit Shared Mem", "Registers Per Thread", "Warp Cycles Per Issued Instruction",
        "Avg. Active Threads Per Warp", "L2 Hit Rate", "Mem Busy", "Max Bandwidth", "DRAM Bandwidth"]
for i, rs in by.items():
    g = rs[0].get("Grid Size", "")
    vals = {r["Metric Name"]: (r["Metric Value"], r["Metric Unit"]) for r in rs}
    print(f"== launch {i} grid {g} cluster {vals.get('Cluster Size', ('', ''))[0]}")
    print("   " + "; ".join(f"{k} {vals[k][0]} {vals[k][1]}" for k in want if k in vals))
    stalls = sorted(((float(v[0].replace(',', '')), k) for k, v in vals.items()
                     if k.startswith("Stall") or "Warp Cycles" in k and "Stall" in k), reverse=True)[:6]
    if stalls:
        print("   stalls: " + "; ".join(f"{k} {v:.2f}" for v, k in stalls))
PY
ncu --import $R.ncu-rep --page raw --csv > /tmp/raw.csv 2>&1
python3 - /tmp/raw.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
head, data = rows[0], rows[2:]  # row 1: units
ig = head.index("Grid Size") if "Grid Size" in head else None
cols = [i for i, h in enumerate(head) if h.startswith("smsp__average_warps_issue_stalled_") and h.endswith("_per_issue_active.ratio")]
for r in data:
    def f(i):
        try: return float(r[i].replace(",", ""))
        except Exception: return 0.0
    top = sorted(((f(i), head[i][len("smsp__average_warps_issue_stalled_"):-len("_per_issue_active.ratio")]) for i in cols), reverse=True)[:7]
    print("grid", r[ig] if ig is not None else "?", "stalls per issue:", "; ".join(f"{k} {v:.2f}" for v, k in top))
PY
grep -E "^\| (1|4) \|" "$OUT/spread_ncu.log" | head
exit 0
