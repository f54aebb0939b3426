"""Bitwise invariance (docs/numerics.md): torch.equal or hashes, never
allclose. Each family has a negative control showing the check can fail."""

import itertools

import pytest
import torch
import torch.nn.functional as F

import samebits
from conftest import bump_ulp, digest, randn

# (dtype, H, Hk, D, causal, window, softcap)
FEATURES = {
    "bf16-gqa4-causal": (torch.bfloat16, 8, 2, 64, True, (-1, -1), 0.0),
    "fp16-mqa-window": (torch.float16, 4, 1, 64, False, (33, 20), 0.0),
    "bf16-mha-softcap": (torch.bfloat16, 2, 2, 128, False, (-1, -1), 20.0),
    "fp32-gqa8-causal-window": (torch.float32, 8, 1, 32, True, (70, -1), 0.0),
    "bf16-d256-causal-softcap": (torch.bfloat16, 2, 1, 256, True, (-1, -1), 30.0),
}


def _opts(f):
    dtype, H, Hk, D, causal, window, softcap = f
    return dict(causal=causal, window_size=window, softcap=softcap)


def _qkv(B, Lq, Lk, f, gen):
    dtype, H, Hk, D = f[:4]
    return (randn(B, Lq, H, D, dtype=dtype, gen=gen), randn(B, Lk, Hk, D, dtype=dtype, gen=gen),
            randn(B, Lk, Hk, D, dtype=dtype, gen=gen))


def fwd_bwd(q, k, v, dout, **opts):
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out, lse = samebits.attention(*leaves, return_lse=True, **opts)
    out.backward(dout)
    return out.detach(), lse, leaves[0].grad, leaves[1].grad, leaves[2].grad


def fwd_bwd_varlen(q, k, v, cu_q, cu_k, dout, **opts):
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out, lse = samebits.attention_varlen(*leaves, cu_q, cu_k, return_lse=True, **opts)
    out.backward(dout)
    return out.detach(), lse, leaves[0].grad, leaves[1].grad, leaves[2].grad


def assert_same(a, b):
    for x, y in zip(a, b):
        assert torch.equal(x, y)


# --- runs ----------------------------------------------------------------------


def test_runs_one_hash(gen):
    f = FEATURES["bf16-gqa4-causal"]
    q, k, v = _qkv(2, 300, 300, f, gen)
    dout = randn(*q.shape, dtype=q.dtype, gen=gen)
    hashes = {digest(*fwd_bwd(q, k, v, dout, **_opts(f))) for _ in range(10)}
    assert len(hashes) == 1
    # negative control: one ulp in one visible key changes the hash
    assert digest(*fwd_bwd(q, bump_ulp(k, (1, 5, 0, 3)), v, dout, **_opts(f))) not in hashes


# --- batch composition -----------------------------------------------------------


@pytest.mark.parametrize("feature", FEATURES)
@pytest.mark.parametrize("L", [1, 7, 128, 500, 1000])
def test_batch_composition(feature, L, gen):
    f = FEATURES[feature]
    q, k, v = _qkv(1, L, L, f, gen)
    dout = randn(*q.shape, dtype=q.dtype, gen=gen)
    alone = fwd_bwd(q, k, v, dout, **_opts(f))
    for B in (2, 5) if L >= 500 else (2, 9, 64):
        nq, nk, nv = _qkv(B, L, L, f, gen)
        nd = randn(*nq.shape, dtype=q.dtype, gen=gen)
        pos = int(torch.randint(B, (1,), generator=gen))
        for t, src in ((nq, q), (nk, k), (nv, v), (nd, dout)):
            t[pos] = src[0]
        res = fwd_bwd(nq, nk, nv, nd, **_opts(f))
        assert_same(alone, [r[pos:pos + 1] for r in res])


@pytest.mark.parametrize("L", [2048, 4097])
def test_batch_composition_long(L, gen):
    f = FEATURES["bf16-gqa4-causal"]
    q, k, v = _qkv(1, L, L, f, gen)
    alone = samebits.attention(q, k, v, causal=True, return_lse=True)
    nq, nk, nv = _qkv(3, L, L, f, gen)
    nq[2], nk[2], nv[2] = q[0], k[0], v[0]
    inbatch = samebits.attention(nq, nk, nv, causal=True, return_lse=True)
    assert_same(alone, [r[2:3] for r in inbatch])
    # negative control: the same comparison sees one ulp of one query element
    bumped = samebits.attention(bump_ulp(nq, (2, L - 1, 0, 7)), nk, nv, causal=True, return_lse=True)
    assert not all(torch.equal(a, b[2:3]) for a, b in zip(alone, bumped))


# --- varlen packings ------------------------------------------------------------


@pytest.mark.parametrize("feature", ["bf16-gqa4-causal", "fp16-mqa-window", "bf16-mha-softcap"])
def test_varlen_packings(feature, gen):
    f = FEATURES[feature]
    dtype, H, Hk, D = f[:4]
    lens = [1, 7, 128, 300, 0, 64, 129]
    seqs = []
    for L in lens:
        q, k, v = _qkv(1, L, L, f, gen)
        seqs.append((q[0], k[0], v[0], randn(L, H, D, dtype=dtype, gen=gen)))
    alone = [fwd_bwd(s[0][None], s[1][None], s[2][None], s[3][None], **_opts(f)) for s in seqs]
    for trial in range(3):
        order = torch.randperm(len(seqs), generator=gen).tolist()
        cu = torch.tensor([0] + list(itertools.accumulate(lens[i] for i in order)), dtype=torch.int32)
        cat = [torch.cat([seqs[i][j] for i in order], 0) for j in range(4)]
        out, lse, dq, dk, dv = fwd_bwd_varlen(*cat[:3], cu, cu, cat[3], **_opts(f))
        for pos, i in enumerate(order):
            a, b = int(cu[pos]), int(cu[pos + 1])
            o, l, gq, gk, gv = alone[i]
            assert torch.equal(out[a:b], o[0]) and torch.equal(lse[:, a:b], l[0])
            assert torch.equal(dq[a:b], gq[0]) and torch.equal(dk[a:b], gk[0]) and torch.equal(dv[a:b], gv[0])


# --- decode == prefill, chunked prefill, pages ----------------------------------


def _paged(k_full, v_full, page_size, gen, extra_pages=5):
    """Scatter (B, cap, Hk, D) caches into randomly placed pages."""
    B, cap = k_full.shape[:2]
    per = (cap + page_size - 1) // page_size
    num_pages = B * per + extra_pages
    table = torch.randperm(num_pages, generator=gen)[: B * per].to(torch.int32).reshape(B, per)
    kc = randn(num_pages, page_size, *k_full.shape[2:], dtype=k_full.dtype, gen=gen)
    vc = randn(num_pages, page_size, *k_full.shape[2:], dtype=k_full.dtype, gen=gen)
    pad = per * page_size - cap
    kf = F.pad(k_full, (0, 0, 0, 0, 0, pad)) if pad else k_full
    vf = F.pad(v_full, (0, 0, 0, 0, 0, pad)) if pad else v_full
    for b in range(B):
        kc[table[b].long()] = kf[b].reshape(per, page_size, *k_full.shape[2:])
        vc[table[b].long()] = vf[b].reshape(per, page_size, *k_full.shape[2:])
    return kc, vc, table


@pytest.mark.parametrize("feature", FEATURES)
@pytest.mark.parametrize("page_size", [None, 16, 64, 256], ids=["contiguous", "p16", "p64", "p256"])
def test_decode_equals_prefill(feature, page_size, gen):
    f = FEATURES[feature]
    if not f[4]:  # decode is causal generation
        f = f[:4] + (True,) + f[5:]
    L = 1300 if feature == "bf16-gqa4-causal" else 200  # one case crosses the 1024-key split
    q, k, v = _qkv(1, L, L, f, gen)
    ref_out, ref_lse = samebits.attention(q, k, v, return_lse=True, **_opts(f))
    positions = sorted({0, 1, 127, 128, L - 1} | ({1023, 1024} if L > 1024 else set())
                       | set(torch.randint(L, (3,), generator=gen).tolist()))
    # a decode batch: the sequence under test plus random neighbours of random lengths
    B = int(torch.randint(2, 33, (1,), generator=gen))
    nk, nv = _qkv(B, 1, L, f, gen)[1:]
    nk[1], nv[1] = k[0], v[0]
    for t in positions:
        nq = randn(B, 1, f[1], f[3], dtype=f[0], gen=gen)
        nq[1] = q[0, t]
        lens = torch.randint(0, L, (B,), generator=gen).to(torch.int32)
        lens[1] = t
        kn = torch.stack([nk[b, int(lens[b])] for b in range(B)])[:, None]
        vn = torch.stack([nv[b, int(lens[b])] for b in range(B)])[:, None]
        if page_size is None:
            kc, vc, table = nk.clone(), nv.clone(), None
        else:
            kc, vc, table = _paged(nk, nv, page_size, gen)
        out, lse = samebits.attention_with_kvcache(nq, kc, vc, kn, vn, cache_seqlens=lens, block_table=table,
                                                   return_lse=True, **_opts(f))
        assert torch.equal(out[1, 0], ref_out[0, t]), f"t={t}"
        assert torch.equal(lse[1, :, 0], ref_lse[0, :, t]), f"t={t}"


@pytest.mark.parametrize("chunk", [1, 17, 128])
@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged64"])
@pytest.mark.parametrize("feature", ["bf16-gqa4-causal", "fp32-gqa8-causal-window", "bf16-d256-causal-softcap"])
def test_chunked_prefill(chunk, paged, feature, gen):
    f = FEATURES[feature]
    L = 300
    q, k, v = _qkv(1, L, L, f, gen)
    one_shot = samebits.attention(q, k, v, return_lse=True, **_opts(f))
    kc, vc = torch.zeros_like(k), torch.zeros_like(v)
    table = None
    if paged:
        kc, vc, table = _paged(kc, vc, 64, gen)
    outs, lses = [], []
    for s in range(0, L, chunk):
        e = min(s + chunk, L)
        seqlens = torch.tensor([s], dtype=torch.int32)
        o, l = samebits.attention_with_kvcache(q[:, s:e], kc, vc, k[:, s:e], v[:, s:e], cache_seqlens=seqlens,
                                               block_table=table, return_lse=True, **_opts(f))
        outs.append(o)
        lses.append(l)
    assert torch.equal(torch.cat(outs, 1), one_shot[0])
    assert torch.equal(torch.cat(lses, 2), one_shot[1])


def test_chunked_prefill_dense_queries(gen):
    # the same through the dense entry point: chunk rows against their key prefix
    f = FEATURES["fp16-mqa-window"]
    f = f[:4] + (True,) + f[5:]
    q, k, v = _qkv(1, 260, 260, f, gen)
    one_shot = samebits.attention(q, k, v, **_opts(f))
    parts = [samebits.attention(q[:, s:s + 17], k[:, :s + 17], v[:, :s + 17], **_opts(f)) for s in range(0, 260, 17)]
    assert torch.equal(torch.cat(parts, 1), one_shot)


def test_negative_control_torch_sdpa_decode_and_chunks(gen):
    """PyTorch's own CPU SDPA in bf16 is not prefill/decode invariant: the same
    torch.equal checks that pass for samebits above fail for it."""
    q, k, v = (randn(1, 4, 1000, 64, dtype=torch.bfloat16, gen=gen) for _ in range(3))
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    decode_differs = any(
        not torch.equal(F.scaled_dot_product_attention(q[:, :, t:t + 1], k[:, :, :t + 1], v[:, :, :t + 1]),
                        full[:, :, t:t + 1])
        for t in (5, 100, 257, 500, 999))
    mask = torch.ones(1000, 1000, dtype=torch.bool).tril()
    chunks = torch.cat([F.scaled_dot_product_attention(q[:, :, s:s + 17], k, v, attn_mask=mask[s:s + 17])
                        for s in range(0, 1000, 17)], 2)
    assert decode_differs or not torch.equal(chunks, full)


# --- threads -----------------------------------------------------------------------


def test_thread_count(gen):
    f = FEATURES["bf16-gqa4-causal"]
    q, k, v = _qkv(2, 400, 400, f, gen)
    dout = randn(*q.shape, dtype=q.dtype, gen=gen)
    hashes = []
    for n in (1, 2, 3):
        samebits.set_num_threads(n)
        hashes.append(digest(*fwd_bwd(q, k, v, dout, **_opts(f))))
    assert len(set(hashes)) == 1
    # negative control: the same hash sees one ulp of one query element
    assert digest(*fwd_bwd(bump_ulp(q, (1, 399, 7, 0)), k, v, dout, **_opts(f))) != hashes[0]


def test_max_seqlen_hint_never_matters(gen):
    f = FEATURES["bf16-mha-softcap"]
    cu = torch.tensor([0, 5, 205, 238], dtype=torch.int32)  # lengths 5, 200, 33
    q, k, v = (randn(238, 2, 128, dtype=torch.bfloat16, gen=gen) for _ in range(3))
    a = samebits.attention_varlen(q, k, v, cu, cu, 200, 200, return_lse=True, **_opts(f))
    b = samebits.attention_varlen(q, k, v, cu, cu, 4096, 1, return_lse=True, **_opts(f))
    c = samebits.attention_varlen(q, k, v, cu, cu, return_lse=True, **_opts(f))
    assert_same(a, b)
    assert_same(a, c)
