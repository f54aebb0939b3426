#!/usr/bin/env bash
# ncu stall sampling per SASS instruction of the spread decode kernel
# (variant 8) at batch 1 x 1k (the C bench's first shape; MAXTOK and SKIP
# pick another launch: the C bench runs 1 x 1k, 2k, 4k, ... up to MAXTOK
# tokens, five launches a shape with --reps 3): where a CTA's ~10 us go. Prints the top instructions by samples and the warp-state
# breakdown. CARRY holds libsamebits.so.xz and test_attention_decode_sm90.
set -uo pipefail
C=$PWD/${CARRY:-.carry/fold}
OUT=${OUT:-/tmp/out}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x "$C/test_attention_decode_sm90"
export LD_LIBRARY_PATH=$C
R=/tmp/spread_src
timeout 200 ncu --cache-control all -k 'regex:spread' --launch-skip ${SKIP:-2} --launch-count 1 \
  --warp-sampling-interval 0 --section SourceCounters --section WarpStateStats -o $R -f \
  "$C/test_attention_decode_sm90" --bench --variants ${VARIANT:-8} --max-tokens ${MAXTOK:-1024} --reps 3 > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"
ncu --import $R.ncu-rep --page details --csv > /tmp/details.csv 2>&1
ncu --import $R.ncu-rep --page source --csv --print-source sass > /tmp/source.csv 2>/dev/null
python3 - /tmp/source.csv /tmp/details.csv <<'PY'
import csv, sys, io
src, det = sys.argv[1:3]
for r in csv.DictReader(open(det, errors="replace")):
    n = r.get("Metric Name", "")
    if "Stall" in n or "Warp Cycles" in n or n == "Duration":
        print("  ", n, r.get("Metric Value"), r.get("Metric Unit"))
lines = open(src, errors="replace").read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"Address"') or l.startswith("Address"))
rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
head = rows[0]
def col(name):
    return next((i for i, h in enumerate(head) if h.strip() == name), next((i for i, h in enumerate(head) if name in h), None))
ia, isrc, iall = col("Address"), col("Source"), col("Warp Stall Sampling (All Samples)")
def num(x):
    try: return float(x.replace(",", ""))
    except Exception: return 0.0
data = rows[1:]
tot = sum(num(r[iall]) for r in data)
print("total samples", tot, "instructions", len(data))
# running share in program order (phase view) and the top 45
acc = 0
marks = []
for k, r in enumerate(data):
    acc += num(r[iall])
    marks.append(acc)
top = sorted(range(len(data)), key=lambda k: -num(data[k][iall]))[:45]
for k in sorted(top):
    r = data[k]
    print(f"{k:5d} {r[ia]:>6} {num(r[iall]):7.0f} {100*num(r[iall])/max(tot,1):5.1f}% cum {100*marks[k]/max(tot,1):5.1f}%  {r[isrc][:90]}")
PY
