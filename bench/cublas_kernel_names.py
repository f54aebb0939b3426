"""Launches F.linear (cuBLAS) once per shape, bf16, for an ncu run that
records which kernels cuBLAS picks (bench/cublas_kernel_names.sh)."""
import sys

import torch
import torch.nn.functional as F

for sh in sys.argv[1].split(","):
    M, N, K = (int(v) for v in sh.split("x"))
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(sh)
    F.linear(x, w)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    print("launched", sh, flush=True)
