"""Row ops (RMSNorm fwd/bwd incl. residual and dw, softmax / log_softmax
fwd/bwd, sum / mean): do two builds of the library give the same bits?

    SAMEBITS_LIBRARY=old.so PYTHONPATH=python python bench/rows_device_check.py dump --out old.json
    SAMEBITS_LIBRARY=new.so PYTHONPATH=python python bench/rows_device_check.py dump --out new.json
    python bench/rows_device_check.py compare old.json new.json --out cmp.json

`dump` runs every op over M in {1, 2, 7, 64, 513, 4096, 16384} x N in
{3, 128, 1000, 4096, 5120, 8192, 16384, 20000} (M * N capped at 2^26) x
{bf16, fp16, fp32}, plus row-misaligned / strided inputs, mixed dtypes,
rows with zeros / infinities, and M = 4127, 40000 (RMSNorm dw folded over 2
and 10 rounds of the fold's 128 chunks, the last round partial), and writes
a fingerprint of each output's bits.
The inputs come from a seeded CUDA generator, and their fingerprints are
written too, so `compare` also checks that both runs saw the same inputs.
Fingerprint: (sum of the raw words, sum of the raw words times an index
hash), in int64 (wraps; exact, so order-free); any changed bit changes the
pair except with negligible probability. Negative control: one flipped bit
in an output must change its fingerprint (`control_bitflip`), and so must
an fp32 RMSNorm with eps 1e-6 -> 1e-4 (`control_eps`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

dev = os.environ.get("ROWS_CHECK_DEVICE", "cuda")  # cpu: a smoke test of this script


def fp(t: torch.Tensor):
    t = t.detach().contiguous().view(-1)
    iv = t.view({1: torch.int8, 2: torch.int16, 4: torch.int32}[t.element_size()]).to(torch.int64)
    idx = torch.arange(iv.numel(), device=iv.device, dtype=torch.int64)
    return [str(t.dtype), iv.numel(), int(iv.sum()), int((iv * ((idx * 2654435761) % 1000003 + 1)).sum())]


def dump(out_path, max_elems):
    from samebits import dense as D

    res: dict = {"device": torch.cuda.get_device_name() if dev == "cuda" else dev, "outputs": {}, "inputs": {}}
    O, I = res["outputs"], res["inputs"]
    g = torch.Generator(device=dev).manual_seed(1234)

    def rnd(shape, dt, scale=1.0):
        return (torch.randn(shape, device=dev, dtype=torch.float32, generator=g) * scale).to(dt)

    def run_all(key, x, dt, wdt=None, eps=1e-6):
        """Every row op on x (M, N) of dtype dt; weights in wdt (default dt)."""
        M, N = x.shape
        wdt = wdt or dt
        w = 1 + rnd((N,), torch.float32, 0.1).to(wdt)
        res_ = rnd((M, N), dt)
        dy = rnd((M, N), dt)
        I[key] = [fp(x), fp(w), fp(res_), fp(dy)]
        y, _, rstd = D._rmsnorm_fwd_impl(x, None, None, eps)
        O[key + " rms_fwd"] = [fp(y), fp(rstd)]
        y, _, rstd = D._rmsnorm_fwd_impl(x, None, w, eps)
        O[key + " rms_fwd_w"] = [fp(y), fp(rstd)]
        ya, h, rstda = D._rmsnorm_fwd_impl(x, res_, w, eps)
        O[key + " add_rms_fwd_w"] = [fp(ya), fp(h), fp(rstda)]
        dx, dw = D._rms_norm_bwd_op(dy, x, w, rstd, True)
        O[key + " rms_bwd_w_dw"] = [fp(dx), fp(dw)]
        dx, dw = D._rms_norm_bwd_op(dy, x, w, rstd, False)
        O[key + " rms_bwd_w_nodw"] = [fp(dx)]
        _, _, rstd0 = D._rmsnorm_fwd_impl(x, None, None, eps)
        dx, _ = D._rms_norm_bwd_op(dy, x, None, rstd0, False)
        O[key + " rms_bwd_now"] = [fp(dx)]
        dx, dw = D._rms_norm_bwd_op(dy, h, w, rstda, True)  # the add_rms_norm backward
        O[key + " add_rms_bwd_w_dw"] = [fp(dx), fp(dw)]
        for log in (False, True):
            nm = "log_softmax" if log else "softmax"
            s = D._softmax_op(x, log, dt)
            O[key + f" {nm}_fwd"] = [fp(s)]
            O[key + f" {nm}_bwd"] = [fp(D._softmax_bwd_op(s, dy, log, dt))]
            if dt != torch.float32:  # fp32 output / gradient of a 16-bit input
                s32 = D._softmax_op(x, log, torch.float32)
                O[key + f" {nm}_fwd_f32out"] = [fp(s32)]
                O[key + f" {nm}_bwd_f32dx"] = [fp(D._softmax_bwd_op(s, dy, log, torch.float32))]
        O[key + " sum"] = [fp(D._reduce_op(x, False, dt))]
        O[key + " mean_f32"] = [fp(D._reduce_op(x, True, torch.float32))]

    t0 = time.time()
    dts = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    Ms = [1, 2, 7, 64, 513, 4096, 16384]
    Ns = [3, 128, 1000, 4096, 5120, 8192, 16384, 20000]
    for dn, dt in dts.items():
        for N in Ns:
            for M in Ms:
                if M * N > max_elems:
                    continue
                run_all(f"{dn} M={M} N={N}", rnd((M, N), dt, 3.0), dt)
        # mixed: fp32 weight with a 16-bit x
        if dt != torch.float32:
            for M, N in ((7, 4096), (4096, 4096), (513, 5120), (64, 16384)):
                if M * N <= max_elems:
                    run_all(f"{dn} M={M} N={N} w=fp32", rnd((M, N), dt, 3.0), dt, torch.float32)
        # rows that start off 16-byte alignment (scalar path) and strided rows
        for M, N in ((7, 4096), (513, 1000), (64, 5120)):
            if M * N > max_elems:
                continue
            buf = rnd((M, N + 72), dt, 3.0)
            run_all(f"{dn} M={M} N={N} misaligned", buf[:, 1:N + 1], dt)
            run_all(f"{dn} M={M} N={N} strided", buf[:, :N], dt)
        # zeros, infinities, huge values; eps = 0 (rstd = inf on the zero row)
        for N in (1000, 4096):
            x = rnd((8, N), dt, 3.0)
            x[0] = 0
            x[1] = float("-inf")
            x[2, :7] = float("inf")
            x[3] = torch.finfo(dt).max / 4
            x[4, ::3] = float("nan")
            run_all(f"{dn} special N={N}", x, dt, eps=0.0)
        # dw folded over several rounds of the fold (kFoldRound = 128 chunks
        # of 32 rows), the last round and the last chunk partial
        for M, N in ((4127, 4096), (40000, 1000)):
            if M * N <= max_elems:
                run_all(f"{dn} M={M} N={N}", rnd((M, N), dt, 3.0), dt)
        print(f"[dump] {dn} done {time.time() - t0:.1f} s", flush=True)
    # negative controls
    x = rnd((64, 4096), torch.bfloat16, 3.0)
    y = D._rmsnorm_fwd_impl(x, None, None, 1e-6)[0]
    y2 = y.clone()
    y2.view(torch.int16)[5, 7] ^= 1
    res["control_bitflip"] = fp(y) != fp(y2)
    xf = x.float()
    res["control_eps"] = fp(D._rmsnorm_fwd_impl(xf, None, None, 1e-6)[0]) != fp(D._rmsnorm_fwd_impl(xf, None, None, 1e-4)[0])
    if dev == "cuda":
        torch.cuda.synchronize()
    res["seconds"] = time.time() - t0
    res["n_outputs"] = len(O)
    with open(out_path, "w") as f:
        json.dump(res, f)
    print(f"[dump] {len(O)} outputs, controls bitflip={res['control_bitflip']} eps={res['control_eps']}, "
          f"{res['seconds']:.1f} s", flush=True)
    return 0 if res["control_bitflip"] and res["control_eps"] else 1


def compare(a_path, b_path, out_path):
    a, b = json.load(open(a_path)), json.load(open(b_path))
    fails = []
    if a["inputs"] != b["inputs"]:
        fails.append("inputs differ between the two runs (the comparison is void)")
    if set(a["outputs"]) != set(b["outputs"]):
        fails.append(f"different output sets: {sorted(set(a['outputs']) ^ set(b['outputs']))[:10]}")
    diff = sorted(k for k in a["outputs"] if k in b["outputs"] and a["outputs"][k] != b["outputs"][k])
    for side, r in (("a", a), ("b", b)):
        if not (r.get("control_bitflip") and r.get("control_eps")):
            fails.append(f"negative control failed in {side}")
    summary = {"a": a_path, "b": b_path, "device": b.get("device"), "n_outputs": len(a["outputs"]),
               "n_equal": len(a["outputs"]) - len(diff), "differ": diff, "fails": fails,
               "bitwise_equal": not diff and not fails}
    if out_path:
        with open(out_path, "w") as f:
            json.dump(summary, f, indent=1)
    print(f"[compare] {summary['n_equal']} of {summary['n_outputs']} outputs bitwise equal; "
          f"differ: {diff[:20]}{' ...' if len(diff) > 20 else ''}; fails: {fails}", flush=True)
    return 0 if summary["bitwise_equal"] else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["dump", "compare"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--out", default=None)
    ap.add_argument("--max-elems", type=int, default=int(os.environ.get("ROWS_CHECK_MAX_ELEMS", 1 << 26)),
                    help="skip (M, N) with M * N above this")
    args = ap.parse_args()
    if args.mode == "dump":
        return dump(args.out or "rows_dump.json", args.max_elems)
    return compare(args.files[0], args.files[1], args.out)


if __name__ == "__main__":
    sys.exit(main())
