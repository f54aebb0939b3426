import csv, io, sys
exec(open("/tmp/ncu1/an.py").read().split("fn = sys.argv[1]")[0])
fn = sys.argv[1]; n = int(sys.argv[2])
head, data = load(fn); H = {h: i for i, h in enumerate(head)}
iall, iex, isrc = H["Warp Stall Sampling (All Samples)"], H["Instructions Executed"], H["Source"]
st = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
tot = sum(num(r[iall]) for r in data)
top = sorted(range(len(data)), key=lambda k: -num(data[k][iall]))[:n]
for k in sorted(top):
    r = data[k]
    reasons = sorted(((num(r[H[h]]), h[6:]) for h in st), reverse=True)[:2]
    print(f"{k:5d} ex {num(r[iex]):9.0f} {100*num(r[iall])/tot:5.2f}% {reasons[0][1]}:{100*reasons[0][0]/tot:.2f} {reasons[1][1]}:{100*reasons[1][0]/tot:.2f}  {r[isrc][:70]}")
