"""The CPU attention forward and backward follow docs/numerics.md to the
bit: out, LSE, dq, dk and dv equal a re-computation of the documented
procedure in Python, one rounded fp32 operation at a time
(numerics_ref.cpu_attention_in_order: the 8-lane dot, base-2 logits with or
without the softcap's tanh, the online softmax over KV blocks, the left fold
of the splits, the output step; numerics_ref.cpu_attention_backward_in_order:
P from the LSE, D, dS, G, and the accumulation orders of dq, dk, dv), with
the backend's exp2, log2 and tanh redone in numpy. Cases cross KV blocks and
splits (2100 keys: three splits of 1024), take both block sizes of the tile
table (head dims 8-128: 128 keys; 136-256: 64), GQA and MQA, causal and
two-sided window masks, the softcap, rows that see no key; and decode /
verify rows over a paged cache (after the append) equal the re-computation
of their sequence. Negative controls: the same procedure with one split
spanning every key, or with the dot summed left to right, changes some
output; the backward's dk summed over the group's heads in descending order
changes some dk."""

import pytest
import torch

import samebits
from numerics_ref import cpu_attention_backward_in_order, cpu_attention_in_order

CASES = [
    # (dtype, B, Lq, Lk, H, Hk, D, causal, window, softcap)
    (torch.bfloat16, 1, 40, 300, 4, 2, 64, True, (-1, -1), 0.0),
    (torch.float32, 2, 5, 2100, 2, 1, 64, False, (-1, -1), 0.0),
    (torch.float16, 1, 6, 2100, 2, 2, 128, True, (700, -1), 0.0),
    (torch.bfloat16, 1, 33, 200, 2, 1, 256, False, (-1, -1), 30.0),
    (torch.float32, 1, 20, 10, 1, 1, 64, True, (-1, -1), 0.0),  # rows 0-9 see no key
    (torch.float16, 1, 17, 150, 3, 1, 8, False, (-1, -1), 0.0),
    (torch.bfloat16, 1, 30, 260, 2, 2, 136, False, (50, 20), 0.0),  # 136: 64-key blocks
    (torch.float32, 2, 9, 70, 4, 1, 24, True, (-1, -1), 5.0),  # MQA
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{str(c[0])[6:]}-{c[2]}x{c[3]}-d{c[6]}")
def test_attention_forward_follows_the_documented_procedure(case):
    dtype, B, Lq, Lk, H, Hk, D, causal, window, softcap = case
    g = torch.Generator().manual_seed(Lq * 7 + Lk + D)
    q = (torch.randn(B, Lq, H, D, generator=g) * 1.5).to(dtype)
    k = torch.randn(B, Lk, Hk, D, generator=g).to(dtype)
    v = torch.randn(B, Lk, Hk, D, generator=g).to(dtype)
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    out, lse = samebits.attention(qg, kg, vg, causal=causal, window_size=window, softcap=softcap, return_lse=True)
    wl, wr = window
    if causal:
        wr = 0
    want_out, want_lse = cpu_attention_in_order(q, k, v, scale=D ** -0.5, softcap=softcap, window=(wl, wr))
    assert torch.equal(out, want_out)
    assert torch.equal(lse, want_lse)
    dout = torch.randn(B, Lq, H, D, generator=g).to(dtype)
    out.backward(dout)
    want = cpu_attention_backward_in_order(q, k, v, out.detach(), lse.detach(), dout, scale=D ** -0.5,
                                           softcap=softcap, window=(wl, wr))
    for name, got, w in zip(("dq", "dk", "dv"), (qg.grad, kg.grad, vg.grad), want):
        assert torch.equal(got, w), name


def test_the_procedure_test_can_fail():
    dtype, B, Lq, Lk, H, Hk, D, causal, window, softcap = CASES[1]
    g = torch.Generator().manual_seed(Lq * 7 + Lk + D)
    q = (torch.randn(B, Lq, H, D, generator=g) * 1.5).to(dtype)
    k = torch.randn(B, Lk, Hk, D, generator=g).to(dtype)
    v = torch.randn(B, Lk, Hk, D, generator=g).to(dtype)
    kg = k.clone().requires_grad_(True)
    out, lse = samebits.attention(q, kg, v, return_lse=True)
    for kw in ({"split": 4096}, {"plain_dot": True}):
        o2, l2 = cpu_attention_in_order(q, k, v, scale=D ** -0.5, **kw)
        assert not (torch.equal(out, o2) and torch.equal(lse, l2)), kw
    dout = torch.randn(B, Lq, H, D, generator=g).to(dtype)
    out.backward(dout)
    for desc in (False, True):
        dk = cpu_attention_backward_in_order(q, k, v, out.detach(), lse.detach(), dout, scale=D ** -0.5,
                                             heads_descending=desc)[1]
        assert torch.equal(kg.grad, dk) != desc


def test_decode_over_a_paged_cache_follows_the_documented_procedure():
    # Two sequences of 2100 and 700 cached keys in scattered 64-key pages, one
    # new key each appended, a decode row and a 3-row verify chunk: every row
    # equals the re-computation of its own sequence (the split fold and the
    # append included).
    dtype, D, Hk, H, ps = torch.bfloat16, 128, 2, 4, 64
    g = torch.Generator().manual_seed(17)
    lens = [2100, 700]
    pages = torch.randperm(80, generator=g).to(torch.int32)
    block_table = torch.stack([pages[:40], pages[40:80]])
    k_cache = torch.zeros(80, ps, Hk, D, dtype=dtype)
    v_cache = torch.zeros(80, ps, Hk, D, dtype=dtype)
    ks = [torch.randn(n + 3, Hk, D, generator=g).to(dtype) for n in lens]
    vs = [torch.randn(n + 3, Hk, D, generator=g).to(dtype) for n in lens]
    for b, n in enumerate(lens):
        for j in range(n):
            k_cache[block_table[b, j // ps], j % ps] = ks[b][j]
            v_cache[block_table[b, j // ps], j % ps] = vs[b][j]
    seqlens = torch.tensor(lens, dtype=torch.int32)
    for lnew in (1, 3):
        q = torch.randn(2, lnew, H, D, generator=g).to(dtype)
        kn = torch.stack([ks[b][lens[b]:lens[b] + lnew] for b in range(2)])
        vn = torch.stack([vs[b][lens[b]:lens[b] + lnew] for b in range(2)])
        out, lse = samebits.attention_with_kvcache(q, k_cache, v_cache, kn, vn, cache_seqlens=seqlens,
                                                   block_table=block_table, causal=True, return_lse=True)
        for b, n in enumerate(lens):
            kb, vb = ks[b][None, :n + lnew], vs[b][None, :n + lnew]
            wo, wl = cpu_attention_in_order(q[b:b + 1], kb, vb, scale=D ** -0.5, window=(-1, 0))
            assert torch.equal(out[b:b + 1], wo) and torch.equal(lse[b:b + 1], wl), (lnew, b)
