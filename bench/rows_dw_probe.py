"""RMSNorm backward with dw (bf16, N = 4096 or --ns) timed two ways, beside a
copy of x and the dx-only backward, for each dw launch the library has:

- clean: one CUDA-graph replay of one call after an L2 flush that leaves
  clean lines (a 256 MiB write, then a 256 MiB read), median of --reps;
- b2b: a CUDA graph of 10 calls back to back, as bench_dense.py times the
  row ops (the previous call's output stays dirty in L2), median of 7;
- after (--after): a CUDA graph of 10 pairs, a copy of two other tensors
  of x's size (another kernel's reads and dirty writes, as in a model) then
  the call, median of 7; the call's time is the pair's minus half of a
  pair of two such copies.

frac = (3 x bytes(x) / t) / (2 x bytes(x) / t_copy), the issue's measure
(bench_dense.py's rms_norm_bwd_dw row), with the copy timed the same way.
Launches: default, SAMEBITS_RMSNORM_DW_FOLD=kernel, SAMEBITS_RMSNORM_DW_PATH=split
(read when each graph is captured). Every dw launch's (dx, dw) is checked
bitwise against the default's.

usage: SAMEBITS_LIBRARY=... PYTHONPATH=python:bench python bench/rows_dw_probe.py --out FILE.json [--ms 4096,16384]
"""
import argparse
import json
import statistics

import torch

from bench_util import Flush, forced_env, graphed
from samebits import dense as D

LAUNCHES = {"default": {}, "fold_kernel": {"SAMEBITS_RMSNORM_DW_FOLD": "kernel"},
            "split": {"SAMEBITS_RMSNORM_DW_PATH": "split"}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--ms", default="4096,8192,16384,32768")
    ap.add_argument("--ns", default="4096", help="columns, comma-separated")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--extra", default="",
                    help="more dw launches, NAME:VAR=VALUE[+VAR=VALUE],...: each timed beside the others and checked "
                         "bitwise against the default, except names starting with 'diag' (measurement knobs that "
                         "drop work)")
    ap.add_argument("--after", action="store_true", help="also time each call after another kernel (mode 'after')")
    ap.add_argument("--lead", action="store_true",
                    help="capture and time a copy of the first call (the copy) ahead of the others, under the name "
                         "'lead'. The copy then follows a call of its own kernel (faster: "
                         "bench/predecessor_probe.py), the other calls follow other kernels, as without --lead")
    args = ap.parse_args()
    flush = Flush("read")
    launches = dict(LAUNCHES)
    for item in filter(None, args.extra.split(",")):
        name, _, env = item.partition(":")
        launches[name] = dict(kv.split("=", 1) for kv in env.split("+") if kv)
    rows, fails = [], []
    shapes = [(int(m), int(n)) for n in args.ns.split(",") for m in args.ms.split(",")]
    for M, N in shapes:
        g = torch.Generator(device="cuda").manual_seed(M)
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=g)
        dy = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=g)
        w = torch.randn(N, device="cuda", dtype=torch.bfloat16, generator=g)
        y = torch.empty_like(x)
        rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)[2]
        calls = {"lead": ({}, lambda: y.copy_(x))} if args.lead else {}
        calls.update({"copy": ({}, lambda: y.copy_(x)), "dx": ({}, lambda: D._rms_norm_bwd_op(dy, x, w, rstd, False))})
        ref = D._rms_norm_bwd_op(dy, x, w, rstd, True)
        for name, env in launches.items():
            with forced_env(env):
                out = D._rms_norm_bwd_op(dy, x, w, rstd, True)
            if not name.startswith("diag") and not (torch.equal(out[0], ref[0]) and torch.equal(out[1], ref[1])):
                fails.append(f"{name} M={M} bits differ from default")
            calls[f"dw_{name}"] = (env, lambda: D._rms_norm_bwd_op(dy, x, w, rstd, True))
        one, ten, after = {}, {}, {}
        x2, y2 = torch.randn_like(x), torch.empty_like(x)
        pre = lambda: y2.copy_(x2)  # noqa: E731
        for k, (env, fn) in calls.items():
            with forced_env(env):  # read by the library while the graphs are captured
                one[k], ten[k] = graphed(fn, 1), graphed(fn, 10)
                if args.after:
                    after[k] = graphed(lambda fn=fn: (pre(), fn()), 10)
        pair_pre = graphed(lambda: (pre(), pre()), 10) if args.after else None
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        clean = {k: [] for k in one}
        b2b = {k: [] for k in one}
        for _ in range(args.reps):
            for k, fn in one.items():
                flush.zero_()
                e0.record(); fn(); e1.record(); e1.synchronize()
                clean[k].append(e0.elapsed_time(e1) * 1e3)
        for _ in range(7):
            for k, fn in ten.items():
                fn()
                e0.record(); fn(); e1.record(); e1.synchronize()
                b2b[k].append(e0.elapsed_time(e1) * 1e3 / 10)
        aft = {k: [] for k in after}
        pp = []
        for _ in range(7 if args.after else 0):
            for k, fn in list(after.items()) + [("_pre", pair_pre)]:
                fn()
                e0.record(); fn(); e1.record(); e1.synchronize()
                (pp if k == "_pre" else aft[k]).append(e0.elapsed_time(e1) * 1e3 / 10)
        if args.after:
            half = statistics.median(pp) / 2
            aft = {k: [t - half for t in v] for k, v in aft.items()}
        for mode, ts in (("clean", clean), ("b2b", b2b)) + ((("after", aft),) if args.after else ()):
            med = {k: statistics.median(v) for k, v in ts.items()}
            for k, us in med.items():
                k_bytes = 2 if k in ("copy", "lead") else 3
                frac = (k_bytes / us) / (2 / med["copy"])
                rows.append({"M": M, "N": N, "mode": mode, "call": k, "us": us, "frac_of_copy": frac})
            print(f"M={M:6d} N={N:5d} {mode:5s} " + "  ".join(f"{k} {med[k]:7.1f} us ({(2 if k in ('copy', 'lead') else 3) / med[k] / (2 / med['copy']):.3f})"
                                                   for k in med), flush=True)
    json.dump({"rows": rows, "fails": fails, "gpu": torch.cuda.get_device_name()}, open(args.out, "w"), indent=0)
    print("FAILS:", fails)
    return 1 if fails else 0


if __name__ == "__main__":
    raise SystemExit(main())
