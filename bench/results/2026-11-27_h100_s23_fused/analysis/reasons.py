import csv, io, sys, collections
exec(open("/tmp/ncu1/an.py").read().split("fn = sys.argv[1]")[0])
dur = {"dkdv": 2.03, "fused63": 2.64, "fused0": 3.42}
res = {}
for name in sys.argv[1:]:
    head, data = load(f"{name}.source.csv"); H = {h: i for i, h in enumerate(head)}
    iall, iex = H["Warp Stall Sampling (All Samples)"], H["Instructions Executed"]
    st = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
    tot = sum(num(r[iall]) for r in data)
    scale = dur[name] / tot * 1e6  # ns of warp-time per sample... relative
    c = collections.Counter()
    for r in data:
        e = num(r[iex])
        if e < 500000: continue  # consumer per-tile code only
        for h in st: c[h[6:]] += num(r[H[h]]) * scale
    res[name] = c
keys = sorted(set().union(*[set(c) for c in res.values()]), key=lambda k: -max(c[k] for c in res.values()))
print("reason".ljust(18) + "".join(n.rjust(10) for n in res))
for k in keys[:14]:
    print(k.ljust(18) + "".join(f"{res[n][k]:10.0f}" for n in res))
print("total".ljust(18) + "".join(f"{sum(res[n].values()):10.0f}" for n in res))
