#!/usr/bin/env bash
# ncu stall sampling per SASS instruction of the GEMM's 128x128 (default at
# 512 x 4096 x 14336) and 128x128m2 (forced) kernels: where their warps wait.
# Writes $OUT/summary.txt (the top instructions by samples of each kernel)
# and $OUT/warpstate.txt; the report stays on the device.
# usage: CARRY=.carry/gemmc bash bench/gemm_cluster_ncu_source.sh (TILES= forced entries,
# SHAPE="--m M --n N --k K": another shape)
set -uo pipefail
source bench/device_common.sh
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
"$NCU" --version | tail -1
R=/tmp/gemm_src
timeout 300 "$NCU" --clock-control none --cache-control all -k 'regex:gemm_tma_wgmma_kernel' \
  --section SourceCounters --section WarpStateStats -o $R -f \
  python3 bench/gemm_v3_ncu_driver.py --tiles ${TILES:-128x128m2} ${SHAPE:---m 512 --n 4096 --k 14336} > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"
"$NCU" --import $R.ncu-rep --page details --csv > /tmp/details.csv 2>&1
"$NCU" --import $R.ncu-rep --page source --csv --print-source sass > /tmp/source.csv 2>/tmp/source.err
echo "source export rc=$? $(wc -c < /tmp/source.csv) bytes"; head -c 400 /tmp/source.err
python3 - /tmp/source.csv /tmp/details.csv "$OUT" <<'PY'
import csv, sys, re, io
src, det, out = sys.argv[1:4]
text = open(src, errors="replace").read()
# the export holds one table per kernel, each starting with a header row
blocks = re.split(r'\n(?="?Kernel Name|"?Address)', text)
lines = []
with open(out + "/warpstate.txt", "w") as f:
    for r in csv.reader(open(det, errors="replace")):
        if len(r) > 12 and ("Stall" in r[12] or "Warp Cycles" in r[12] or "Duration" in r[12]):
            f.write(" | ".join(r[i] for i in (4, 12, 13, 14) if i < len(r)) + "\n")
tables = []
cur = []
for line in text.splitlines():
    if line.startswith('"Address"') or line.startswith("Address"):
        if cur: tables.append(cur)
        cur = [line]
    elif cur:
        cur.append(line)
if cur: tables.append(cur)
with open(out + "/summary.txt", "w") as f:
    f.write(f"{len(tables)} source tables\n")
    for ti, t in enumerate(tables):
        rows = list(csv.reader(io.StringIO("\n".join(t))))
        head = rows[0]
        f.write(f"== table {ti}: {len(rows) - 1} instructions; columns: {head}\n")
        def col(name):
            for i, h in enumerate(head):
                if h.strip() == name: return i
            for i, h in enumerate(head):
                if name in h: return i
            return None
        ia, isrc = col("Address"), col("Source")
        iall = col("Warp Stall Sampling (All Samples)")
        inot = col("Warp Stall Sampling (Not-issued Samples)")
        if iall is None:
            f.write("no sampling column\n"); continue
        def num(x):
            try: return float(x.replace(",", ""))
            except Exception: return 0.0
        data = rows[1:]
        tot = sum(num(r[iall]) for r in data if len(r) > iall)
        f.write(f"total samples {tot}\n")
        top = sorted(data, key=lambda r: -num(r[iall]) if len(r) > iall else 0)[:45]
        for r in top:
            f.write(f"{num(r[iall]) / max(tot, 1) * 100:5.1f}%  {r[ia] if ia is not None else ''}  {r[isrc][:90] if isrc is not None else ''}\n")
        # stall reason columns summed
        reasons = [(i, h) for i, h in enumerate(head) if h.startswith("stall_") or "Stall" in h and "Sampling" not in h]
        for i, h in reasons[:40]:
            s = sum(num(r[i]) for r in data if len(r) > i)
            if s: f.write(f"   {h}: {s:.0f}\n")
        # samples by 16 KiB of code (where in the kernel the warps wait)
        buckets = {}
        for r in data:
            try: a = int(r[ia], 16)
            except Exception: continue
            buckets[a >> 14] = buckets.get(a >> 14, 0) + num(r[iall])
        f.write("samples by 16 KiB of code: " + " ".join(f"{k * 16}K:{v:.0f}" for k, v in sorted(buckets.items()) if v) + "\n")
PY
cat "$OUT/summary.txt" | head -150
