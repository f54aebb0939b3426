#!/usr/bin/env bash
# ncu per-instruction stall sampling (SourceCounters + WarpStateStats) of the
# GEMM kernels that bench/gemm_v3_ncu_driver.py launches (the default entry and
# TILES forced; DRIVER_ARGS picks the shape), and the top SASS lines by
# samples for each kernel. CARRY holds libsamebits.so (build it with
# -lineinfo for source lines). Writes $OUT/ncu_source.tgz.
set -u
C=$PWD/${CARRY:-.carry/epi}; O=$(mktemp -d)
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout ${NCU_TIMEOUT:-300} "$NCU" --clock-control none \
  --cache-control all -k regex:gemm_tma_wgmma_kernel -c ${COUNT:-2} --section SourceCounters \
  --section WarpStateStats --import-source yes -o $O/src -f python bench/gemm_v3_ncu_driver.py \
  --tiles "${TILES:-}" ${DRIVER_ARGS:-} > $O/ncu.log 2>&1
echo "ncu rc=$?"; tail -3 $O/ncu.log
"$NCU" --import $O/src.ncu-rep --page source --csv --print-source sass > $O/source_sass.csv 2> $O/source_err.log
python3 - $O/source_sass.csv > $O/top_stalls.txt <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = [i for i, r in enumerate(rows) if r and ('Source' in r or '# Address' in r)]
num = lambda x: float(x.replace(',', '')) if x.replace(',', '').replace('.', '', 1).isdigit() else 0.0
for k, h in enumerate(hdr):
    head, end = rows[h], (hdr[k + 1] if k + 1 < len(hdr) else len(rows))
    body = [r for r in rows[h + 1:end] if len(r) == len(head)]
    cols = [i for i, c in enumerate(head) if 'Sampling' in c and 'All' in c] or \
           [i for i, c in enumerate(head) if 'Sampl' in c]
    if not cols:
        continue
    c, src = cols[0], (head.index('Source') if 'Source' in head else 1)
    tot = sum(num(r[c]) for r in body)
    print(f"== kernel {k}: {len(body)} instructions, {tot:.0f} samples ({head[c]})")
    for r in sorted(body, key=lambda r: -num(r[c]))[:30]:
        print(f"  {num(r[c]):7.0f} {100 * num(r[c]) / max(tot, 1):5.1f}%  {r[src][:100]}")
PY
head -70 $O/top_stalls.txt
tar czf $OUT/ncu_source.tgz -C $O top_stalls.txt ncu.log source_err.log
