import re, sys, collections
exec(open("/tmp/ncu1/an.py").read().split("fn = sys.argv[1]")[0])
def idxloc(sass):
    out = []; loc = None
    for line in open(sass):
        m = re.search(r'//## File "([^"]+)", line (\d+)(.*)', line)
        if m:
            f = m.group(1).split("/")[-1]; loc = f"{f}:{m.group(2)}"
            im = re.findall(r'inlined at "([^"]+)", line (\d+)', m.group(3))
            if im: loc += " <" + " <".join(x[0].split("/")[-1] + ":" + x[1] for x in im[:2])
            continue
        if re.match(r'\s+/\*[0-9a-f]{4,}\*/', line): out.append(loc)
    return out
res = {}
for name, sass in [("dkdv", "/tmp/fz/dkdv_f1.sass"), ("fused63", "/tmp/fz/raw_orig.sass")]:
    locs = idxloc(sass)
    head, data = load(f"{name}.source.csv"); H = {h: i for i, h in enumerate(head)}
    iex = H["Instructions Executed"]
    c = collections.Counter()
    for k, r in enumerate(data):
        e = num(r[iex])
        if e >= 500000:
            key = re.sub(r" <.*", "", locs[k] or "?") if "primitives" not in (locs[k] or "") and "wgmma" not in (locs[k] or "") else (locs[k] or "?")
            c[(locs[k] or "?").split(" <")[0]] += e / 131072 / 8
    res[name] = c
keys = sorted(set(res["dkdv"]) | set(res["fused63"]), key=lambda k: -abs(res["fused63"][k] - res["dkdv"][k]))
for k in keys[:20]: print(f"{k:40s} dkdv {res['dkdv'][k]:7.1f} fused63 {res['fused63'][k]:7.1f}")
