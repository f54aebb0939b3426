"""RMSNorm launch shapes, current against SAMEBITS_ROWS_LEGACY=1, in one
process (the variable is read on every call): bits and speed.

    SAMEBITS_LIBRARY=lib.so PYTHONPATH=python python bench/rows_sweep.py --out sweep.json

For N in {1024, 2048, 4096, 8192, 16384} (bf16) and M in {1024, 2048, 4096,
16384}:
rms_norm forward (4 rows per CTA at N <= 4096 against 2), add_rms_norm
(unchanged: a control), RMSNorm backward with dw (fused dx + dw then
rmsnorm_dw_fold_kernel against the dx kernel, the dw partial kernel, then
the previous release's fold, one thread per column) and without dw
(unchanged: a control).
Every output of the two shapes must be bitwise equal (torch.equal). Then
checks of the fused dw itself: 50 runs -> one hash of (dx, dw) at M = 4096;
dw of rows [0, M) equal between the fused path and the split path forced
(SAMEBITS_RMSNORM_DW_PATH) at M in {1, 7, 32, 33, 513, 1024, 4097}; and the
relative error of dw against an fp64 reference beside torch's own. Timing
as bench_dense.py (CUDA-graph replay, median); fraction of copy counts the
least bytes each op moves: 2 x for rms_norm, 4 x for add_rms_norm, 3 x for
the backward ops.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dense import timeit_graph  # noqa: E402

from samebits import dense as D  # noqa: E402

FAILS: list[str] = []


def legacy(on: bool):
    if on:
        os.environ["SAMEBITS_ROWS_LEGACY"] = "1"
    else:
        os.environ.pop("SAMEBITS_ROWS_LEGACY", None)


def h(*ts):
    m = hashlib.sha256()
    for t in ts:
        m.update(t.detach().contiguous().view(torch.uint8).cpu().numpy().tobytes())
    return m.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="rows_sweep.json")
    args = ap.parse_args()
    dev = "cuda"
    res = {"device": torch.cuda.get_device_name(), "speed": [], "bits": {}, "dw": {}}
    g = torch.Generator(device=dev).manual_seed(11)
    t0 = time.time()
    for N in (1024, 2048, 4096, 8192, 16384):
        for M in (1024, 2048, 4096, 16384):
            x = torch.randn(M, N, device=dev, dtype=torch.bfloat16, generator=g)
            r = torch.randn(M, N, device=dev, dtype=torch.bfloat16, generator=g)
            dy = torch.randn(M, N, device=dev, dtype=torch.bfloat16, generator=g)
            w = (1 + 0.1 * torch.randn(N, device=dev, generator=g)).to(torch.bfloat16)
            y = torch.empty_like(x)
            xb = x.numel() * x.element_size()
            t_copy = timeit_graph(lambda: y.copy_(x))
            rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)[2]
            ops = (
                ("rms_norm", 2, lambda: D._rmsnorm_fwd_impl(x, None, w, 1e-6)),
                ("add_rms_norm", 4, lambda: D._rmsnorm_fwd_impl(x, r, w, 1e-6)),
                ("rms_norm_bwd_dw", 3, lambda: D._rms_norm_bwd_op(dy, x, w, rstd, True)),
                ("rms_norm_bwd_dx", 3, lambda: D._rms_norm_bwd_op(dy, x, w, rstd, False)),
            )
            for name, k, fn in ops:
                outs, times = {}, {}
                for mode in ("new", "legacy"):
                    legacy(mode == "legacy")
                    o = fn()
                    outs[mode] = [t for t in o if t is not None]
                    times[mode] = timeit_graph(fn)
                legacy(False)
                eq = all(torch.equal(a, b) for a, b in zip(outs["new"], outs["legacy"]))
                key = f"{name} M={M} N={N}"
                res["bits"][key] = eq
                if not eq:
                    FAILS.append("bits " + key)
                row = {"op": name, "M": M, "N": N, "new_us": times["new"] * 1e3, "legacy_us": times["legacy"] * 1e3,
                       "copy_GBps": 2 * xb / t_copy / 1e6,
                       "new_frac_of_copy": (k * xb / times["new"]) / (2 * xb / t_copy),
                       "legacy_frac_of_copy": (k * xb / times["legacy"]) / (2 * xb / t_copy)}
                res["speed"].append(row)
                print(f"{name:16s} M={M:6d} N={N:6d}  new {row['new_us']:8.1f} us ({row['new_frac_of_copy']:.2f} of copy)"
                      f"  legacy {row['legacy_us']:8.1f} us ({row['legacy_frac_of_copy']:.2f})  "
                      f"speedup {times['legacy'] / times['new']:.2f}x  bits {'equal' if eq else 'DIFFER'}", flush=True)
            del x, r, dy, y
            torch.cuda.empty_cache()
    print(f"[sweep] {time.time() - t0:.1f} s", flush=True)

    # the fused dw: runs, forced paths, accuracy
    M, N = 4096, 4096
    x = torch.randn(M + 64, N, device=dev, dtype=torch.bfloat16, generator=g) * 2
    dy = torch.randn(M + 64, N, device=dev, dtype=torch.bfloat16, generator=g)
    w = (1 + 0.1 * torch.randn(N, device=dev, generator=g)).to(torch.bfloat16)
    rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)[2]
    hashes = {h(*D._rms_norm_bwd_op(dy[:M], x[:M], w, rstd[:M], True)) for _ in range(50)}
    res["dw"]["runs_50_unique_hashes"] = len(hashes)
    if len(hashes) != 1:
        FAILS.append("dw 50 runs")
    forced = {}
    for Mi in (1, 7, 32, 33, 513, 1024, 4097):
        outs = {}
        for path in ("fused", "split"):
            os.environ["SAMEBITS_RMSNORM_DW_PATH"] = path
            outs[path] = D._rms_norm_bwd_op(dy[:Mi], x[:Mi], w, rstd[:Mi], True)
        os.environ.pop("SAMEBITS_RMSNORM_DW_PATH", None)
        default = D._rms_norm_bwd_op(dy[:Mi], x[:Mi], w, rstd[:Mi], True)
        ok = all(torch.equal(a, b) and torch.equal(a, c) for a, b, c in zip(outs["fused"], outs["split"], default))
        forced[str(Mi)] = ok
        if not ok:
            FAILS.append(f"dw fused == split at M={Mi}")
    res["dw"]["fused_equals_split"] = forced
    # accuracy of dw: samebits and torch (bf16 autograd) against fp64
    xd, dyd, wd = x[:M].double(), dy[:M].double(), w.double()
    ref = (dyd * xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6)).sum(0)
    ours = D._rms_norm_bwd_op(dy[:M], x[:M], w, rstd[:M], True)[1].double()
    wt = w.clone().requires_grad_()
    tw = torch.autograd.grad(torch.nn.functional.rms_norm(x[:M], (N,), wt, 1e-6), wt, dy[:M])[0].double()
    err = lambda a: float((a - ref).norm() / ref.norm())  # noqa: E731
    res["dw"]["rel_err_samebits"], res["dw"]["rel_err_torch"] = err(ours), err(tw)
    if not err(ours) <= 2 * err(tw) + 1e-6:
        FAILS.append("dw accuracy")
    res["fails"] = FAILS
    print(f"[dw] 50-run hashes {len(hashes)}; fused == split {forced}; rel err samebits "
          f"{err(ours):.3g} torch {err(tw):.3g}; fails: {FAILS}", flush=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
