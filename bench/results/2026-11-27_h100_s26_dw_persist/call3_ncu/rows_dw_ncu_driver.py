"""Calls the RMSNorm backward (bf16, N = 4096) without dw, with dw, and with
dw on a grid of one CTA per chunk (SAMEBITS_RMSNORM_DW_PERSIST=0) at
M = 4096 and 16384, twice each, for ncu (bench/rows_dw_ncu.sh)."""
import os

import torch

from samebits import dense as D

for M in (4096, 16384):
    g = torch.Generator(device="cuda").manual_seed(M)
    x = torch.randn(M, 4096, device="cuda", dtype=torch.bfloat16, generator=g)
    dy = torch.randn(M, 4096, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16, generator=g)
    rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)[2]
    for _ in range(2):
        D._rms_norm_bwd_op(dy, x, w, rstd, False)
        D._rms_norm_bwd_op(dy, x, w, rstd, True)
        os.environ["SAMEBITS_RMSNORM_DW_PERSIST"] = "0"
        D._rms_norm_bwd_op(dy, x, w, rstd, True)
        del os.environ["SAMEBITS_RMSNORM_DW_PERSIST"]
torch.cuda.synchronize()
