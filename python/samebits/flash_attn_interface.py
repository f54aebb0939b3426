"""flash-attn 2 compatible functions, backed by samebits.

Same argument names, order and return values as flash_attn's
flash_attn_func, flash_attn_varlen_func and flash_attn_with_kvcache.
Differences: dropout_p must be 0.0; alibi_slopes, rotary_cos/rotary_sin,
cache_batch_idx, cache_leftpad and block_table in the varlen function are
not supported (clear error); deterministic and num_splits are accepted and
ignored (samebits is always deterministic and its split structure is fixed).
Like flash-attn, these functions copy an input whose last-dim stride is not 1.
"""

from __future__ import annotations

import torch

from . import _validate as _V

__all__ = ["flash_attn_func", "flash_attn_varlen_func", "flash_attn_with_kvcache"]


def _c(x):
    return x.contiguous() if isinstance(x, torch.Tensor) and x.stride(-1) != 1 else x


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q (B, Lq, H, D), k, v (B, Lk, Hk, D). Returns out, or (out, softmax_lse
    (B, H, Lq), None) with return_attn_probs (no probabilities without dropout)."""
    from . import attention

    _V.check_flash_unsupported(dropout_p=dropout_p, alibi_slopes=alibi_slopes)
    out, lse = attention(_c(q), _c(k), _c(v), causal=causal, softmax_scale=softmax_scale, window_size=window_size,
                         softcap=softcap, return_lse=True)
    return (out, lse, None) if return_attn_probs else out


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    """q (total_q, H, D), k, v (total_k, Hk, D), cu_seqlens int32 (batch + 1).
    Returns out, or (out, softmax_lse (H, total_q), None) with return_attn_probs."""
    from . import attention_varlen

    _V.check_flash_unsupported(dropout_p=dropout_p, alibi_slopes=alibi_slopes, block_table=block_table)
    out, lse = attention_varlen(_c(q), _c(k), _c(v), cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                causal=causal, softmax_scale=softmax_scale, window_size=window_size, softcap=softcap,
                                return_lse=True)
    return (out, lse, None) if return_attn_probs else out


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False):
    """Appends k, v to the cache in place, then attends. cache_seqlens: int32
    tensor (B,) or an int for every sequence; None means the cache is full
    (only without new k, v). Returns out, or (out, softmax_lse (B, H, Lq))."""
    from . import attention_with_kvcache

    _V.check_flash_unsupported(rotary_cos=rotary_cos, rotary_sin=rotary_sin, cache_batch_idx=cache_batch_idx,
                               cache_leftpad=cache_leftpad, alibi_slopes=alibi_slopes)
    _V._tensor("q", q)
    batch = q.shape[0]
    if cache_seqlens is None:
        if k is not None:
            _V._fail("cache_seqlens", "a tensor or int when new k, v are appended", None)
        cache_seqlens = _V.kvcache_capacity(k_cache, block_table)
    if isinstance(cache_seqlens, int) and not isinstance(cache_seqlens, bool):
        cache_seqlens = torch.full((batch,), cache_seqlens, dtype=torch.int32, device=q.device)
    out, lse = attention_with_kvcache(_c(q), k_cache, v_cache, _c(k), _c(v), cache_seqlens=cache_seqlens,
                                      block_table=block_table, causal=causal, softmax_scale=softmax_scale,
                                      window_size=window_size, softcap=softcap, return_lse=True)
    return (out, lse) if return_softmax_lse else out
