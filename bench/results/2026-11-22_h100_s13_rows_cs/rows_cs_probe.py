"""rms_norm forward (no residual), main's kernel against its cache-streaming
variants: SAMEBITS_RMSNORM_CS=1 loads x with ld.global.cs, 2 also stores y
with st.global.cs (--variant; read when a call is launched, so each CUDA
graph captures one variant), in one process: bits (torch.equal) and speed
(CUDA-graph replay of 10 calls, median of 7, as bench_dense.py), beside a
device copy of the same bytes and torch's rms_norm.

    SAMEBITS_LIBRARY=lib.so PYTHONPATH=python:bench python rows_cs_probe.py --variant 1 --out probe.json
"""
import argparse, json, os, sys
import torch
from bench_dense import timeit_graph
from samebits import dense as D

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--variant", default="1", help="SAMEBITS_RMSNORM_CS value set against 0")
ap.add_argument("--alternate", type=int, default=2, help="measurement rounds, variants alternating")
args = ap.parse_args()
V = args.variant
rows, fails = [], []
for dt in (torch.bfloat16, torch.float16):
    for n in (1024, 2048, 4096, 8192, 16384):
        for m in (1024, 2048, 4096, 8192, 16384):
            if dt == torch.float16 and n not in (4096,):
                continue
            g = torch.Generator(device="cuda").manual_seed(m + n)
            x = torch.randn(m, n, device="cuda", dtype=dt, generator=g)
            w = torch.randn(n, device="cuda", dtype=dt, generator=g)
            outs = {}
            for v in ("0", V):
                os.environ["SAMEBITS_RMSNORM_CS"] = v
                outs[v] = D.rms_norm(x, w, 1e-6)
            same = torch.equal(outs["0"], outs[V])
            # negative control: a changed row changes that row's output only
            x2 = x.clone(); x2[m // 2, 0] += 1.0
            os.environ["SAMEBITS_RMSNORM_CS"] = V
            o2 = D.rms_norm(x2, w, 1e-6)
            ctrl = (not torch.equal(o2[m // 2], outs[V][m // 2])) and torch.equal(o2[: m // 2], outs[V][: m // 2])
            if not (same and ctrl):
                fails.append((str(dt), m, n, same, ctrl))
            dst = torch.empty_like(x)
            t = {"0": [], V: [], "copy": [], "torch": []}
            for _ in range(args.alternate):
                for v in ("0", V):
                    os.environ["SAMEBITS_RMSNORM_CS"] = v
                    t[v].append(timeit_graph(lambda: D.rms_norm(x, w, 1e-6)))
                t["copy"].append(timeit_graph(lambda: dst.copy_(x)))
                t["torch"].append(timeit_graph(lambda: torch.nn.functional.rms_norm(x, (n,), w, 1e-6)))
            med = {k: sorted(v)[len(v) // 2] for k, v in t.items()}
            r = {"dtype": str(dt), "M": m, "N": n, "same_bits": same, "control": ctrl,
                 **{f"{k}_us": med[k] * 1e3 for k in med},
                 "frac_copy_main": med["copy"] / med["0"], "frac_copy_wpf": med["copy"] / med[V],
                 "wpf_speedup": med["0"] / med[V], "variant": V}
            rows.append(r)
            print(f"{r['dtype']:15s} M={m:6d} N={n:6d} same={same} ctrl={ctrl} main {r['0_us']:7.1f} us ({r['frac_copy_main']:.3f})"
                  f"  wpf {r[V + '_us']:7.1f} us ({r['frac_copy_wpf']:.3f})  copy {r['copy_us']:7.1f}  torch {r['torch_us']:7.1f}"
                  f"  speedup {r['wpf_speedup']:.3f}", flush=True)
json.dump({"device": torch.cuda.get_device_name(), "rows": rows, "fails": fails}, open(args.out, "w"), indent=1)
print("FAILS:", fails)
