"""torch.compile: a small transformer block using samebits attention gives
the same bits compiled as eager, forward and backward."""

import pytest
import torch
import torch.nn as nn

import samebits
from conftest import dispatched


class Block(nn.Module):
    """Pre-norm attention + MLP block. `exact=True` uses only parts whose bits
    inductor reproduces (extern matmuls, residual adds, ReLU); RMSNorm and
    GELU (and bias gradients, which are sums) are recomputed by inductor's own
    fused kernels in another order, so
    with them compiled == eager holds for samebits' op but not for the block."""

    def __init__(self, dim=64, heads=4, kv_heads=2, exact=True):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.norm1 = nn.Identity() if exact else nn.RMSNorm(dim)
        self.norm2 = nn.Identity() if exact else nn.RMSNorm(dim)
        self.qkv = nn.Linear(dim, (heads + 2 * kv_heads) * self.hd, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim, bias=not exact), nn.ReLU() if exact else nn.GELU(),
                                 nn.Linear(2 * dim, dim, bias=not exact))

    def forward(self, x):
        B, L, _ = x.shape
        qkv = self.qkv(self.norm1(x)).view(B, L, self.heads + 2 * self.kv_heads, self.hd)
        q, k, v = qkv.split([self.heads, self.kv_heads, self.kv_heads], dim=2)
        a = samebits.attention(q, k, v, causal=True)
        x = x + self.proj(a.reshape(B, L, -1))
        return x + self.mlp(self.norm2(x))


def _attn_only(q, k, v):
    return samebits.attention(q, k, v, causal=True, softcap=10.0, return_lse=True)


@pytest.fixture(autouse=True)
def _reset():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_op_compiled_fullgraph_equals_eager():
    q, k, v = (torch.randn(2, 70, 4, 64, dtype=torch.bfloat16) for _ in range(3))
    eager = _attn_only(q, k, v)
    compiled = torch.compile(_attn_only, fullgraph=True)(q, k, v)
    for a, b in zip(eager, compiled):
        assert torch.equal(a, b)


@pytest.mark.parametrize("mode", ["default", "max-autotune"])
def test_block_compiled_equals_eager(mode):
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 40, 64)
    # The comparison is bitwise for the whole block; the matmuls are the same
    # extern kernels in both, so any difference would come from samebits.
    eager = block(x)
    compiled = torch.compile(block, mode=mode, fullgraph=True)(x)
    assert torch.equal(compiled, eager)


def test_block_backward_compiled():
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 40, 64, requires_grad=True)
    g = torch.randn(2, 40, 64)
    params = [x] + list(block.parameters())
    out_e = block(x)
    grads_e = torch.autograd.grad(out_e, params, g)
    out_c = torch.compile(block, fullgraph=True)(x)
    grads_c = torch.autograd.grad(out_c, params, g)
    assert torch.equal(out_c, out_e)
    for ge, gc in zip(grads_e, grads_c):
        assert torch.equal(ge, gc)


def test_attention_backward_compiled():
    q, k, v = (torch.randn(2, 33, 4, 32, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    dout = torch.randn(2, 33, 4, 32, dtype=torch.bfloat16)

    def f(q, k, v):
        return samebits.attention(q, k, v, window_size=(9, 0), softcap=5.0)

    ge = torch.autograd.grad(f(q, k, v), (q, k, v), dout)
    gc = torch.autograd.grad(torch.compile(f, fullgraph=True)(q, k, v), (q, k, v), dout)
    for a, b in zip(ge, gc):
        assert torch.equal(a, b)


def test_full_block_compiles():
    # RMSNorm + GELU: compiles in one graph; close to eager, not bitwise (see Block)
    torch.manual_seed(0)
    block = Block(exact=False)
    x = torch.randn(2, 40, 64)
    torch.testing.assert_close(torch.compile(block, fullgraph=True)(x), block(x))


def test_kvcache_compiled():
    q = torch.randn(2, 1, 4, 32)
    kc, vc = torch.randn(2, 50, 2, 32), torch.randn(2, 50, 2, 32)
    kn, vn = torch.randn(2, 1, 2, 32), torch.randn(2, 1, 2, 32)
    lens = torch.tensor([7, 30], dtype=torch.int32)

    def step(q, kc, vc, kn, vn, lens):
        return samebits.attention_with_kvcache(q, kc, vc, kn, vn, cache_seqlens=lens, causal=True)

    kc2, vc2 = kc.clone(), vc.clone()
    eager = step(q, kc, vc, kn, vn, lens)
    compiled = torch.compile(step, fullgraph=True)(q, kc2, vc2, kn, vn, lens)
    assert torch.equal(eager, compiled)
    assert torch.equal(kc, kc2) and torch.equal(vc, vc2)  # the in-place append happened under compile too


def test_kvcache_eager_fast_path_is_the_op():
    """attention_with_kvcache skips the dispatcher for plain eager calls: the
    same bits and the same cache writes as torch.ops.samebits.attn_kvcache,
    the caches' version counters bumped as the op would, and the op itself
    used where the shortcut would be wrong (a tensor autograd tracks)."""
    q = torch.randn(2, 3, 4, 32)
    kc, vc = torch.randn(2, 50, 2, 32), torch.randn(2, 50, 2, 32)
    kn, vn = torch.randn(2, 3, 2, 32), torch.randn(2, 3, 2, 32)
    lens = torch.tensor([7, 30], dtype=torch.int32)
    kc2, vc2 = kc.clone(), vc.clone()
    v0 = (kc._version, vc._version)
    out, lse = samebits.attention_with_kvcache(q, kc, vc, kn, vn, cache_seqlens=lens, causal=True, return_lse=True)
    assert kc._version > v0[0] and vc._version > v0[1]
    out2, lse2 = torch.ops.samebits.attn_kvcache(q, kc2, vc2, kn, vn, lens, None, 32 ** -0.5, 0.0, -1, 0, None)
    assert torch.equal(out, out2) and torch.equal(lse, lse2)
    assert torch.equal(kc, kc2) and torch.equal(vc, vc2)
    assert not torch.equal(out, torch.zeros_like(out))  # negative control: a real result was compared
    # the op is not differentiable: with q tracked by autograd the shortcut
    # must not hide that (the dispatched op refuses a backward through it)
    qg = q.clone().requires_grad_(True)
    out3 = samebits.attention_with_kvcache(qg, kc.clone(), vc.clone(), cache_seqlens=lens, causal=True)
    assert out3.grad_fn is not None
    with pytest.raises(RuntimeError, match="no autograd formula"):
        out3.sum().backward()


def _grads_via_ops(q, k, v, dout, cu=None, **kw):
    """Forward and backward through torch.ops.samebits (the dispatched ops)."""
    args = (q, k, v, cu, cu, 0, 0, kw["scale"], kw.get("softcap", 0.0), kw["wl"], kw["wr"])
    out, lse = torch.ops.samebits.attn_fwd(*args)
    dq, dk, dv = torch.ops.samebits.attn_bwd(dout, *args[:3], out, lse, *args[3:])
    return out, lse, dq, dk, dv


@pytest.mark.parametrize("case", ["dense", "dense_window_softcap", "varlen"])
def test_attention_eager_fast_path_is_the_op(case):
    """attention() and attention_varlen() run the ops' bodies through one
    autograd.Function for plain eager calls: out, lse and the gradients equal
    the dispatched ops' bit for bit; the fast path is the one taken; the op
    is taken where the fast path would be wrong (torch.compile is covered by
    the tests above, a dispatch mode here)."""
    g = torch.Generator().manual_seed(3)
    H, Hk, D = 4, 2, 32
    kw = dict(scale=D ** -0.5, wl=-1, wr=0)
    call = dict(causal=True, return_lse=True)
    if case == "dense_window_softcap":
        kw.update(wl=5, softcap=7.0)
        call.update(window_size=(5, -1), softcap=7.0)
    if case == "varlen":
        cu = torch.tensor([0, 5, 24, 25], dtype=torch.int32)  # lengths 5, 19, 1
        q, k, v = (torch.randn(25, h, D, generator=g) for h in (H, Hk, Hk))
        fn = lambda q, k, v: samebits.attention_varlen(q, k, v, cu, cu, **call)
    else:
        cu = None
        q = torch.randn(2, 9, H, D, generator=g)  # Lq < Lk: bottom-right causal
        k, v = (torch.randn(2, 13, Hk, D, generator=g) for _ in range(2))
        fn = lambda q, k, v: samebits.attention(q, k, v, **call)
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    out, lse = fn(qg, kg, vg)
    assert type(out.grad_fn).__name__ == "samebits_attn_fwd_eagerBackward"  # the fast path ran
    dout = torch.randn(out.shape, generator=g)
    grads = torch.autograd.grad(out, (qg, kg, vg), dout)
    want = _grads_via_ops(q, k, v, dout, cu, **kw)
    got = (out, lse) + tuple(grads)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    # negative control: one changed key changes the gradients compared above
    k2 = k.clone()
    k2.view(-1)[7] += 0.5
    other = _grads_via_ops(q, k2, v, dout, cu, **kw)
    assert not torch.equal(other[2], want[2])
    # without autograd the body runs alone (no graph), same bits
    with torch.no_grad():
        out_ng, lse_ng = fn(qg, kg, vg)
    assert out_ng.grad_fn is None and torch.equal(out_ng, out) and torch.equal(lse_ng, lse)
    # under a dispatch mode the dispatched op runs (and gives the same bits)
    (out_m, _), seen = dispatched(lambda: fn(q, k, v))
    assert any("samebits.attn_fwd" in o for o in seen)
    assert torch.equal(out_m, out)
