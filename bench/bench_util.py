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
    read by the library on every call), or the default choice for None or "";
    "name@direct" / "name@staged" (or "@direct" with the default entry) also
    forces the epilogue (SAMEBITS_GEMM_EPILOGUE). The previous settings are
    restored on exit."""

    VARS = ("SAMEBITS_GEMM_TILE", "SAMEBITS_GEMM_EPILOGUE")

    def __init__(self, name):
        tile, _, epi = (name or "").partition("@")
        self.values = (tile or None, epi or None)

    def __enter__(self):
        self.old = [os.environ.get(v) for v in self.VARS]
        for var, val in zip(self.VARS, self.values):
            if val is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = val

    def __exit__(self, *a):
        for var, val in zip(self.VARS, self.old):
            if val is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = val
