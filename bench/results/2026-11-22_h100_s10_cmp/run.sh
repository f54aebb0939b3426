#!/usr/bin/env bash
set -uo pipefail
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R .' EXIT
T=$PWD/.carry/t2/test_attention_decode_sm90; chmod +x $T
for v in dmma4 tail t2 vA vB; do d=$PWD/.carry/$v; [ -f $d/libsamebits.so ] || xz -d -k $d/libsamebits.so.xz; done
for r in 1 2; do for s in 0 1; do for v in dmma4 tail t2 vA vB; do
  LD_LIBRARY_PATH=$PWD/.carry/$v timeout 40 $T --bench --graph --variants auto --reps 15 --max-tokens 65536 --short $s > $R/cb_${v}_s${s}_r$r.md 2>&1
done; done; done
cd $R && python3 - <<'PY'
import glob, re, collections
t = collections.defaultdict(dict)
for f in sorted(glob.glob('cb_*.md')):
    _, v, s, r = f[:-3].split('_')
    for line in open(f):
        m = re.match(r'\| (\d+) \| (\d+) \| ([\d.]+) \|', line)
        if m: t[(s, int(m.group(1)), int(m.group(2)))][f'{v}_{r}'] = float(m.group(3))
cols = [f'{v}_{r}' for r in ('r1', 'r2') for v in ('dmma4', 'tail', 't2', 'vA', 'vB')]
print('short B ctx ' + ' '.join(cols))
for k in sorted(t): print(*k, *[t[k].get(c, '-') for c in cols])
PY
