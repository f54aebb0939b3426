#!/usr/bin/env bash
# device: ncu per-instruction stall samples of the decode split kernel at 1 x 1k (library .carry/last)
set -u
C=$PWD/.carry/last; O=$(mktemp -d)
xz -d -k -f $C/libsamebits.so.xz; chmod +x $C/test_attention_decode_sm90
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
LD_LIBRARY_PATH=$C timeout 200 "$NCU" --clock-control none --cache-control all -k regex:attention_decode_split -c 2 --warp-sampling-interval 0 \
  --section SourceCounters --section WarpStateStats -o $O/src -f $C/test_attention_decode_sm90 --bench --variants auto --max-tokens 1024 --reps 3 > $O/ncu.log 2>&1
echo "ncu rc=$?"; tail -3 $O/ncu.log
"$NCU" --import $O/src.ncu-rep --page source --csv --print-source sass > $O/source_sass.csv 2> $O/source_err.log
python3 - $O/source_sass.csv > $O/top_stalls.txt <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = [i for i, r in enumerate(rows) if r and ('Source' in r or '# Address' in r)]
num = lambda x: float(x.replace(',', '')) if x.replace(',', '').replace('.', '', 1).isdigit() else 0.0
h = hdr[0]; head = rows[h]; end = hdr[1] if len(hdr) > 1 else len(rows)
body = [r for r in rows[h + 1:end] if len(r) == len(head)]
c = head.index('Warp Stall Sampling (All Samples)'); src = head.index('Source'); addr = head.index('Address')
ex = head.index('Instructions Executed')
reasons = [i for i, x in enumerate(head) if x.startswith('stall_') and 'Not Issued' not in x]
tot = sum(num(r[c]) for r in body)
print(f"{len(body)} instructions, {tot:.0f} samples")
def why(r):
    v = sorted(((num(r[i]), head[i][6:]) for i in reasons), reverse=True)[:3]
    return ' '.join(f"{n}:{int(x)}" for x, n in v if x > 0)
for r in sorted(body, key=lambda r: -num(r[c]))[:40]:
    print(f"{num(r[c]):6.0f} {100*num(r[c])/max(tot,1):5.1f}% ex={r[ex]:>6} {r[addr][-5:]} {r[src][:60]:60s} {why(r)}")
print("== around each UTMALDG / LDGSTS group (producer), samples per line")
for k, r in enumerate(body):
    if 'UTMALDG' in r[src]:
        for q in body[max(0, k-40):k+8]:
            print(f"  {num(q[c]):5.0f} ex={q[ex]:>5} {q[addr][-5:]} {q[src][:70]} {why(q)}")
        print('  ----')
        break
PY
cat $O/top_stalls.txt
tar czf $OUT/ncu.tgz -C $O top_stalls.txt ncu.log source_err.log source_sass.csv
