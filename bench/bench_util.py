"""Helpers shared by the benchmark scripts (run from the repository root as
`python bench/<script>.py`, so this folder is on sys.path)."""
import os

import torch


def graphed(fn, calls=1):
    """fn captured `calls` times in one CUDA graph, after two warm-up calls on
    a side stream; returns the graph's replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    torch.cuda.synchronize()
    return g.replay


class forced_tile:
    """Context manager: the GEMM tile entry `name` forced (SAMEBITS_GEMM_TILE,
    read by the library on every call), or the default choice for None; the
    previous setting is restored on exit."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.old = os.environ.get("SAMEBITS_GEMM_TILE")
        if self.name is None:
            os.environ.pop("SAMEBITS_GEMM_TILE", None)
        else:
            os.environ["SAMEBITS_GEMM_TILE"] = self.name

    def __exit__(self, *a):
        if self.old is None:
            os.environ.pop("SAMEBITS_GEMM_TILE", None)
        else:
            os.environ["SAMEBITS_GEMM_TILE"] = self.old
