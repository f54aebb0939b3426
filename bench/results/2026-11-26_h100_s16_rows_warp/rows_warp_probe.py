"""The row ops' warp-row kernels against the CTA register kernels
(SAMEBITS_ROWS_WARP=0, read when a call is launched, so each CUDA graph
captures one form), in one process: bits (bit patterns equal) and speed
(CUDA-graph replay of 10 calls, median of the rounds, as bench_dense.py),
beside a device copy of the same bytes.

    SAMEBITS_LIBRARY=lib.so PYTHONPATH=python:bench python bench/rows_warp_probe.py --out probe.json
"""
import argparse
import json
import os

import torch
from bench_dense import timeit_graph
from samebits import dense as D

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--rounds", type=int, default=3, help="measurement rounds, the two forms alternating")
ap.add_argument("--ms", default="1024,2048,4096,8192,16384")
ap.add_argument("--ns", default="1024,2048,4096")
args = ap.parse_args()


def bits(t):
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])


FORMS = {"cta": "0", "warp": "1"}
rows, fails = [], []
for dt in (torch.bfloat16, torch.float16):
    for n in map(int, args.ns.split(",")):
        for m in map(int, args.ms.split(",")):
            if dt == torch.float16 and n != 4096:
                continue
            g = torch.Generator(device="cuda").manual_seed(m + n)
            x = torch.randn(m, n, device="cuda", dtype=dt, generator=g)
            w = torch.randn(n, device="cuda", dtype=dt, generator=g)
            dst = torch.empty_like(x)
            ops = {"rms_norm": lambda: D.rms_norm(x, w, 1e-6), "softmax": lambda: D.softmax(x, -1),
                   "log_softmax": lambda: D.log_softmax(x, -1)}
            t_copy = []
            for name, fn in ops.items():
                outs = {}
                for f, v in FORMS.items():
                    os.environ["SAMEBITS_ROWS_WARP"] = v
                    outs[f] = fn()
                same = torch.equal(bits(outs["cta"]), bits(outs["warp"]))
                if not same:
                    fails.append((str(dt), name, m, n))
                t = {f: [] for f in FORMS}
                for _ in range(args.rounds):
                    for f, v in FORMS.items():
                        os.environ["SAMEBITS_ROWS_WARP"] = v
                        t[f].append(timeit_graph(fn))
                    t_copy.append(timeit_graph(lambda: dst.copy_(x)))
                med = {f: sorted(v)[len(v) // 2] for f, v in t.items()}
                c = sorted(t_copy)[len(t_copy) // 2]
                r = {"dtype": str(dt)[6:], "op": name, "M": m, "N": n, "same_bits": same,
                     "cta_us": med["cta"] * 1e3, "warp_us": med["warp"] * 1e3, "copy_us": c * 1e3,
                     "frac_copy_cta": c / med["cta"], "frac_copy_warp": c / med["warp"],
                     "speedup": med["cta"] / med["warp"]}
                rows.append(r)
                print(f"{r['dtype']:8s} {name:11s} M={m:6d} N={n:5d} same={same} cta {r['cta_us']:7.1f} us "
                      f"({r['frac_copy_cta']:.3f})  warp {r['warp_us']:7.1f} us ({r['frac_copy_warp']:.3f})  "
                      f"copy {r['copy_us']:7.1f}  speedup {r['speedup']:.3f}", flush=True)
            del x, dst
os.environ.pop("SAMEBITS_ROWS_WARP", None)
json.dump({"device": torch.cuda.get_device_name(), "rows": rows, "fails": fails}, open(args.out, "w"), indent=1)
print("FAILS:", fails)
