"""Launches the GEMM kernels that bench/gemm_v3_ncu.sh profiles with ncu, once
each, at M = 16384, N = K = 4096 (bf16, F.linear layout y = x W^T): the
default choice (128x256), the entries named on the command line (forced
through SAMEBITS_GEMM_TILE), then cuBLAS (F.linear). Nothing is timed here.

usage: python bench/gemm_v3_ncu_driver.py [--m 16384] [--n 4096] [--k 4096] [--tiles 128x256m2,128x128pp]
"""
import argparse
import os

import torch
import torch.nn.functional as F

from samebits import dense as D


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=16384)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--tiles", default="128x256m2,128x128pp")
    args = ap.parse_args()
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(args.m, args.k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(args.n, args.k, device="cuda", dtype=torch.bfloat16, generator=g) / args.k ** 0.5
    torch.cuda.synchronize()
    os.environ.pop("SAMEBITS_GEMM_TILE", None)
    y0 = D.linear(x, w)  # default choice
    torch.cuda.synchronize()
    print("launched: default", flush=True)
    for t in [t for t in args.tiles.split(",") if t]:
        os.environ["SAMEBITS_GEMM_TILE"] = t
        y = D.linear(x, w)
        torch.cuda.synchronize()
        os.environ.pop("SAMEBITS_GEMM_TILE", None)
        print(f"launched: {t} (bitwise equal to the default: {torch.equal(y, y0)})", flush=True)
    F.linear(x, w)
    torch.cuda.synchronize()
    print("launched: cuBLAS", flush=True)


if __name__ == "__main__":
    main()
