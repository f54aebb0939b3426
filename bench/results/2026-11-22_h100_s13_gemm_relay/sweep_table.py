# Table of a profile_kernels.py GEMM sweep: per (N, K, M), cuBLAS, the default, and each forced entry (us);
# optional second json (main's library) adds its default and forced entries with a suffix "@old".
import json, re, collections, sys
def load(f, tag=''):
    d = json.load(open(f)); t = collections.defaultdict(dict)
    for r in d['rows']:
        m = re.match(r'gemm (\d+)x(\d+)x(\d+) (\S+)', r['case'])
        if not m or 'span_us' not in r: continue
        M, N, K, who = m.groups()
        who = who.replace('samebits[', '').replace(']', '')
        if who != 'cublas': who += tag
        t[(int(N), int(K), int(M))][who] = r['span_us']
    return t
new = load(sys.argv[1])
if len(sys.argv) > 2:
    for k, v in load(sys.argv[2], '@old').items(): new[k].update(v)
cols = sorted({c for v in new.values() for c in v} - {'cublas', 'samebits'})
print('N K M | cublas default | best entry | cb/default cb/best | ' + ' '.join(cols))
for k in sorted(new):
    v = new[k]; cb = v['cublas']; d = v['samebits']
    best = min((x for x in cols if '@old' not in x), key=lambda x: v.get(x, 1e9))
    print(k, f"| {cb:.1f} {d:.1f} | {best} {v[best]:.1f} | {cb/d:.2f} {cb/v[best]:.2f} |", ' '.join(f"{c}={v.get(c,0):.1f}" for c in cols))
