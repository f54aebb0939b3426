"""samebits attention as torch.library custom ops.

    samebits::attn_fwd      (q, k, v, cu_seqlens_q?, cu_seqlens_k?, ...) -> (out, lse)
    samebits::attn_bwd      (dout, q, k, v, out, lse, ...)               -> (dq, dk, dv)
    samebits::attn_kvcache  (q, k_cache!, v_cache!, k_new?, v_new?, ..., workspace!?) -> (out, lse)

Each op has a fake implementation (shapes only) so torch.compile traces it
without running it, and attn_fwd has an autograd formula through attn_bwd.
Layouts: dense q/out (B, Lq, H, D), k/v (B, Lk, Hk, D), lse fp32 (B, H, Lq);
varlen q/out (total_q, H, D), k/v (total_k, Hk, D), lse fp32 (H, total_q).
Inputs are passed with their real strides (the last dim must have stride 1);
outputs are allocated contiguous. The one copy made here: attn_bwd copies
dout when its last-dim stride is not 1 (autograd may hand such a gradient).
The lse output is not differentiable (gradients flow through out only).
max_seqlen_q/max_seqlen_k are accepted for interface compatibility and
ignored: no result may depend on them (docs/numerics.md).
"""

from __future__ import annotations

import ctypes
from typing import Optional

import torch
from torch import Tensor

from . import _cuda, _lib
from . import _validate as V
from ._eager import fast_op, plain_eager

_DTYPE = {torch.float32: _lib.SB_F32, torch.float16: _lib.SB_F16, torch.bfloat16: _lib.SB_BF16}


def _view4(t: Optional[Tensor]) -> _lib.SbView:
    """(batch|pages, row, head, dim) tensor; a 3-D tensor is packed (row, head, dim)."""
    if t is None:
        return _lib.SbView()
    s = t.stride()
    if t.dim() == 3:
        return _lib.SbView(t.data_ptr(), 0, s[0], s[1])
    return _lib.SbView(t.data_ptr(), s[0], s[1], s[2])


def _view_lse(t: Tensor) -> _lib.SbView:
    s = t.stride()
    if t.dim() == 2:  # varlen (H, total_q)
        return _lib.SbView(t.data_ptr(), 0, s[1], s[0])
    return _lib.SbView(t.data_ptr(), s[0], s[2], s[1])  # (B, H, Lq)


def _ptr(t: Optional[Tensor]):
    return None if t is None else t.data_ptr()


def _device_and_stream(t: Tensor):
    if t.device.type == "cuda":
        return _lib.SB_CUDA, _cuda.stream(t.device)
    return _lib.SB_CPU, None


def _base_params(q: Tensor, k: Tensor, v: Tensor, cu_q, cu_k, scale, softcap, wl, wr) -> _lib.SbAttentionParams:
    device, stream = _device_and_stream(q)
    p = _lib.SbAttentionParams()
    p.dtype = _DTYPE[q.dtype]
    p.device = device
    p.stream = stream
    if cu_q is not None:
        p.batch = cu_q.shape[0] - 1
        p.seqlen_q = p.seqlen_k = 0  # ignored by the library for varlen
    else:
        p.batch, p.seqlen_q, p.seqlen_k = q.shape[0], q.shape[1], k.shape[1]
    p.num_heads, p.num_heads_k, p.head_dim = q.shape[-2], k.shape[-2], q.shape[-1]
    p.cu_seqlens_q, p.cu_seqlens_k = _ptr(cu_q), _ptr(cu_k)
    p.softmax_scale, p.softcap = scale, softcap
    p.window_left, p.window_right = wl, wr
    p.q, p.k, p.v = _view4(q), _view4(k), _view4(v)
    return p


def _check_fwd(q, k, v, cu_q, cu_k, scale, softcap, wl, wr) -> bool:
    varlen = cu_q is not None or cu_k is not None
    if varlen and (cu_q is None or cu_k is None):
        V._fail("cu_seqlens_k" if cu_k is None else "cu_seqlens_q", "cu_seqlens_q and cu_seqlens_k together", None)
    V.check_qkv(q, k, v, varlen=varlen)
    if varlen:
        V.check_cu_seqlens(cu_q, cu_k, q.device)
    V.check_options(scale, softcap, wl, wr)
    return varlen


def _lse_shape(q: Tensor, varlen: bool):
    return (q.shape[1], q.shape[0]) if varlen else (q.shape[0], q.shape[2], q.shape[1])


# --- forward ---------------------------------------------------------------


@torch.library.custom_op("samebits::attn_fwd", mutates_args=())
def attn_fwd(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    cu_seqlens_q: Optional[Tensor],
    cu_seqlens_k: Optional[Tensor],
    max_seqlen_q: int,
    max_seqlen_k: int,
    softmax_scale: float,
    softcap: float,
    window_left: int,
    window_right: int,
) -> tuple[Tensor, Tensor]:
    varlen = _check_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale, softcap, window_left, window_right)
    if varlen and V.values_checkable(q.device):
        V.check_cu_seqlens_values("cu_seqlens_q", cu_seqlens_q, q.shape[0], "q")
        V.check_cu_seqlens_values("cu_seqlens_k", cu_seqlens_k, k.shape[0], "k")
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(_lse_shape(q, varlen), dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    if k.shape[-3] == 0:  # no keys at all: every row is empty (numerics.md, Output)
        out.zero_()
        lse.fill_(float("inf"))
        return out, lse
    p = _base_params(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale, softcap, window_left, window_right)
    p.out, p.lse = _view4(out), _view_lse(lse)
    with _cuda.guard(q.device):
        _lib.check(_lib.lib().sb_attention_forward(ctypes.byref(p)), "attention forward")
    return out, lse


@attn_fwd.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, softcap, window_left, window_right):
    varlen = _check_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale, softcap, window_left, window_right)
    return q.new_empty(q.shape), q.new_empty(_lse_shape(q, varlen), dtype=torch.float32)


# --- backward --------------------------------------------------------------


@torch.library.custom_op("samebits::attn_bwd", mutates_args=())
def attn_bwd(
    dout: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    lse: Tensor,
    cu_seqlens_q: Optional[Tensor],
    cu_seqlens_k: Optional[Tensor],
    max_seqlen_q: int,
    max_seqlen_k: int,
    softmax_scale: float,
    softcap: float,
    window_left: int,
    window_right: int,
) -> tuple[Tensor, Tensor, Tensor]:
    varlen = _check_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale, softcap, window_left, window_right)
    V.check_backward(dout, out, lse, _lse_shape(q, varlen))
    if varlen and V.values_checkable(q.device):
        V.check_cu_seqlens_values("cu_seqlens_q", cu_seqlens_q, q.shape[0], "q")
        V.check_cu_seqlens_values("cu_seqlens_k", cu_seqlens_k, k.shape[0], "k")
    return _attn_bwd_run(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, softmax_scale, softcap, window_left,
                         window_right, varlen)


def _attn_bwd_run(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, softmax_scale, softcap, window_left,
                  window_right, varlen: bool):
    """attn_bwd's body after its checks (attn_fwd's formula calls it
    directly in plain eager mode: the forward checked q, k, v, the options
    and the offsets)."""
    if dout.stride(-1) != 1:
        dout = dout.contiguous()
    # The kernels write every row of every sequence (the C tests poison dq,
    # dk, dv with NaN first). A dense batch's rows all belong to sequences;
    # a packed batch's do when its last cu_seqlens offset is the row count,
    # which the value checks require (they ran in this call or in the
    # forward's) and which, with the checks off, the caller promises: an
    # invalid offset is then undefined behaviour (set_value_checks). So no
    # zero fill either way (it cost ~4 % of a packed backward at 16k tokens).
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    if q.numel() == 0 or k.numel() == 0:
        return dq.zero_(), dk.zero_(), dv.zero_()
    p = _base_params(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale, softcap, window_left, window_right)
    p.out, p.lse = _view4(out), _view_lse(lse)
    p.dout, p.dq, p.dk, p.dv = _view4(dout), _view4(dq), _view4(dk), _view4(dv)
    with _cuda.guard(q.device):
        if q.device.type == "cuda" and _lib.has_backward_workspace_abi():
            # The workspace comes from torch's caching allocator (stream-ordered,
            # and kept by a CUDA graph that captures this call) rather than
            # from an allocation inside the library.
            total_q = q.shape[0] if varlen else 0
            size = ctypes.c_size_t(0)
            _lib.check(_lib.lib().sb_attention_backward_workspace_size(ctypes.byref(p), total_q, ctypes.byref(size)),
                       "attention backward (workspace size)")
            ws = torch.empty(size.value, dtype=torch.uint8, device=q.device) if size.value > 0 else None
            _lib.check(_lib.lib().sb_attention_backward_ws(ctypes.byref(p), total_q, _ptr(ws), size.value),
                       "attention backward")
        else:
            _lib.check(_lib.lib().sb_attention_backward(ctypes.byref(p)), "attention backward")
    return dq, dk, dv


@attn_bwd.register_fake
def _(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, softcap,
      window_left, window_right):
    varlen = _check_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale, softcap, window_left, window_right)
    V.check_backward(dout, out, lse, _lse_shape(q, varlen))
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _fwd_setup_context(ctx, inputs, output):
    q, k, v, cu_q, cu_k, max_q, max_k, scale, softcap, wl, wr = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k)
    ctx.args = (max_q, max_k, scale, softcap, wl, wr)
    ctx.mark_non_differentiable(lse)


def _fwd_backward(ctx, dout, dlse):
    q, k, v, out, lse, cu_q, cu_k = ctx.saved_tensors
    if not torch.is_grad_enabled() and plain_eager(dout, q, k, v, out, lse, cu_q, cu_k, grad_ok=True):
        # attn_bwd's body without the dispatcher, nor the checks (and the
        # offsets' device sync) attn_fwd already made on these inputs
        varlen = cu_q is not None
        V.check_backward(dout, out, lse, _lse_shape(q, varlen))
        dq, dk, dv = _attn_bwd_run(dout, q, k, v, out, lse, cu_q, cu_k, *ctx.args[2:], varlen)
    else:  # traced, or a double backward: the op (which has no formula of its own)
        dq, dk, dv = torch.ops.samebits.attn_bwd(dout, q, k, v, out, lse, cu_q, cu_k, *ctx.args)
    return dq, dk, dv, None, None, None, None, None, None, None, None


attn_fwd.register_autograd(_fwd_backward, setup_context=_fwd_setup_context)
# attn_fwd and its formula without the dispatcher for plain eager calls: the
# dispatch costs a few hundred us of host time a call on a busy host, which
# a GPU waiting for the launch pays in full (samebits._eager).
attention_fn = fast_op(attn_fwd, _fwd_setup_context, _fwd_backward)


# --- KV cache ----------------------------------------------------------------


def _kvcache_params(q: Tensor, k_cache: Tensor, v_cache: Tensor, seqused_k_ptr, block_table: Optional[Tensor],
                    softmax_scale: float, softcap: float, window_left: int, window_right: int) -> _lib.SbAttentionParams:
    """The attention call of attn_kvcache (views of q and the cache; out/lse
    are filled in by the caller)."""
    device, stream = _device_and_stream(q)
    paged = block_table is not None
    p = _lib.SbAttentionParams()
    p.dtype, p.device, p.stream = _DTYPE[q.dtype], device, stream
    p.batch, p.num_heads, p.num_heads_k, p.head_dim = q.shape[0], q.shape[2], k_cache.shape[2], q.shape[3]
    p.seqlen_q, p.seqlen_k = q.shape[1], V.kvcache_capacity(k_cache, block_table)
    p.seqused_k, p.block_table = seqused_k_ptr, _ptr(block_table)
    p.block_table_batch_stride = block_table.stride(0) if paged else 0
    p.page_size = k_cache.shape[1] if paged else 0
    p.softmax_scale, p.softcap = softmax_scale, softcap
    p.window_left, p.window_right = window_left, window_right
    p.q, p.k, p.v = _view4(q), _view4(k_cache), _view4(v_cache)
    return p


def _workspace_size(p: _lib.SbAttentionParams) -> tuple[int, int]:
    """(one-pass bytes, least bytes) of the device workspace for p."""
    if not _lib.has_workspace_abi():
        return 0, 0
    one_pass, least = ctypes.c_size_t(0), ctypes.c_size_t(0)
    _lib.check(_lib.lib().sb_attention_workspace_size(ctypes.byref(p), ctypes.byref(one_pass), ctypes.byref(least)),
               "attention with KV cache (workspace size)")
    return one_pass.value, least.value


def kvcache_workspace_size(q: Tensor, k_cache: Tensor, block_table: Optional[Tensor] = None) -> tuple[int, int]:
    """(bytes, min_bytes) of the uint8 `workspace` that attention_with_kvcache
    takes for q (B, Lq, H, D) over this cache: bytes run every query row in
    one pass, min_bytes is the least accepted. Both 0 on the CPU. Depends
    only on shapes, dtype and device."""
    V._tensor("q", q)
    V._tensor("k_cache", k_cache)
    if q.dim() != 4 or k_cache.dim() != 4:
        V._fail("q" if q.dim() != 4 else "k_cache", "a 4-D tensor", f"shape {tuple(q.shape if q.dim() != 4 else k_cache.shape)}")
    if q.dtype not in _DTYPE:
        V._fail_type("q", "dtype float16, bfloat16 or float32", q.dtype)
    if q.device.type != "cuda":
        return 0, 0
    # seqused_k: only whether it is set matters to the size, never its value
    p = _kvcache_params(q, k_cache, k_cache, 1, block_table, 1.0, 0.0, -1, 0)
    return _workspace_size(p)


@torch.library.custom_op("samebits::attn_kvcache", mutates_args=("k_cache", "v_cache", "workspace"))
def attn_kvcache(
    q: Tensor,
    k_cache: Tensor,
    v_cache: Tensor,
    k_new: Optional[Tensor],
    v_new: Optional[Tensor],
    cache_seqlens: Tensor,
    block_table: Optional[Tensor],
    softmax_scale: float,
    softcap: float,
    window_left: int,
    window_right: int,
    workspace: Optional[Tensor],  # no default: the dispatcher drops trailing defaults, which a mutated arg must not be
) -> tuple[Tensor, Tensor]:
    V.check_kvcache(q, k_cache, v_cache, k_new, v_new, cache_seqlens, block_table)
    V.check_options(softmax_scale, softcap, window_left, window_right)
    V.check_workspace(workspace, q.device)
    seqlen_new = 0 if k_new is None else k_new.shape[1]
    if V.values_checkable(q.device):
        V.check_kvcache_values(k_cache, cache_seqlens, block_table, seqlen_new)
    batch, seqlen_q, num_heads, head_dim = q.shape
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((batch, num_heads, seqlen_q), dtype=torch.float32, device=q.device)
    if batch == 0:
        return out, lse
    device, stream = _device_and_stream(q)
    paged = block_table is not None
    page_size = k_cache.shape[1] if paged else 0
    bt_stride = block_table.stride(0) if paged else 0
    with _cuda.guard(q.device):
        seqused_k = cache_seqlens + seqlen_new if seqlen_new else cache_seqlens
        p = _kvcache_params(q, k_cache, v_cache, _ptr(seqused_k), block_table, softmax_scale, softcap,
                            window_left, window_right)
        p.out, p.lse = _view4(out), _view_lse(lse)
        if workspace is not None and seqlen_q > 0:  # sized only when given: no extra call on the decode path
            one_pass, least = _workspace_size(p)
            V.check_workspace_size(workspace, least, one_pass)  # before the cache is touched
        if seqlen_new > 0:
            a = _lib.SbKvcacheAppendParams()
            a.dtype, a.device, a.stream = _DTYPE[q.dtype], device, stream
            a.batch, a.seqlen_new, a.num_heads_k, a.head_dim = batch, seqlen_new, k_cache.shape[2], head_dim
            a.cache_seqlens, a.block_table = _ptr(cache_seqlens), _ptr(block_table)
            a.block_table_batch_stride, a.page_size = bt_stride, page_size
            a.k_new, a.v_new, a.k_cache, a.v_cache = _view4(k_new), _view4(v_new), _view4(k_cache), _view4(v_cache)
            _lib.check(_lib.lib().sb_kvcache_append(ctypes.byref(a)), "kvcache append")
        if seqlen_q == 0:
            return out, lse
        if workspace is None:
            # the library's own workspace (per device; see samebits.h)
            _lib.check(_lib.lib().sb_attention_forward(ctypes.byref(p)), "attention with KV cache")
            return out, lse
        _lib.check(_lib.lib().sb_attention_forward_ws(ctypes.byref(p), workspace.data_ptr(), workspace.numel()),
                   "attention with KV cache")
    return out, lse


@attn_kvcache.register_fake
def _(q, k_cache, v_cache, k_new, v_new, cache_seqlens, block_table, softmax_scale, softcap, window_left,
      window_right, workspace):
    V.check_kvcache(q, k_cache, v_cache, k_new, v_new, cache_seqlens, block_table)
    V.check_options(softmax_scale, softcap, window_left, window_right)
    V.check_workspace(workspace, q.device)
    b, lq, h, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, h, lq), dtype=torch.float32)


def set_num_threads(num_threads: int) -> None:
    """Worker threads of the CPU backend. Never changes any result."""
    if not isinstance(num_threads, int) or isinstance(num_threads, bool):
        V._fail_type("num_threads", "an int", type(num_threads).__name__)
    if num_threads < 1:
        V._fail("num_threads", "an int >= 1", num_threads)
    _lib.lib().sb_cpu_set_num_threads(num_threads)
