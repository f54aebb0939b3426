"""Launches once each, for bench/cutlass_probe/ncu.sh: samebits' variants
(--sb, as probe.py) and the CUTLASS probe configurations (--cfgs), then
cuBLAS, at one shape (bf16, x @ w.T). Nothing is timed here."""
import argparse
import ctypes
import os

import torch
import torch.nn.functional as F

from samebits import dense as D

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--shape", default="512x4096x14336")
ap.add_argument("--cfgs", default="2,0")
ap.add_argument("--sb", default="default,128x128,128x128@128")
args = ap.parse_args()
lib = ctypes.CDLL(args.lib)
lib.sbc_workspace.restype = ctypes.c_size_t
lib.sbc_workspace.argtypes = [ctypes.c_int] * 4
lib.sbc_gemm.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                         ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
M, N, K = (int(v) for v in args.shape.split("x"))
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / 64
for v in args.sb.split(","):
    tile, _, promo = v.partition("@")
    for k_, val in (("SAMEBITS_GEMM_TILE", tile), ("SAMEBITS_GEMM_EPILOGUE", promo)):
        os.environ.pop(k_, None)
        if val and val != "default":
            os.environ[k_] = val
    D.linear(x, w)
    torch.cuda.synchronize()
    print("launched: sb", v, flush=True)
for c in (int(v) for v in args.cfgs.split(",")):
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    ws = torch.empty(max(lib.sbc_workspace(c, M, N, K), 1), dtype=torch.uint8, device="cuda")
    rc = lib.sbc_gemm(c, x.data_ptr(), w.data_ptr(), out.data_ptr(), M, N, K, ws.data_ptr(),
                      torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    print("launched: cutlass", c, "rc", rc, flush=True)
F.linear(x, w)
torch.cuda.synchronize()
print("launched: cuBLAS", flush=True)
