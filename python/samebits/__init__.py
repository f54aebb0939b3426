"""samebits: deterministic, batch-invariant attention.

Same input, same bits: a row's output does not depend on the batch, its
neighbours, packing, chunking, page layout, thread count or the run
(docs/numerics.md). Tensors are (batch, seqlen, heads, head_dim); dtypes
float16, bfloat16, float32; head_dim a multiple of 8 up to 256.
"""

from __future__ import annotations

import math
from typing import Optional

import torch

from . import _lib
from . import _validate as _V
from . import ops as _ops  # registers torch.ops.samebits.*
from .ops import set_num_threads
from ._validate import set_value_checks
from ._eager import plain_eager as _plain_eager

__version__ = "0.1.0"


def _resolve(q, causal, softmax_scale, window_size, softcap):
    _V._tensor("q", q)
    if not isinstance(causal, bool):
        _V._fail_type("causal", "a bool", type(causal).__name__)
    left, right = _V.check_window_size(window_size)
    if causal:
        right = 0  # causal is window_right == 0; a given window_left is kept
    if softmax_scale is None:
        d = q.shape[-1]
        softmax_scale = 1.0 / math.sqrt(d) if d > 0 else 1.0
    if isinstance(softmax_scale, int) and not isinstance(softmax_scale, bool):
        softmax_scale = float(softmax_scale)
    if isinstance(softcap, int) and not isinstance(softcap, bool):
        softcap = float(softcap)
    # before dispatch: the op schema would reject wrong types less clearly
    _V.check_options(softmax_scale, softcap, left, right)
    return softmax_scale, softcap, left, right


def attention(q, k, v, *, causal=False, softmax_scale=None, window_size=(-1, -1), softcap=0.0, return_lse=False):
    """Attention over q (B, Lq, H, D), k, v (B, Lk, Hk, D); H % Hk == 0.

    Query row i sees key j iff i + Lk - Lq - window_left <= j <= i + Lk - Lq +
    window_right (a -1 bound is unbounded; causal sets window_right = 0).
    softmax_scale defaults to 1/sqrt(D) and is rounded to float32; softcap 0
    disables it. Returns out (B, Lq, H, D), and lse float32 (B, H, Lq) (natural
    log) when return_lse. Differentiable in q, k, v.
    """
    scale, softcap, left, right = _resolve(q, causal, softmax_scale, window_size, softcap)
    out, lse = _ops.attention_fn(q, k, v, None, None, 0, 0, scale, softcap, left, right)  # samebits::attn_fwd
    return (out, lse) if return_lse else out


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None, *, causal=False,
                     softmax_scale=None, window_size=(-1, -1), softcap=0.0, return_lse=False):
    """Attention over packed sequences: q (total_q, H, D), k, v (total_k, Hk, D);
    sequence b owns rows cu_seqlens_q[b]:cu_seqlens_q[b+1] (int32, length
    batch + 1) and likewise for keys. max_seqlen_q/max_seqlen_k are ignored
    (results never depend on them). Returns out (total_q, H, D), and lse
    float32 (H, total_q) when return_lse."""
    scale, softcap, left, right = _resolve(q, causal, softmax_scale, window_size, softcap)
    out, lse = _ops.attention_fn(q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q or 0), int(max_seqlen_k or 0),
                                 scale, softcap, left, right)
    return (out, lse) if return_lse else out


def attention_with_kvcache(q, k_cache, v_cache, k=None, v=None, *, cache_seqlens, block_table=None, causal=False,
                           softmax_scale=None, window_size=(-1, -1), softcap=0.0, return_lse=False,
                           workspace=None):
    """Append k, v (B, Lnew, Hk, D) to the cache in place at positions
    cache_seqlens[b]..+Lnew, then attend q (B, Lq, H, D) to the first
    cache_seqlens[b] + Lnew keys. The cache is (B, capacity, Hk, D), or paged
    (num_pages, page_size, Hk, D) with block_table (B, max_pages) int32.
    cache_seqlens (B,) int32 is not modified. Not differentiable.

    workspace: optional 1-D uint8 tensor on q's device, scratch for the
    split partials on CUDA, of at least kvcache_workspace_size(q, k_cache,
    block_table)[1] bytes (the first value runs every query row in one
    pass). Without it the library's own workspace is used (one per device,
    grown on demand: it cannot grow inside a CUDA-graph capture and is
    shared by all streams of the device). Results never depend on it."""
    scale, softcap, left, right = _resolve(q, causal, softmax_scale, window_size, softcap)
    _V.optional_tensor("workspace", workspace)  # before the op's schema sees it
    args = (q, k_cache, v_cache, k, v, cache_seqlens, block_table, scale, softcap, left, right, workspace)
    if _plain_eager(q, k_cache, v_cache, k, v, cache_seqlens, block_table, workspace):
        # A decode step calls this once a layer: skip the dispatcher (about
        # 10-20 us a call) where it would only run the same body. The op
        # has no autograd formula and nothing traces this call; the version
        # bump is what the dispatcher does for the mutated caches.
        out, lse = _ops.attn_kvcache._init_fn(*args)
        if k is not None:
            torch.autograd.graph.increment_version(k_cache)
            torch.autograd.graph.increment_version(v_cache)
    else:
        out, lse = torch.ops.samebits.attn_kvcache(*args)
    return (out, lse) if return_lse else out


kvcache_workspace_size = _ops.kvcache_workspace_size


def kv_block_size(head_dim: int, dtype: torch.dtype, arch: int = 0) -> int:
    """KV block size (keys) of the numerics contract; arch 0 is the CPU."""
    return _lib.lib().sb_kv_block_size(arch, head_dim, _ops._DTYPE[dtype])


def split_size(head_dim: int, dtype: torch.dtype, arch: int = 0) -> int:
    """Split size (keys) of the numerics contract; arch 0 is the CPU."""
    return _lib.lib().sb_split_size(arch, head_dim, _ops._DTYPE[dtype])


def cuda_built() -> int:
    """The CUDA architecture this build has kernels for (90), or 0."""
    return int(_lib.lib().sb_cuda_built())


def cuda_supported(device_index: Optional[int] = None) -> bool:
    """Whether the CUDA kernels can run on that GPU (default: the current one)."""
    if not torch.cuda.is_available():
        return False
    if device_index is None:
        device_index = torch.cuda.current_device()
    return _lib.lib().sb_cuda_supported(device_index) != 0


from . import dense  # noqa: E402  (batch-invariant GEMM, RMSNorm, softmax, reductions)
from .flash_attn_interface import flash_attn_func, flash_attn_varlen_func, flash_attn_with_kvcache  # noqa: E402
from .mode import set_batch_invariant_mode  # noqa: E402

__all__ = [
    "attention", "attention_varlen", "attention_with_kvcache", "set_num_threads", "kv_block_size",
    "split_size", "kvcache_workspace_size", "cuda_built", "cuda_supported", "set_batch_invariant_mode", "dense", "set_value_checks",
    "flash_attn_func", "flash_attn_varlen_func", "flash_attn_with_kvcache",
]
