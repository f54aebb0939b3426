"""flash-attn 2 compatible surface: argument mapping and return values."""

import torch

import samebits
from samebits import flash_attn_func, flash_attn_varlen_func, flash_attn_with_kvcache
from conftest import randn


def test_func_maps_causal_and_window(gen):
    q, k, v = (randn(2, 50, 4, 64, dtype=torch.bfloat16, gen=gen) for _ in range(3))
    a = flash_attn_func(q, k, v, causal=True, window_size=(10, 5), deterministic=False)
    b = samebits.attention(q, k, v, window_size=(10, 0))
    assert torch.equal(a, b)
    c = flash_attn_func(q, k, v, 0.0, 0.3, False, (10, 5), 0.0, None, True, False)  # positional, flash-attn order
    assert torch.equal(c, samebits.attention(q, k, v, softmax_scale=0.3, window_size=(10, 5)))


def test_func_return_attn_probs(gen):
    q, k, v = (randn(1, 20, 2, 32, dtype=torch.float16, gen=gen) for _ in range(3))
    out, lse, probs = flash_attn_func(q, k, v, return_attn_probs=True)
    assert probs is None and lse.shape == (1, 2, 20) and lse.dtype == torch.float32
    assert torch.equal(out, flash_attn_func(q, k, v))


def test_func_copies_non_unit_last_stride_and_differentiates(gen):
    q, k, v = (randn(1, 20, 2, 32, dtype=torch.float32, gen=gen) for _ in range(3))
    qt = q.transpose(1, 3).contiguous().transpose(1, 3).requires_grad_()
    out = flash_attn_func(qt, k, v, causal=True)
    assert torch.equal(out, samebits.attention(q, k, v, causal=True))
    out.sum().backward()
    assert qt.grad is not None and qt.grad.shape == q.shape


def test_varlen_func(gen):
    cu = torch.tensor([0, 3, 20], dtype=torch.int32)
    q, k, v = (randn(20, 4, 32, dtype=torch.bfloat16, gen=gen) for _ in range(3))
    out, lse, probs = flash_attn_varlen_func(q, k, v, cu, cu, 17, 17, causal=True, return_attn_probs=True)
    assert lse.shape == (4, 20) and probs is None
    assert torch.equal(out[3:], samebits.attention(q[None, 3:], k[None, 3:], v[None, 3:], causal=True)[0])


def test_with_kvcache_int_seqlens_and_lse(gen):
    q = randn(2, 1, 4, 64, dtype=torch.bfloat16, gen=gen)
    kc, vc = (randn(2, 40, 2, 64, dtype=torch.bfloat16, gen=gen) for _ in range(2))
    kn, vn = (randn(2, 1, 2, 64, dtype=torch.bfloat16, gen=gen) for _ in range(2))
    kc2, vc2 = kc.clone(), vc.clone()
    out, lse = flash_attn_with_kvcache(q, kc, vc, kn, vn, cache_seqlens=10, causal=True, num_splits=4,
                                       return_softmax_lse=True)
    assert lse.shape == (2, 4, 1)
    assert torch.equal(kc[:, 10:11], kn) and torch.equal(vc[:, 10:11], vn)
    ref = samebits.attention_with_kvcache(q, kc2, vc2, kn, vn, cache_seqlens=torch.full((2,), 10, dtype=torch.int32),
                                          causal=True)
    assert torch.equal(out, ref)
    full = flash_attn_with_kvcache(q, kc, vc)  # no cache_seqlens: the whole cache
    assert torch.equal(full, samebits.attention(q, kc, vc))
