"""RMSNorm forward (no residual) with one CTA per group of rows against the
persistent grid (SAMEBITS_ROWS_GRID=persistent, read on every call), in one
process: bits, then speed beside a device copy of x.

    SAMEBITS_LIBRARY=lib.so PYTHONPATH=python:bench python bench/rows_grid_probe.py --out probe.json

bf16, N = 4096 (and 8192), M in {2048, 4096, 8192, 16384}. Two timings, each
alternating the two grids and the copy within every repetition:
"graph": 10 calls replayed from one CUDA graph, no flush (bench_dense.py's
method); "flushed": one call replayed after a 256 MiB L2 flush.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import torch

from bench_util import graphed
from samebits import dense as D


def with_grid(mode, fn):
    def call():
        old = os.environ.get("SAMEBITS_ROWS_GRID")
        os.environ["SAMEBITS_ROWS_GRID"] = mode
        try:
            return fn()
        finally:
            if old is None:
                os.environ.pop("SAMEBITS_ROWS_GRID", None)
            else:
                os.environ["SAMEBITS_ROWS_GRID"] = old
    return call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="rows_grid_probe.json")
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    torch.manual_seed(0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for N in (4096, 8192):
        for M in (2048, 4096, 8192, 16384):
            x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            y = torch.empty_like(x)
            outs = {m: with_grid(m, lambda: D.rms_norm(x, w))() for m in ("rows", "persistent")}
            same = torch.equal(outs["rows"], outs["persistent"])
            fns = {"rows": with_grid("rows", lambda: D.rms_norm(x, w)),
                   "persistent": with_grid("persistent", lambda: D.rms_norm(x, w)),
                   "copy": lambda: y.copy_(x)}
            row = {"M": M, "N": N, "bits_equal": same}
            for kind, calls in (("graph", 10), ("flushed", 1)):
                g = {k: graphed(f, calls) for k, f in fns.items()}
                ts = {k: [] for k in fns}
                for _ in range(args.reps):
                    for k, rep in g.items():
                        if kind == "flushed":
                            flush.zero_()
                        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        a.record()
                        rep()
                        b.record()
                        b.synchronize()
                        ts[k].append(a.elapsed_time(b) * 1e3 / calls)
                med = {k: statistics.median(v) for k, v in ts.items()}
                row[kind] = {k: round(v, 2) for k, v in med.items()}
                row[kind + "_frac_of_copy"] = {k: round(med["copy"] / med[k], 3) for k in ("rows", "persistent")}
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(args.out, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
