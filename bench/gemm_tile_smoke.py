"""Smoke test of every GEMM tile-table entry, each in its own process with a
time limit, before the long sweep of bench_dense.py --tiles.

    SAMEBITS_LIBRARY=path/to/libsamebits.so PYTHONPATH=python \
        python bench/gemm_tile_smoke.py --out smoke.json

A new entry that hangs (a cluster barrier protocol error waits forever) or
faults (a bad TMA box) would otherwise take the whole device call with it:
here it only fails its own child process. For each entry (forced through
SAMEBITS_GEMM_TILE), on shapes with partial M, N and K tiles, a cluster tile
whose second CTA is past M (M = 1, 300) and a multicast B slice entirely
past N (N = 520):
  - accuracy: error vs an fp64 reference <= 1.25x torch's own error at the
    same precision (earlier runs: every entry 1.00x, worst smoke 1.18x at the
    smallest shape, where both errors are a few ulps);
  - bits: forced output == default-choice output, bitwise (the BITS-FREE
    claim of gemm_tile_configs.h, at a few shapes; bench_dense.py checks it at
    every M bucket).
Negative control: forcing an entry that does not exist must fail with the
library's error (a build that lacks an entry cannot pass vacuously).
After each entry it prints `PASSED <comma-separated entries so far>`; the
last such line is the input of bench_dense.py --tile-list.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ERR_BOUND = 1.25  # x torch's own error vs fp64 (see the docstring)


def child(entry: str) -> dict:
    import torch
    import torch.nn.functional as F

    from samebits import dense as D

    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(7)
    res = {"entry": entry, "cases": [], "ok": True}

    def run_forced(fn):
        os.environ["SAMEBITS_GEMM_TILE"] = entry
        try:
            y = fn()
            torch.cuda.synchronize()
            return y
        finally:
            os.environ.pop("SAMEBITS_GEMM_TILE", None)

    def case(name, fn, ref_fn, torch_fn):
        y = run_forced(fn)
        y_def = fn()
        ref = ref_fn()
        e_sb = ((y.double() - ref).norm() / ref.norm()).item()
        e_t = ((torch_fn().double() - ref).norm() / ref.norm()).item()
        ratio = e_sb / max(e_t, 1e-30)
        same = torch.equal(y, y_def)
        ok = same and ratio <= ERR_BOUND and bool(torch.isfinite(y).all())
        res["cases"].append({"case": name, "err_ratio": ratio, "equal_default": same, "ok": ok})
        res["ok"] &= ok

    for dt in (torch.bfloat16, torch.float16):
        for M, N, K in ((1, 4096, 4096), (300, 1000, 1000), (513, 520, 1000), (2048, 4096, 4096)):
            a = torch.randn(M, K, device=dev, dtype=dt, generator=g)
            w = torch.randn(N, K, device=dev, dtype=dt, generator=g) / K ** 0.5
            bias = torch.randn(N, device=dev, dtype=dt, generator=g)
            case(f"linear_bias {str(dt)[6:]} {M}x{N}x{K}", lambda: D.linear(a, w, bias),
                 lambda: a.double() @ w.double().T + bias.double(), lambda: F.linear(a, w, bias))
    # (k, n) layout (packed-copy path) and a batched bmm with a broadcast-free batch
    a = torch.randn(300, 1000, device=dev, dtype=torch.bfloat16, generator=g)
    wkn = torch.randn(1000, 968, device=dev, dtype=torch.bfloat16, generator=g) / 32
    case("mm_kn bf16 300x968x1000", lambda: D.matmul(a, wkn), lambda: a.double() @ wkn.double(),
         lambda: a @ wkn)
    xb = torch.randn(3, 600, 256, device=dev, dtype=torch.bfloat16, generator=g)
    wb = torch.randn(3, 256, 200, device=dev, dtype=torch.bfloat16, generator=g) / 16
    case("bmm bf16 3x600x200x256", lambda: D.matmul(xb, wb), lambda: xb.double() @ wb.double(),
         lambda: torch.bmm(xb, wb))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entry", help="(internal) run the checks of one entry in this process")
    ap.add_argument("--out", default="gemm_tile_smoke.json")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per entry")
    ap.add_argument("--entries", default=None, help="comma-separated entries to test (default: every entry)")
    args = ap.parse_args()
    if args.entry is not None:
        try:
            print("RESULT " + json.dumps(child(args.entry)), flush=True)
        except Exception as e:  # the negative control lands here
            print("ERROR " + json.dumps({"entry": args.entry, "error": f"{type(e).__name__}: {e}"}), flush=True)
            return 1
        return 0

    from bench_dense import GEMM_TILES  # the one list of entries
    if args.entries:
        unknown = [e for e in args.entries.split(",") if e and e not in GEMM_TILES]
        if unknown:
            ap.error(f"--entries: unknown entries {unknown}; known: {GEMM_TILES}")
        GEMM_TILES = [e for e in args.entries.split(",") if e]

    out = {"entries": {}, "negative_control": None}
    t0 = time.time()

    def spawn(entry):
        t = time.time()
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--entry", entry],
                               capture_output=True, text=True, timeout=args.timeout)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("RESULT ", "ERROR "))]
            r = json.loads(lines[-1].split(" ", 1)[1]) if lines else {"error": "no result", "rc": p.returncode}
            r["rc"] = p.returncode
            if p.returncode != 0:
                r["stderr_tail"] = p.stderr[-2000:]
        except subprocess.TimeoutExpired:
            r = {"entry": entry, "error": f"timed out after {args.timeout} s (hang?)", "rc": None}
        r["seconds"] = round(time.time() - t, 1)
        return r

    neg = spawn("no_such_tile")
    neg_ok = neg.get("rc") == 1 and "unknown tile entry" in neg.get("error", "")
    out["negative_control"] = {"ok": neg_ok, **neg}
    print(f"negative control (unknown entry must fail): {'ok' if neg_ok else 'NOT OK'}: "
          f"{neg.get('error', '')[:200]}", flush=True)
    passed = []
    for entry in GEMM_TILES:
        r = spawn(entry)
        ok = r.get("rc") == 0 and r.get("ok", False)
        out["entries"][entry] = r
        worst = max((c["err_ratio"] for c in r.get("cases", [])), default=float("nan"))
        print(f"{entry:10s} {'ok  ' if ok else 'FAIL'} {r['seconds']:6.1f} s  worst err ratio {worst:.3f}  "
              f"{r.get('error', '')} {'' if ok else [c['case'] for c in r.get('cases', []) if not c['ok']]}",
              flush=True)
        if ok:
            passed.append(entry)
        print("PASSED " + ",".join(passed), flush=True)  # cumulative: an outer timeout keeps what passed
    out["passed"] = passed
    out["seconds"] = round(time.time() - t0, 1)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print("PASSED " + ",".join(passed), flush=True)
    return 0 if neg_ok and len(passed) == len(GEMM_TILES) else 1


if __name__ == "__main__":
    sys.exit(main())
