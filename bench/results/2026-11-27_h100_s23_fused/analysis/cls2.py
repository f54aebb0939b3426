import csv, io, sys, collections
exec(open("/tmp/ncu1/an.py").read().split("fn = sys.argv[1]")[0])
dur = {"dkdv": 2.03, "fused63": 2.64, "fused0": 3.42}
for name in sys.argv[1:]:
    head, data = load(f"{name}.source.csv"); H = {h: i for i, h in enumerate(head)}
    iall, iex, isrc = H["Warp Stall Sampling (All Samples)"], H["Instructions Executed"], H["Source"]
    tot = sum(num(r[iall]) for r in data)
    sc = dur[name] / tot * 1e6
    c = collections.defaultdict(float)
    for k, r in enumerate(data):
        c[num(r[iex])] += num(r[iall]) * sc
    print(name, " ".join(f"{int(e)}:{v:.0f}" for e, v in sorted(c.items(), key=lambda x: -x[1])[:8]), "total", f"{sum(c.values()):.0f}")
