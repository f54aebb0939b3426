"""Every input rule of samebits' Python layer, in one place.

Each failure is a TypeError (wrong type or dtype) or ValueError (wrong value,
shape, device or layout) whose message starts with the argument's name.

Structural checks read only metadata (dtype, device, shape, strides), so they
run everywhere, also on fake tensors while torch.compile traces. Value checks
read tensor data (cu_seqlens monotone, block_table range, cache_seqlens
bounds); they run only in the real op implementations, never in fake impls.
On CUDA they copy the small index tensors to the host (a synchronization),
and they are skipped while a CUDA graph is being captured
(torch.cuda.is_current_stream_capturing()), because a captured graph must
not synchronize; graphs replay with whatever indices were checked, or not,
before capture, so validate them once eagerly first.
"""

from __future__ import annotations

import math
from typing import Optional

import torch

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_HEAD_DIM = 256
_INT32_MAX = 2**31 - 1


def _fail_type(name: str, expected: str, got) -> None:
    raise TypeError(f"{name}: expected {expected}, got {got}")


def _fail(name: str, expected: str, got) -> None:
    raise ValueError(f"{name}: expected {expected}, got {got}")


def _tensor(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        _fail_type(name, "a torch.Tensor", type(t).__name__)


# --- q, k, v ---------------------------------------------------------------


def check_qkv(q, k, v, *, varlen: bool) -> None:
    """q (B, Lq, H, D), k/v (B, Lk, Hk, D); varlen: q (Tq, H, D), k/v (Tk, Hk, D)."""
    names = (("q", q), ("k", k), ("v", v))
    for name, t in names:
        _tensor(name, t)
    if q.dtype not in DTYPES:
        _fail_type("q", "dtype float16, bfloat16 or float32", q.dtype)
    for name, t in names[1:]:
        if t.dtype != q.dtype:
            _fail_type(name, f"the same dtype as q ({q.dtype})", t.dtype)
    if q.device.type not in ("cpu", "cuda"):
        _fail("q", "a CPU or CUDA tensor", q.device)
    for name, t in names[1:]:
        if t.device != q.device:
            _fail(name, f"to be on q's device ({q.device})", t.device)
    rank, layout = (3, "(total_tokens, heads, head_dim)") if varlen else (4, "(batch, seqlen, heads, head_dim)")
    for name, t in names:
        if t.dim() != rank:
            _fail(name, f"a {rank}-D tensor {layout}", f"shape {tuple(t.shape)}")
    _check_head_dim(names)
    _check_last_stride(names)
    if k.shape != v.shape:
        _fail("v", f"the same shape as k {tuple(k.shape)}", f"shape {tuple(v.shape)}")
    _check_heads(q.shape[-2], k.shape[-2])
    if not varlen and k.shape[0] != q.shape[0]:
        _fail("k", f"batch {q.shape[0]} like q", f"batch {k.shape[0]}")
    for name, t in names:
        for s in t.shape:
            if s > _INT32_MAX:
                _fail(name, "every dimension < 2**31", f"shape {tuple(t.shape)}")


def _check_head_dim(named) -> None:
    name0, t0 = named[0]
    d = t0.shape[-1]
    if d <= 0 or d % 8 != 0 or d > MAX_HEAD_DIM:
        _fail(name0, f"head_dim a multiple of 8 in [8, {MAX_HEAD_DIM}]", d)
    for name, t in named[1:]:
        if t.shape[-1] != d:
            _fail(name, f"head_dim {d} like {name0}", t.shape[-1])


def _check_last_stride(named) -> None:
    for name, t in named:
        if t.stride(-1) != 1:
            _fail(name, "stride 1 in the last (head_dim) dimension", f"strides {tuple(t.stride())}")


def _check_heads(h: int, hk: int) -> None:
    if hk <= 0 or h <= 0 or h % hk != 0:
        _fail("k", f"a number of KV heads that divides q's {h} heads (GQA/MQA)", hk)


# --- options ---------------------------------------------------------------


def check_options(softmax_scale, softcap, window_left, window_right) -> None:
    if not isinstance(softmax_scale, (int, float)) or isinstance(softmax_scale, bool):
        _fail_type("softmax_scale", "a float", type(softmax_scale).__name__)
    if not math.isfinite(softmax_scale):
        _fail("softmax_scale", "a finite float", softmax_scale)
    if not isinstance(softcap, (int, float)) or isinstance(softcap, bool):
        _fail_type("softcap", "a float", type(softcap).__name__)
    if not (math.isfinite(softcap) and softcap >= 0):
        _fail("softcap", "a finite float >= 0 (0 disables it)", softcap)
    for name, w in (("window_size[0] (left)", window_left), ("window_size[1] (right)", window_right)):
        if not isinstance(w, int) or isinstance(w, bool):
            _fail_type(name, "an int", type(w).__name__)
        if w < -1:
            _fail(name, "an int >= -1 (-1: unbounded)", w)
        if w > _INT32_MAX:
            _fail(name, "an int < 2**31", w)


def check_window_size(window_size) -> tuple[int, int]:
    try:
        left, right = window_size
    except (TypeError, ValueError):
        _fail_type("window_size", "a pair (left, right) of ints", repr(window_size))
    return left, right


# --- varlen ----------------------------------------------------------------


def _check_index_tensor(name: str, t, device: torch.device, rank: int) -> None:
    _tensor(name, t)
    if t.dtype != torch.int32:
        _fail_type(name, "dtype torch.int32", t.dtype)
    if t.device != device:
        _fail(name, f"to be on the device of q ({device})", t.device)
    if t.dim() != rank:
        _fail(name, f"a {rank}-D tensor", f"shape {tuple(t.shape)}")
    if t.stride(-1) != 1 and t.shape[-1] > 1:
        _fail(name, "stride 1 in the last dimension", f"strides {tuple(t.stride())}")


def check_cu_seqlens(cu_seqlens_q, cu_seqlens_k, device: torch.device) -> None:
    _check_index_tensor("cu_seqlens_q", cu_seqlens_q, device, 1)
    _check_index_tensor("cu_seqlens_k", cu_seqlens_k, device, 1)
    if cu_seqlens_q.shape[0] < 1:
        _fail("cu_seqlens_q", "length batch + 1 >= 1", cu_seqlens_q.shape[0])
    if cu_seqlens_k.shape[0] != cu_seqlens_q.shape[0]:
        _fail("cu_seqlens_k", f"length batch + 1 = {cu_seqlens_q.shape[0]} like cu_seqlens_q", cu_seqlens_k.shape[0])


_value_checks = True


def set_value_checks(enabled: bool) -> None:
    """Checks of values held in tensors (cu_seqlens monotone and in range,
    block_table entries in range, cache_seqlens within capacity) read those
    tensors on the host: on CUDA that is a device sync per call. They are on
    by default and always skipped while a CUDA graph is captured. A decode
    loop that has validated its inputs once may turn them off; an invalid
    value is then undefined behaviour (an out-of-range read on the GPU)."""
    global _value_checks
    _value_checks = bool(enabled)


def values_checkable(device: torch.device) -> bool:
    """Whether to run the value checks now: on, and no CUDA graph capturing."""
    if not _value_checks:
        return False
    return not (device.type == "cuda" and torch.cuda.is_current_stream_capturing())


def check_cu_seqlens_values(name: str, cu: torch.Tensor, total: int, tensor_name: str) -> None:
    c = cu.tolist()
    if c[0] != 0:
        _fail(name, "cu_seqlens[0] == 0", c[0])
    for b in range(len(c) - 1):
        if c[b + 1] < c[b]:
            _fail(name, "non-decreasing offsets", f"{name}[{b}]={c[b]} > {name}[{b + 1}]={c[b + 1]}")
    if c[-1] != total:
        _fail(name, f"last offset == {tensor_name}.shape[0] = {total}", c[-1])


# --- backward --------------------------------------------------------------


def check_backward(dout, out, lse, lse_shape) -> None:
    _tensor("dout", dout)
    if dout.shape != out.shape:
        _fail("dout", f"the shape of out {tuple(out.shape)}", f"shape {tuple(dout.shape)}")
    if dout.dtype != out.dtype or dout.device != out.device:
        _fail_type("dout", f"dtype {out.dtype} on {out.device}", f"{dout.dtype} on {dout.device}")
    if tuple(lse.shape) != tuple(lse_shape) or lse.dtype != torch.float32:
        _fail("lse", f"float32 of shape {tuple(lse_shape)}", f"{lse.dtype} {tuple(lse.shape)}")


# --- KV cache --------------------------------------------------------------


def check_kvcache(q, k_cache, v_cache, k_new, v_new, cache_seqlens, block_table) -> None:
    """q (B, Lq, H, D); cache (B, capacity, Hk, D), or paged (num_pages,
    page_size, Hk, D) with block_table (B, max_pages); k_new/v_new (B, Lnew,
    Hk, D); cache_seqlens (B,) int32."""
    named = [("q", q), ("k_cache", k_cache), ("v_cache", v_cache)]
    if (k_new is None) != (v_new is None):
        _fail("k" if k_new is None else "v", "k and v new tokens given together", "only one of them")
    if k_new is not None:
        named += [("k", k_new), ("v", v_new)]
    for name, t in named:
        _tensor(name, t)
    if q.dtype not in DTYPES:
        _fail_type("q", "dtype float16, bfloat16 or float32", q.dtype)
    for name, t in named[1:]:
        if t.dtype != q.dtype:
            _fail_type(name, f"the same dtype as q ({q.dtype})", t.dtype)
    if q.device.type not in ("cpu", "cuda"):
        _fail("q", "a CPU or CUDA tensor", q.device)
    for name, t in named[1:]:
        if t.device != q.device:
            _fail(name, f"to be on q's device ({q.device})", t.device)
    for name, t in named:
        if t.dim() != 4:
            _fail(name, "a 4-D tensor (batch|pages, seqlen|page_size, heads, head_dim)", f"shape {tuple(t.shape)}")
    _check_head_dim(named)
    _check_last_stride(named)
    if v_cache.shape != k_cache.shape:
        _fail("v_cache", f"the shape of k_cache {tuple(k_cache.shape)}", f"shape {tuple(v_cache.shape)}")
    _check_heads(q.shape[2], k_cache.shape[2])
    batch = q.shape[0]
    if k_new is not None:
        if k_new.shape != v_new.shape:
            _fail("v", f"the shape of k {tuple(k_new.shape)}", f"shape {tuple(v_new.shape)}")
        if k_new.shape[0] != batch or k_new.shape[2] != k_cache.shape[2]:
            _fail("k", f"(batch={batch}, seqlen_new, {k_cache.shape[2]} heads, head_dim)", f"shape {tuple(k_new.shape)}")
    _check_index_tensor("cache_seqlens", cache_seqlens, q.device, 1)
    if cache_seqlens.shape[0] != batch:
        _fail("cache_seqlens", f"length batch = {batch}", cache_seqlens.shape[0])
    if block_table is None:
        if k_cache.shape[0] != batch:
            _fail("k_cache", f"batch {batch} like q (or a paged cache with block_table)", f"batch {k_cache.shape[0]}")
    else:
        _check_index_tensor("block_table", block_table, q.device, 2)
        if block_table.shape[0] != batch:
            _fail("block_table", f"shape (batch={batch}, max_pages)", f"shape {tuple(block_table.shape)}")
        if k_cache.shape[1] <= 0:
            _fail("k_cache", "page_size (dim 1) > 0", k_cache.shape[1])


def check_workspace(workspace, device: torch.device) -> None:
    """An optional preallocated workspace: a 1-D contiguous uint8 tensor on
    q's device (its size is checked against the library's minimum later)."""
    if workspace is None:
        return
    _tensor("workspace", workspace)
    if workspace.dtype != torch.uint8:
        _fail_type("workspace", "dtype torch.uint8", workspace.dtype)
    if workspace.device != device:
        _fail("workspace", f"to be on q's device ({device})", workspace.device)
    if workspace.dim() != 1 or not workspace.is_contiguous():
        _fail("workspace", "a 1-D contiguous tensor", f"shape {tuple(workspace.shape)}, strides {workspace.stride()}")


def check_workspace_size(workspace, min_bytes: int, one_pass_bytes: int) -> None:
    if workspace is not None and workspace.numel() < min_bytes:
        _fail("workspace", f"at least {min_bytes} bytes for this call ({one_pass_bytes} run every query row in "
              "one pass; samebits.kvcache_workspace_size gives both)", f"{workspace.numel()} bytes")


def kvcache_capacity(k_cache, block_table) -> int:
    if block_table is None:
        return k_cache.shape[1]
    return block_table.shape[1] * k_cache.shape[1]


def check_kvcache_values(k_cache, cache_seqlens, block_table, seqlen_new: int) -> None:
    lens = cache_seqlens.tolist()
    cap = kvcache_capacity(k_cache, block_table)
    for b, n in enumerate(lens):
        if n < 0:
            _fail("cache_seqlens", "values >= 0", f"cache_seqlens[{b}]={n}")
        if n + seqlen_new > cap:
            _fail("cache_seqlens", f"cache_seqlens + new tokens ({seqlen_new}) <= cache capacity {cap}",
                  f"cache_seqlens[{b}]={n}")
    if block_table is not None:
        page, num_pages = k_cache.shape[1], k_cache.shape[0]
        bt = block_table.cpu()
        for b, n in enumerate(lens):
            used = bt[b, : (n + seqlen_new + page - 1) // page]
            if used.numel() and (int(used.min()) < 0 or int(used.max()) >= num_pages):
                bad = used[(used < 0) | (used >= num_pages)][0].item()
                _fail("block_table", f"page indices in [0, {num_pages}) for the pages sequence {b} uses", bad)


# --- flash-attn compatibility ----------------------------------------------


def check_flash_unsupported(**kwargs) -> None:
    """Options of flash-attn's interface that samebits does not implement."""
    dropout_p = kwargs.pop("dropout_p", 0.0)
    if dropout_p != 0.0:
        _fail("dropout_p", "0.0 (samebits has no dropout)", dropout_p)
    for name, value in kwargs.items():
        if value is not None:
            raise NotImplementedError(f"{name}: not supported by samebits (expected None)")


def optional_tensor(name: str, t: Optional[torch.Tensor]) -> None:
    if t is not None:
        _tensor(name, t)
