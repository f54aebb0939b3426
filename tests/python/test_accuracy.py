"""Accuracy vs an fp64 reference, bounded by what PyTorch's eager computation
in the input dtype makes against the same reference (conftest.bound)."""

import itertools

import pytest
import torch

import samebits
from conftest import DTYPE_IDS, DTYPES, bound, max_err, randn, ref_attention, ref_varlen

MASKS = {"full": (-1, -1), "causal": (-1, 0), "window": (40, 17), "causal_window": (57, 0)}
HEADS = {"mha": (4, 4), "gqa4": (8, 2), "gqa8": (16, 2), "mqa": (8, 1)}
SOFTCAPS = {"nocap": 0.0, "softcap": 15.0}


def _inputs(B, Lq, Lk, H, Hk, D, dtype, gen, q_scale=1.0):
    q = randn(B, Lq, H, D, dtype=dtype, gen=gen, scale=q_scale)
    k = randn(B, Lk, Hk, D, dtype=dtype, gen=gen)
    v = randn(B, Lk, Hk, D, dtype=dtype, gen=gen)
    return q, k, v


def check_forward(q, k, v, window, softcap):
    dtype, D = q.dtype, q.shape[-1]
    scale = D**-0.5
    out, lse = samebits.attention(q, k, v, softmax_scale=scale, window_size=window, softcap=softcap, return_lse=True)
    assert out.shape == q.shape and out.dtype == dtype
    assert lse.shape == (q.shape[0], q.shape[2], q.shape[1]) and lse.dtype == torch.float32
    ro, rl = ref_attention(q, k, v, scale=scale, softcap=softcap, window=window)
    po, pl = ref_attention(q, k, v, scale=scale, softcap=softcap, window=window, dtype=dtype)
    assert max_err(out, ro) <= bound(max_err(po, ro), ro, dtype)
    assert max_err(lse, rl) <= bound(max_err(pl, rl), rl, dtype)


def check_backward(q, k, v, window, softcap, gen):
    dtype, D = q.dtype, q.shape[-1]
    scale = D**-0.5
    dout = randn(*q.shape, dtype=dtype, gen=gen)
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    samebits.attention(*leaves, softmax_scale=scale, window_size=window, softcap=softcap).backward(dout)
    ref = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref_attention(*ref, scale=scale, softcap=softcap, window=window)[0].backward(dout.double())
    pt = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    ref_attention(*pt, scale=scale, softcap=softcap, window=window, dtype=dtype)[0].backward(dout)
    for name, a, r, p in zip("qkv", leaves, ref, pt):
        assert a.grad.dtype == dtype and a.grad.shape == a.shape
        err, err_pt = max_err(a.grad, r.grad), max_err(p.grad, r.grad)
        assert err <= bound(err_pt, r.grad, dtype), f"d{name}: {err} vs torch {err_pt}"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("softcap", SOFTCAPS)
@pytest.mark.parametrize("heads", HEADS)
def test_forward_features(dtype, mask, softcap, heads, gen):
    H, Hk = HEADS[heads]
    # Lq != Lk exercises the bottom-right alignment; 300 keys span 3 KV blocks.
    q, k, v = _inputs(2, 113, 300, H, Hk, 64, dtype, gen, q_scale=2.0)
    check_forward(q, k, v, MASKS[mask], SOFTCAPS[softcap])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("head_dim", [8, 16, 40, 64, 96, 128, 136, 192, 256])
def test_forward_head_dims(dtype, head_dim, gen):
    q, k, v = _inputs(1, 200, 200, 2, 1, head_dim, dtype, gen)
    check_forward(q, k, v, (-1, 0), 0.0)


@pytest.mark.parametrize(
    "dtype,L,D,window",
    [(torch.bfloat16, 4096, 64, (-1, 0)), (torch.float32, 1100, 128, (-1, -1)), (torch.float16, 2500, 128, (700, 0))],
    ids=["bf16-4096-causal", "fp32-1100-full", "fp16-2500-window"],
)
def test_forward_long(dtype, L, D, window, gen):
    q, k, v = _inputs(1, L, L, 1, 1, D, dtype, gen)
    check_forward(q, k, v, window, 0.0)


def test_forward_empty_rows(gen):
    # 64 queries over 16 keys, causal: the first 48 rows see no key.
    q, k, v = _inputs(1, 64, 16, 2, 2, 32, torch.float32, gen)
    out, lse = samebits.attention(q, k, v, causal=True, return_lse=True)
    assert torch.equal(out[:, :48], torch.zeros_like(out[:, :48]))
    assert torch.isinf(lse[..., :48]).all() and (lse[..., :48] > 0).all()
    check_forward(q, k, v, (-1, 0), 0.0)


def test_forward_strided_inputs(gen):
    # q, k, v as views of one packed qkv tensor: real strides, no copies.
    qkv = randn(2, 90, 3, 4, 64, dtype=torch.bfloat16, gen=gen)
    q, k, v = qkv.unbind(2)
    assert not q.is_contiguous()
    out = samebits.attention(q, k, v, causal=True)
    assert torch.equal(out, samebits.attention(q.contiguous(), k.contiguous(), v.contiguous(), causal=True))
    check_forward(q, k, v, (-1, 0), 0.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("softcap", SOFTCAPS)
def test_backward_features(dtype, mask, softcap, gen):
    q, k, v = _inputs(2, 97, 150, 8, 2, 64, dtype, gen, q_scale=2.0)
    check_backward(q, k, v, MASKS[mask], SOFTCAPS[softcap], gen)


@pytest.mark.parametrize(
    "dtype,head_dim,heads",
    [(torch.bfloat16, 8, (2, 2)), (torch.float16, 128, (4, 1)), (torch.bfloat16, 256, (2, 1)),
     (torch.float32, 136, (8, 1)), (torch.bfloat16, 64, (16, 2))],
    ids=["bf16-d8", "fp16-d128-mqa", "bf16-d256", "fp32-d136-mqa", "bf16-d64-gqa8"],
)
def test_backward_head_dims_and_groups(dtype, head_dim, heads, gen):
    q, k, v = _inputs(1, 130, 130, *heads, head_dim, dtype, gen)
    check_backward(q, k, v, (-1, 0), 0.0, gen)


def test_backward_long(gen):
    q, k, v = _inputs(1, 1500, 1500, 1, 1, 64, torch.bfloat16, gen)
    check_backward(q, k, v, (-1, 0), 0.0, gen)


# --- varlen ------------------------------------------------------------------


def _packed(lens_q, lens_k, H, Hk, D, dtype, gen):
    cu_q = torch.tensor([0] + list(itertools.accumulate(lens_q)), dtype=torch.int32)
    cu_k = torch.tensor([0] + list(itertools.accumulate(lens_k)), dtype=torch.int32)
    q = randn(int(cu_q[-1]), H, D, dtype=dtype, gen=gen)
    k = randn(int(cu_k[-1]), Hk, D, dtype=dtype, gen=gen)
    v = randn(int(cu_k[-1]), Hk, D, dtype=dtype, gen=gen)
    return q, k, v, cu_q, cu_k


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("heads,softcap", [((4, 4), 0.0), ((8, 1), 10.0), ((8, 2), 0.0)], ids=["mha", "mqa-cap", "gqa4"])
def test_varlen_forward_backward(dtype, mask, heads, softcap, gen):
    lens_q, lens_k = [1, 37, 0, 130, 64], [5, 37, 9, 200, 64]
    q, k, v, cu_q, cu_k = _packed(lens_q, lens_k, *heads, 32, dtype, gen)
    window, scale = MASKS[mask], 32**-0.5
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse = samebits.attention_varlen(*leaves, cu_q, cu_k, max(lens_q), max(lens_k), softmax_scale=scale,
                                         window_size=window, softcap=softcap, return_lse=True)
    assert out.shape == q.shape and lse.shape == (heads[0], q.shape[0])
    ro, rl = ref_varlen(q.double(), k.double(), v.double(), cu_q, cu_k, scale=scale, softcap=softcap, window=window)
    po, pl = ref_varlen(q, k, v, cu_q, cu_k, scale=scale, softcap=softcap, window=window, dtype=dtype)
    assert max_err(out, ro) <= bound(max_err(po, ro), ro, dtype)
    assert max_err(lse, rl) <= bound(max_err(pl, rl), rl, dtype)
    dout = randn(*q.shape, dtype=dtype, gen=gen)
    out.backward(dout)
    ref = [t.double().requires_grad_() for t in (q, k, v)]
    ref_varlen(*ref, cu_q, cu_k, scale=scale, softcap=softcap, window=window)[0].backward(dout.double())
    pt = [t.clone().requires_grad_() for t in (q, k, v)]
    ref_varlen(*pt, cu_q, cu_k, scale=scale, softcap=softcap, window=window, dtype=dtype)[0].backward(dout)
    for name, a, r, p in zip("qkv", leaves, ref, pt):
        err, err_pt = max_err(a.grad, r.grad), max_err(p.grad, r.grad)
        assert err <= bound(err_pt, r.grad, dtype), f"d{name}: {err} vs torch {err_pt}"


# --- KV cache ------------------------------------------------------------------


def _kvcache_case(B, H, Hk, D, dtype, lens, Lq, Lnew, page_size, capacity, gen):
    """Returns q, caches (contiguous or paged), new k/v, cache_seqlens,
    block_table and the logical keys/values each sequence ends with."""
    k_log = randn(B, capacity, Hk, D, dtype=dtype, gen=gen)
    v_log = randn(B, capacity, Hk, D, dtype=dtype, gen=gen)
    q = randn(B, Lq, H, D, dtype=dtype, gen=gen)
    seqlens = torch.tensor(lens, dtype=torch.int32)
    k_new = v_new = None
    if Lnew:
        k_new = torch.stack([k_log[b, lens[b]:lens[b] + Lnew] for b in range(B)])
        v_new = torch.stack([v_log[b, lens[b]:lens[b] + Lnew] for b in range(B)])
    # what the cache holds before the call: garbage beyond each length
    k_pre, v_pre = k_log.clone(), v_log.clone()
    for b in range(B):
        k_pre[b, lens[b]:] = 7.0
        v_pre[b, lens[b]:] = -7.0
    if page_size is None:
        return q, k_pre, v_pre, k_new, v_new, seqlens, None, k_log, v_log
    pages_per_seq = capacity // page_size
    num_pages = B * pages_per_seq + 3
    perm = torch.randperm(num_pages, generator=gen)[: B * pages_per_seq].to(torch.int32)
    table = perm.reshape(B, pages_per_seq)
    k_cache = torch.full((num_pages, page_size, Hk, D), 5.0, dtype=dtype)
    v_cache = torch.full((num_pages, page_size, Hk, D), -5.0, dtype=dtype)
    for b in range(B):
        for p in range(pages_per_seq):
            k_cache[table[b, p]] = k_pre[b, p * page_size:(p + 1) * page_size]
            v_cache[table[b, p]] = v_pre[b, p * page_size:(p + 1) * page_size]
    return q, k_cache, v_cache, k_new, v_new, seqlens, table, k_log, v_log


def _logical(cache, table, b, n):
    if table is None:
        return cache[b, :n]
    return torch.cat([cache[int(p)] for p in table[b]], 0)[:n]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("page_size", [None, 16, 64], ids=["contiguous", "paged16", "paged64"])
@pytest.mark.parametrize("Lq,Lnew,window", [(1, 1, (-1, 0)), (1, 0, (-1, -1)), (5, 5, (-1, 0)), (3, 3, (20, 0))],
                         ids=["decode-append", "decode-noappend", "verify5", "window"])
def test_kvcache(dtype, page_size, Lq, Lnew, window, gen):
    B, H, Hk, D, cap = 3, 8, 2, 64, 256
    lens = [0 if Lnew else 1, 100, 250 - Lnew]
    q, kc, vc, kn, vn, seqlens, table, k_log, v_log = _kvcache_case(B, H, Hk, D, dtype, lens, Lq, Lnew, page_size,
                                                                    cap, gen)
    scale = D**-0.5
    out, lse = samebits.attention_with_kvcache(q, kc, vc, kn, vn, cache_seqlens=seqlens, block_table=table,
                                               softmax_scale=scale, window_size=window, softcap=0.0, return_lse=True)
    assert torch.equal(seqlens, torch.tensor(lens, dtype=torch.int32)), "cache_seqlens must not change"
    for b in range(B):
        n = lens[b] + Lnew
        assert torch.equal(_logical(kc, table, b, n), k_log[b, :n]), "append wrote the wrong slots"
        assert torch.equal(_logical(vc, table, b, n), v_log[b, :n])
        qb, kb, vb = q[b:b + 1], k_log[b:b + 1, :n], v_log[b:b + 1, :n]
        ro, rl = ref_attention(qb, kb, vb, scale=scale, window=window)
        po, pl = ref_attention(qb, kb, vb, scale=scale, window=window, dtype=dtype)
        assert max_err(out[b:b + 1], ro) <= bound(max_err(po, ro), ro, dtype)
        assert max_err(lse[b:b + 1], rl) <= bound(max_err(pl, rl), rl, dtype)


def test_kvcache_softcap_mqa(gen):
    B, H, Hk, D, cap = 2, 4, 1, 128, 2048
    lens = [1500, 3]
    q, kc, vc, kn, vn, seqlens, table, k_log, v_log = _kvcache_case(B, H, Hk, D, torch.bfloat16, lens, 1, 1, 256,
                                                                    cap, gen)
    out = samebits.attention_with_kvcache(q, kc, vc, kn, vn, cache_seqlens=seqlens, block_table=table,
                                          causal=True, softcap=30.0)
    for b in range(B):
        n = lens[b] + 1
        args = (q[b:b + 1], k_log[b:b + 1, :n], v_log[b:b + 1, :n])
        ro, _ = ref_attention(*args, scale=D**-0.5, softcap=30.0)
        po, _ = ref_attention(*args, scale=D**-0.5, softcap=30.0, dtype=torch.bfloat16)
        assert max_err(out[b:b + 1], ro) <= bound(max_err(po, ro), ro, torch.bfloat16)
