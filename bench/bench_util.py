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


class Flush:
    """The L2 flush before a timed call: a 256 MiB write, then (mode "read")
    a 256 MiB read, which leaves L2 holding clean lines and none of the
    call's data; mode "write" is the write alone, which leaves L2 dirty
    (docs/decode_design.md, "The L2 flush")."""

    def __init__(self, mode="read"):
        self.mode = mode
        self.buf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        self.read_buf = torch.ones(64 << 20, dtype=torch.float32, device="cuda") if mode == "read" else None

    def zero_(self):
        self.buf.zero_()
        if self.read_buf is not None:
            self.read_buf.sum()


class forced_env:
    """Context manager: environment variables set (a value) or removed (None)
    for the library's knobs, which it reads on every call; the previous
    settings are restored on exit."""

    def __init__(self, env):
        self.env = dict(env)

    def __enter__(self):
        self.old = {var: os.environ.get(var) for var in self.env}
        _set_env(self.env)

    def __exit__(self, *a):
        _set_env(self.old)


def _set_env(env):
    for var, val in env.items():
        if val is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = val


class forced_tile(forced_env):
    """The GEMM tile entry `name` forced (SAMEBITS_GEMM_TILE), or the default
    choice for None or ""; "name@direct" / "name@staged" (or "@direct" with
    the default entry) also forces the epilogue (SAMEBITS_GEMM_EPILOGUE)."""

    def __init__(self, name):
        tile, _, epi = (name or "").partition("@")
        super().__init__({"SAMEBITS_GEMM_TILE": tile or None, "SAMEBITS_GEMM_EPILOGUE": epi or None})
