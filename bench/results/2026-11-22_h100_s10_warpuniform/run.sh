#!/usr/bin/env bash
# device: decode's hand-load loop with a uniform trip count (no collective shuffles; half the code)
set -uo pipefail
sum=()
N=$PWD/.carry/wu; F=$PWD/.carry/md
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
for d in $N $F; do xz -d -k -f $d/libsamebits.so.xz; done; chmod +x $N/test_attention_decode_sm90
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
export LD_LIBRARY_PATH=$N
T=$N/test_attention_decode_sm90
timeout 90 $T > $R/decode_default.log 2>&1; sum+=("decode default rc=$? $(count $R/decode_default.log)")
SAMEBITS_DECODE_VARIANT=4 timeout 90 $T > $R/decode_v4.log 2>&1; sum+=("decode v4 rc=$? $(count $R/decode_v4.log)")
SAMEBITS_DECODE_MMA=0 timeout 60 $T --quick > $R/decode_nomma.log 2>&1; sum+=("decode mma0 quick rc=$? $(count $R/decode_nomma.log)")
timeout 100 compute-sanitizer --tool racecheck $T --small > $R/decode_race.log 2>&1; sum+=("decode racecheck rc=$? $(grep 'RACECHECK SUMMARY' $R/decode_race.log)")
timeout 80 compute-sanitizer --tool memcheck $T --small > $R/decode_mem.log 2>&1; sum+=("decode memcheck rc=$? $(grep 'ERROR SUMMARY' $R/decode_mem.log)")
for r in 1 2; do for s in 0 1; do for v in wu md; do
  LD_LIBRARY_PATH=$PWD/.carry/$v timeout 60 $T --bench --graph --variants auto --reps 15 --max-tokens 262144 --short $s > $R/cb_${v}_s${s}_r$r.md 2>&1
done; done; done
for v in wu md; do for s in 1; do
  SAMEBITS_LIBRARY=$PWD/.carry/$v/libsamebits.so PYTHONPATH=$PWD/python timeout 120 python3 bench/bench_decode.py --graph --reps 15 --no-flex --short $s --out $R/$v > $R/peers_${v}_s$s.log 2>&1; sum+=("bench_decode $v short$s rc=$?")
  SAMEBITS_LIBRARY=$PWD/.carry/$v/libsamebits.so PYTHONPATH=$PWD/python timeout 120 python3 bench/bench_decode.py --graph --reps 15 --no-flex --out $R/$v > $R/peers_${v}_s0.log 2>&1; sum+=("bench_decode $v short0 rc=$?")
done; done
SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python timeout 120 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache or cache" > $R/pytest.log 2>&1; sum+=("pytest decode rc=$? $(tail -1 $R/pytest.log)")
printf '%s\n' "${sum[@]}"
cd $R && python3 - <<'PY'
import glob, re, collections
t = collections.defaultdict(dict)
for f in sorted(glob.glob('cb_*.md')):
    _, v, s, r = f[:-3].split('_')
    for line in open(f):
        m = re.match(r'\| (\d+) \| (\d+) \| ([\d.]+) \|', line)
        if m: t[(s, int(m.group(1)), int(m.group(2)))][f'{v}_{r}'] = float(m.group(3))
cols = [f'{v}_{r}' for r in ('r1', 'r2') for v in ('md', 'wu')]
print('C bench us: short B ctx ' + ' '.join(cols))
for k in sorted(t): print(*k, *[t[k].get(c, '-') for c in cols])
PY
python3 - $R <<'PY'
import json, sys, os
R = sys.argv[1]
for s in ('_short1', ''):
    rows = {v: json.load(open(os.path.join(R, v, f'bench_decode_graph{s}.json'))) for v in ('md', 'wu')}
    print('== keys = context' + (' - 1' if s else ''), ': B ctx | samebits GB/s md wu | cudnn flash')
    for a, b in zip(rows['md'], rows['wu']):
        print(a['batch'], a['context'], '|', round(a['samebits_gbs']), round(b['samebits_gbs']), '|',
              round(b.get('cudnn_gbs', 0)), round(b.get('flash_gbs', 0)))
PY
