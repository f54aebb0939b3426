import csv, io, sys, collections
def load(fn):
    lines = open(fn, errors="replace").read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"Address"'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    head = rows[0]
    return head, rows[1:]
def num(x):
    try: return float(x.replace(",", ""))
    except Exception: return 0.0
fn = sys.argv[1]
head, data = load(fn)
H = {h: i for i, h in enumerate(head)}
ia, isrc, iall, iex = H["Address"], H["Source"], H["Warp Stall Sampling (All Samples)"], H["Instructions Executed"]
tot = sum(num(r[iall]) for r in data); totex = sum(num(r[iex]) for r in data)
print(fn, "instructions", len(data), "samples", tot, "executed", totex)
# stall reasons total
st = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
tots = {h: sum(num(r[H[h]]) for r in data) for h in st}
print(" ".join(f"{k[6:]}={100*v/tot:.1f}%" for k, v in sorted(tots.items(), key=lambda x: -x[1])[:10]))
ld = [(num(r[iex]), num(r[iall]), k, r[ia], r[isrc]) for k, r in enumerate(data) if ("LDL" in r[isrc] or "STL" in r[isrc])]
print("local ops executed", sum(x[0] for x in ld), "samples", sum(x[1] for x in ld))
for x in sorted(ld, reverse=True)[:int(sys.argv[2]) if len(sys.argv) > 2 else 20]:
    print(f"  idx {x[2]:5d} {x[3]:>6} ex {x[0]:10.0f} samp {x[1]:6.0f}  {x[4][:80]}")
