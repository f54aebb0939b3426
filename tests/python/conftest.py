"""Shared helpers: an fp64 reference, the same computation eagerly in a low
precision (the baseline the error bounds are measured against), random
inputs and bitwise comparison helpers."""

from __future__ import annotations

import hashlib
import os
import pathlib

import pytest
import torch

_ROOT = pathlib.Path(__file__).resolve().parents[2]
if "SAMEBITS_LIBRARY" not in os.environ and (_ROOT / "build-py" / "libsamebits.so").exists():
    os.environ["SAMEBITS_LIBRARY"] = str(_ROOT / "build-py" / "libsamebits.so")

import samebits  # noqa: E402

torch.set_num_threads(2)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]


def visible(lq: int, lk: int, wl: int, wr: int) -> torch.Tensor:
    """(lq, lk) bool: query row i sits at key position i + lk - lq."""
    p = torch.arange(lq)[:, None] + (lk - lq)
    j = torch.arange(lk)[None, :]
    m = ((j >= 0) & (j < lk)).expand(lq, lk).clone()
    if wl >= 0:
        m &= j >= p - wl
    if wr >= 0:
        m &= j <= p + wr
    return m


def ref_attention(q, k, v, *, scale, softcap=0.0, window=(-1, -1), dtype=torch.float64):
    """Naive attention in `dtype` (fp64: the reference; q.dtype: the eager
    baseline). q (B, Lq, H, D), k/v (B, Lk, Hk, D). Differentiable. Rows
    with no visible key give out 0 and lse +inf, like samebits."""
    B, Lq, H, D = q.shape
    Lk, Hk = k.shape[1], k.shape[2]
    qf, kf, vf = q.to(dtype), k.to(dtype), v.to(dtype)
    kf = kf.repeat_interleave(H // Hk, dim=2)
    vf = vf.repeat_interleave(H // Hk, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", qf, kf)
    if softcap > 0:
        s = torch.tanh(s * (scale / softcap)) * softcap
    else:
        s = s * scale
    mask = visible(Lq, Lk, *window)
    empty = ~mask.any(-1)  # (Lq,)
    s = s.masked_fill(~mask, float("-inf")).masked_fill(empty[:, None], 0.0)
    lse = torch.logsumexp(s.float() if dtype in (torch.float16, torch.bfloat16) else s, -1)
    p = torch.softmax(s, -1).masked_fill(empty[:, None], 0.0)
    out = torch.einsum("bhqk,bkhd->bqhd", p, vf)
    lse = lse.masked_fill(empty, float("inf"))
    return out, lse


def ref_varlen(q, k, v, cu_q, cu_k, **kw):
    """Per-sequence reference over packed tensors -> (out (Tq,H,D), lse (H,Tq))."""
    outs, lses = [], []
    cq, ck = cu_q.tolist(), cu_k.tolist()
    for b in range(len(cq) - 1):
        o, l = ref_attention(q[None, cq[b]:cq[b + 1]], k[None, ck[b]:ck[b + 1]], v[None, ck[b]:ck[b + 1]], **kw)
        outs.append(o[0])
        lses.append(l[0])
    return torch.cat(outs, 0), torch.cat(lses, -1)


def randn(*shape, dtype=torch.float32, gen=None, scale=1.0):
    return (torch.randn(*shape, generator=gen, dtype=torch.float32) * scale).to(dtype)


def max_err(a, b):
    a, b = a.double(), b.double()
    fin = torch.isfinite(b)
    assert torch.equal(torch.isfinite(a), fin), "non-finite entries differ"
    assert torch.equal(a[~fin], b[~fin]), "infinite entries differ"
    return (a[fin] - b[fin]).abs().max().item() if fin.any() else 0.0


# Error bound: samebits' max abs error vs the fp64 reference must be at most
# BOUND_MULT times the error of the same computation done eagerly by PyTorch
# in the input dtype, plus a floor of 8 float32 ulps at the data's magnitude
# (samebits computes in float32; the eager float32 baseline can be exact by
# luck, e.g. for a row with one visible key).
BOUND_MULT = 2.0


def bound(err_pt: float, ref: torch.Tensor, dtype) -> float:
    fin = ref[torch.isfinite(ref)]
    mag = max(fin.abs().max().item(), 1.0) if fin.numel() else 1.0
    return BOUND_MULT * err_pt + 8 * torch.finfo(torch.float32).eps * mag


def digest(*tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        t = t.detach().contiguous().cpu()
        h.update(str((t.dtype, tuple(t.shape))).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def bump_ulp(t: torch.Tensor, index) -> torch.Tensor:
    """A copy of t with the element at `index` moved by one unit in the last
    place (its bit pattern plus one)."""
    t = t.clone()
    ity = torch.int32 if t.dtype == torch.float32 else torch.int16
    x = t[index].reshape(1)
    t[index] = (x.view(ity) + 1).view(t.dtype).reshape(t[index].shape)
    return t


def dispatched(fn):
    """(fn's result, the names of the ops a TorchDispatchMode saw while fn
    ran): which ops the dispatcher met, e.g. whether an eager shortcut was
    bypassed under a mode."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = set()

    class Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(str(func))
            return func(*args, **(kwargs or {}))

    with Seen():
        out = fn()
    return out, seen


@pytest.fixture
def gen():
    g = torch.Generator().manual_seed(1234)
    return g


@pytest.fixture(autouse=True)
def _threads():
    samebits.set_num_threads(2)
    yield
