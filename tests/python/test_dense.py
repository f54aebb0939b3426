"""Dense ops on the CPU backend: accuracy, row invariance, determinism, the
batch-invariant mode (eager and torch.compile) and a negative control.

The GPU counterpart of these checks is bench/bench_dense.py (run on a device
machine; results in docs/benchmarks_dense.md)."""

from __future__ import annotations

import hashlib

import pytest
import torch
import torch.nn.functional as F

from samebits import dense as D
from samebits import mode as Mode

from conftest import dispatched
from numerics_ref import (cpu_softmax_backward_in_order, cpu_softmax_in_order, lane16_row_sums, rmsnorm_dw_in_order,
                          row_ops_in_order, tree256_row_sums)

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
BUCKETS = [1, 2, 7, 64, 513, 4096]


def _rel(x, ref):
    return ((x.double() - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def _hash(*ts):
    m = hashlib.sha256()
    for t in ts:
        m.update(t.detach().contiguous().view(torch.uint8).numpy().tobytes())
    return m.hexdigest()


def _bound(torch_err: float, dtype) -> float:
    # samebits accumulates in fp32 like torch; allow 2x torch's own error at
    # this precision, plus a floor for results torch happens to round exactly.
    floor = {torch.float32: 1e-6, torch.float16: 1e-4, torch.bfloat16: 1e-3}[dtype]
    return 2.0 * torch_err + floor


# --------------------------------------------------------------- accuracy
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_gemm_accuracy(dtype, layout):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(33, 200, generator=g).to(dtype)
    w = (torch.randn(70, 200, generator=g) / 14).to(dtype)
    bias = torch.randn(70, generator=g).to(dtype)
    ref = a.double() @ w.double().T + bias.double()
    out = D.linear(a, w, bias) if layout == "nk" else D.addmm(bias, a, w.t().contiguous())
    assert out.dtype == dtype and out.shape == (33, 70)
    assert _rel(out, ref) <= _bound(_rel(F.linear(a, w, bias), ref), dtype)


def test_gemm_batched_and_alpha_beta():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(3, 5, 40, generator=g), torch.randn(3, 40, 9, generator=g)
    assert _rel(D.matmul(a, b), a.double() @ b.double()) < 1e-6
    c, m1, m2 = torch.randn(5, 9, generator=g), a[0], b[0]
    ref = 0.5 * c.double() + 2.0 * (m1.double() @ m2.double())
    assert _rel(D.addmm(c, m1, m2, beta=0.5, alpha=2.0), ref) < 1e-6


@pytest.mark.parametrize("dtype", DTYPES)
def test_rowops_accuracy(dtype):
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(64, 300, generator=g) * 3).to(dtype)
    w = torch.randn(300, generator=g).to(dtype)
    xd = x.double()
    cases = [
        (D.rms_norm(x, w, 1e-6), F.rms_norm(x, (300,), w, 1e-6),
         xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()),
        (D.softmax(x), x.softmax(-1), xd.softmax(-1)),
        (D.log_softmax(x), x.log_softmax(-1), xd.log_softmax(-1)),
        (D.sum(x), x.sum(-1), xd.sum(-1)),
        (D.mean(x, dtype=torch.float32), x.mean(-1, dtype=torch.float32), xd.mean(-1)),
    ]
    for ours, theirs, ref in cases:
        assert ours.dtype == theirs.dtype
        assert _rel(ours, ref) <= _bound(_rel(theirs, ref), dtype)


def test_backward_matches_autograd_reference():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(17, 50, generator=g, dtype=torch.float64).float().requires_grad_()
    w = torch.randn(50, generator=g).requires_grad_()
    r = torch.randn(17, 50, generator=g).requires_grad_()
    dy = torch.randn(17, 50, generator=g)
    w2 = torch.randn(50, 50, generator=g).requires_grad_()
    for ours, theirs, inputs in (
        (lambda: D.rms_norm(x, w, 1e-5), lambda: F.rms_norm(x, (50,), w, 1e-5), (x, w)),
        (lambda: D.add_rms_norm(x, r, w, 1e-5)[0], lambda: F.rms_norm(x + r, (50,), w, 1e-5), (x, r, w)),
        (lambda: D.softmax(x), lambda: x.softmax(-1), (x,)),
        (lambda: D.log_softmax(x), lambda: x.log_softmax(-1), (x,)),
        (lambda: D.linear(x, w2, w), lambda: F.linear(x, w2, w), (x, w2, w)),
        (lambda: D.mean(x, 0).unsqueeze(0).expand(17, 50), lambda: x.mean(0).expand(17, 50), (x,)),
    ):
        go = torch.autograd.grad(ours(), inputs, dy)
        gt = torch.autograd.grad(theirs(), inputs, dy)
        for a, b in zip(go, gt):
            assert _rel(a, b.double()) < 1e-5


# --------------------------------------------------------------- invariance
def _row_ops(K=64, N=48):
    g = torch.Generator().manual_seed(4)
    w = (torch.randn(N, K, generator=g) / 8).to(torch.bfloat16)
    b = torch.randn(N, generator=g).to(torch.bfloat16)
    rw = torch.randn(K, generator=g).to(torch.bfloat16)
    return {
        "linear": lambda x: D.linear(x, w, b),
        "mm_kn": lambda x: D.matmul(x, w.t().contiguous()),
        "rms_norm": lambda x: D.rms_norm(x, rw, 1e-6),
        "add_rms_norm": lambda x: D.add_rms_norm(x, x.flip(-1), rw, 1e-6)[0],
        "softmax": D.softmax,
        "log_softmax": D.log_softmax,
        "sum": D.sum,
        "mean": lambda x: D.mean(x, dtype=torch.float32),
    }


@pytest.mark.parametrize("name", list(_row_ops().keys()))
def test_row_invariance_bitwise(name):
    fn = _row_ops()[name]
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(max(BUCKETS) + 3, 64, generator=g) * 2).to(torch.bfloat16)
    full = fn(x)
    for M in BUCKETS:
        for off in (0, 3):
            assert torch.equal(fn(x[off:off + M]), full[off:off + M]), (name, M, off)


def test_rmsnorm_backward_dx_row_invariant_and_dw_deterministic():
    g = torch.Generator().manual_seed(6)
    x = torch.randn(600, 40, generator=g)
    w = torch.randn(40, generator=g)
    dy = torch.randn(600, 40, generator=g)

    def grads(xs, dys):
        xs = xs.clone().requires_grad_()
        ws = w.clone().requires_grad_()
        return torch.autograd.grad(D.rms_norm(xs, ws, 1e-6), (xs, ws), dys)

    dx_full, _ = grads(x, dy)
    for M in (1, 7, 64, 513):
        assert torch.equal(grads(x[:M], dy[:M])[0], dx_full[:M])
    assert len({_hash(*grads(x, dy)) for _ in range(10)}) == 1


def test_runs_give_one_hash_and_threads_do_not_matter():
    ops = _row_ops()
    g = torch.Generator().manual_seed(7)
    x = torch.randn(300, 64, generator=g).to(torch.bfloat16)
    ref = _hash(*(fn(x) for fn in ops.values()))
    hashes = set()
    for i in range(10):
        torch.set_num_threads(1 + i % 2)  # torch threads only; samebits' own split is by rows
        hashes.add(_hash(*(fn(x) for fn in ops.values())))
    assert hashes == {ref}


def test_negative_control_detects_a_batch_variant_reduction():
    # A reduction whose order follows the batch: each row summed in chunks of
    # M (a split count that depends on the batch). The check must fail on it.
    g = torch.Generator().manual_seed(8)
    x = torch.randn(64, 4099, generator=g)

    def variant_sum(t):
        chunks = max(1, t.shape[0])
        return torch.stack([c.sum(-1) for c in t.tensor_split(chunks, dim=-1)], -1).sum(-1)

    full = variant_sum(x)
    assert not all(torch.equal(variant_sum(x[:M]), full[:M]) for M in (1, 7, 64))
    ours_full = D.sum(x)
    assert all(torch.equal(D.sum(x[:M]), ours_full[:M]) for M in (1, 7, 64))


# --------------------------------------------------------------- the mode
class _Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n = torch.nn.RMSNorm(32)
        self.up = torch.nn.Linear(32, 64)
        self.down = torch.nn.Linear(64, 32, bias=False)

    def forward(self, x):
        h = x + self.down(torch.relu(self.up(self.n(x))))  # relu: exact in eager and Inductor
        s = torch.bmm(h, h.transpose(1, 2))
        a = torch.bmm(torch.softmax(s, -1), h)
        return torch.log_softmax(self.up(a), -1).mean(-1, keepdim=True) + torch.sum(a, dim=-1, keepdim=True)


def test_mode_routes_listed_ops_and_leaves_others():
    a, b = torch.randn(5, 8, requires_grad=True), torch.randn(8, 3)
    with Mode.set_batch_invariant_mode(devices=("cpu",)):
        assert Mode.is_batch_invariant_mode_enabled()
        assert "samebits" in type(torch.mm(a, b).grad_fn).__name__
        assert "samebits" in type(torch.softmax(a, -1).grad_fn).__name__
        assert "samebits" in type(a.sum(-1).grad_fn).__name__
        assert "samebits" in type(F.rms_norm(a, (8,)).grad_fn).__name__
        assert "samebits" not in type(torch.exp(a).grad_fn).__name__
        # not routed, no gradient needed: PyTorch's kernel
        assert torch.arange(10).sum(0).item() == 45
        assert torch.ones(2, 2, dtype=torch.float64).mm(torch.ones(2, 2, dtype=torch.float64)).sum() == 8
        # not routed but a gradient is needed: a clear error, never a silent fallback
        with pytest.raises(NotImplementedError, match="batch-invariant mode"):
            torch.ones(2, 2, dtype=torch.float64, requires_grad=True).mm(torch.ones(2, 2, dtype=torch.float64))
        with torch.inference_mode():  # autograd keys skipped: the backend key still routes
            assert torch.equal(torch.mm(a.detach(), b), D.matmul(a.detach(), b))
    assert not Mode.is_batch_invariant_mode_enabled()
    assert "Mm" in type(torch.mm(a, b).grad_fn).__name__


def test_mode_model_invariant_eager_and_compiled():
    torch.manual_seed(0)
    model = _Tiny()
    x = torch.randn(16, 12, 32)
    with Mode.set_batch_invariant_mode(devices=("cpu",)):
        full = model(x)
        for M in (1, 2, 7):
            assert torch.equal(model(x[:M]), full[:M])
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="inductor")
        assert torch.equal(compiled(x), full)
        xs = x.clone().requires_grad_()
        gx = torch.autograd.grad(compiled(xs).sum(), xs)[0]
        gx_eager = torch.autograd.grad(model(xs).sum(), xs)[0]
        assert torch.equal(gx, gx_eager)
    torch._dynamo.reset()


def test_mode_context_restores_previous_state():
    Mode.enable_batch_invariant_mode(devices=("cpu",))
    try:
        with Mode.set_batch_invariant_mode(False):
            assert not Mode.is_batch_invariant_mode_enabled()
        assert Mode.is_batch_invariant_mode_enabled()
    finally:
        Mode.disable_batch_invariant_mode()
    with pytest.raises(ValueError):
        Mode.enable_batch_invariant_mode(devices=("xpu",))


def test_clear_errors():
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        D.softmax(torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="do not match"):
        D.matmul(torch.ones(2, 3), torch.ones(4, 2))
    x = torch.ones(4, 8)
    with pytest.raises(IndexError, match="log_softmax: dim 5 is out of range for a 2-D tensor"):
        D.log_softmax(x, 5)
    with pytest.raises(IndexError, match="sum: dim -3 is out of range"):
        D.sum(x, -3)
    with pytest.raises(ValueError, match="mean: dims .* more than once"):
        D.mean(x, [1, -1])
    with pytest.raises(TypeError, match="softmax: dim must be an int"):
        D.softmax(x, 1.0)
    with pytest.raises(ValueError, match="add_rms_norm: residual of shape \\(4, 7\\) does not broadcast"):
        D.add_rms_norm(x, torch.ones(4, 7))
    with pytest.raises(ValueError, match="bias of shape \\(5,\\) does not broadcast to the output's shape \\(4, 2\\)"):
        D.addmm(torch.ones(5), x, torch.ones(8, 2))
    with pytest.raises(ValueError, match="bias of shape \\(3, 1, 2\\) does not broadcast"):
        D.addmm(torch.ones(3, 1, 2), torch.ones(2, 4, 8), torch.ones(2, 8, 2))
    with pytest.raises(ValueError, match="add_rms_norm: weight must have shape \\(8,\\), got \\(7,\\)"):
        D.add_rms_norm(x, x, torch.ones(7))
    with pytest.raises(ValueError, match="linear: weight must be 2-D"):
        D.linear(x, torch.ones(2, 5, 8))
    # another device's memory never reaches a kernel (meta: a device without memory)
    meta = torch.ones(8, device="meta")
    with pytest.raises(ValueError, match="rms_norm: weight is on meta but the input is on cpu"):
        D.rms_norm(x, meta)
    with pytest.raises(ValueError, match="add_rms_norm: residual is on meta"):
        D.add_rms_norm(x, torch.ones(4, 8, device="meta"))
    with pytest.raises(ValueError, match="gemm: bias is on meta"):
        D.addmm(torch.ones(4, 2, device="meta"), x, torch.ones(8, 2))
    with pytest.raises(ValueError, match="gemm: b is on meta"):
        D.gemm(x, torch.ones(8, 2, device="meta"), None, 1.0, 0.0)  # the op body, as the mode calls it


def test_gemm_bias_broadcasts_in_every_dim():
    # A bias that broadcasts in any dim (a batched one included) gives the
    # bits of the same bias materialized at the output's shape.
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(2, 3, 40, generator=g), torch.randn(2, 40, 5, generator=g)
    for shape in ((), (5,), (3, 1), (1, 1, 1), (2, 3, 1), (2, 1, 5), (1, 3, 5), (2, 3, 5)):
        bias = torch.randn(shape, generator=g)
        got = D.addmm(bias, a, b, beta=0.5)
        assert torch.equal(got, D.addmm(bias.expand(2, 3, 5).contiguous(), a, b, beta=0.5)), shape


def test_mode_leaves_invalid_arguments_to_pytorch():
    # Under the mode, arguments PyTorch rejects get PyTorch's own error (no
    # fallback warning, strict or not), never a samebits kernel on operands
    # that do not fit (it would read past them) nor a reduction over another
    # dim. The valid calls beside them still run samebits' kernels.
    import warnings

    x = torch.randn(4, 8, requires_grad=True)
    f32, bf16 = torch.float32, torch.bfloat16
    bad = [
        (IndexError, lambda: torch.sum(x, 5)),
        (IndexError, lambda: x.mean(-3)),
        (IndexError, lambda: torch.ops.aten._softmax(x, 2, False)),
        (RuntimeError, lambda: torch.sum(x, (1, -1))),
        (RuntimeError, lambda: torch.mm(torch.randn(3, 4), torch.randn(5, 2))),
        (RuntimeError, lambda: torch.mm(torch.randn(3, 4), torch.randn(4, 2, dtype=bf16))),
        (RuntimeError, lambda: torch.bmm(torch.randn(3, 3, 4), torch.randn(2, 4, 5))),
        (RuntimeError, lambda: torch.bmm(torch.randn(2, 3, 4), torch.randn(2, 5, 5))),
        (RuntimeError, lambda: torch.addmm(torch.randn(5), torch.randn(3, 4), torch.randn(4, 2))),
        (RuntimeError, lambda: torch.addmm(torch.randn(3, 2, dtype=bf16), torch.randn(3, 4), torch.randn(4, 2))),
        (RuntimeError, lambda: F.linear(torch.randn(3, 4), torch.randn(2, 5))),
        (RuntimeError, lambda: F.linear(torch.randn(3, 4), torch.randn(2, 4), torch.randn(3))),
        (RuntimeError, lambda: torch.rms_norm(torch.randn(3, 4), [5])),
        (RuntimeError, lambda: torch.rms_norm(torch.randn(3, 4), [4], torch.randn(5))),
    ]
    for strict in (False, True):
        with Mode.set_batch_invariant_mode(devices=("cpu",), strict=strict), warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, (err, call) in enumerate(bad):
                with pytest.raises(err):
                    call()
            a, b = torch.randn(3, 4, dtype=f32), torch.randn(4, 2, dtype=f32)
            assert torch.equal(torch.mm(a, b), D.matmul(a, b))


def test_mode_fallback_warns_and_strict_raises():
    """An unsupported floating-point case (float64 mm) runs PyTorch's kernel
    with a warning, or raises under strict=True; integer cases are exact and
    run PyTorch's kernel silently."""
    import warnings

    a, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)
    Mode._warned.discard("mm")
    with Mode.set_batch_invariant_mode(devices=("cpu",)):
        with pytest.warns(UserWarning, match="aten::mm"):
            out = torch.mm(a, b)
        assert torch.equal(out, a @ b)  # PyTorch's own kernel, not a wrong answer
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ints = torch.arange(12).view(3, 4)
            assert torch.equal(ints.sum(dim=1), torch.tensor([6, 22, 38]))
    with Mode.set_batch_invariant_mode(devices=("cpu",), strict=True):
        with pytest.raises(NotImplementedError, match="strict"):
            torch.mm(a, b)
    assert not Mode.is_batch_invariant_mode_enabled()


@pytest.mark.parametrize("case", ["linear_bias", "matmul_batched", "addmm_alpha_beta"])
def test_gemm_eager_fast_path_is_the_op(case):
    """Plain eager GEMM calls run samebits::gemm's body and formula without
    the dispatcher (dense.gemm): the same output and gradients, bit for bit,
    as the dispatched op, the fast path taken (its autograd node), the op
    taken under a dispatch mode, and a double backward through it."""
    g = torch.Generator().manual_seed(11)
    if case == "linear_bias":
        a, b, bias = torch.randn(9, 40, generator=g), torch.randn(24, 40, generator=g).t(), torch.randn(24, generator=g)
        alpha, beta, call = 1.0, 1.0, lambda a, b, bias: D.linear(a, b.t(), bias)
    elif case == "matmul_batched":
        a, b, bias = torch.randn(3, 9, 40, generator=g), torch.randn(3, 40, 24, generator=g), None
        alpha, beta, call = 1.0, 0.0, lambda a, b, bias: D.matmul(a, b)
    else:
        a, b, bias = torch.randn(9, 40, generator=g), torch.randn(40, 24, generator=g), torch.randn(9, 24, generator=g)
        alpha, beta, call = 0.5, 2.0, lambda a, b, bias: D.addmm(bias, a, b, beta=2.0, alpha=0.5)
    leaves = [t.clone().requires_grad_(True) if t is not None else None for t in (a, b, bias)]
    out = call(*leaves)
    assert type(out.grad_fn).__name__ in ("samebits_gemm_eagerBackward", "ViewBackward0", "ReshapeAliasBackward0")
    dy = torch.randn(out.shape, generator=g)
    got = (out,) + torch.autograd.grad(out, [t for t in leaves if t is not None], dy)
    ref_leaves = [t.clone().requires_grad_(True) if t is not None else None for t in (a, b, bias)]
    ref = D._gemm_op(*ref_leaves, alpha, beta).reshape(out.shape)
    want = (ref,) + torch.autograd.grad(ref, [t for t in ref_leaves if t is not None], dy)
    assert all(torch.equal(x, y) for x, y in zip(got, want))
    b2 = b.clone()
    b2[1, 2] += 1.0  # negative control: a changed weight changes what was compared
    assert not torch.equal(D._gemm_op(a, b2, bias, alpha, beta).reshape(out.shape), ref)
    with torch.no_grad():
        assert torch.equal(call(*leaves), out) and call(*leaves).grad_fn is None
    out_m, seen = dispatched(lambda: call(a, b, bias))
    assert any("samebits.gemm" in o for o in seen) and torch.equal(out_m, out)
    # second order: d/da of sum((a b)^2) through the eager path equals the op's
    a1, a2 = a.clone().requires_grad_(True), a.clone().requires_grad_(True)
    g1 = torch.autograd.grad(call(a1, b, bias).pow(2).sum(), a1, create_graph=True)[0]
    g2 = torch.autograd.grad(D._gemm_op(a2, b, bias, alpha, beta).pow(2).sum(), a2, create_graph=True)[0]
    h1, h2 = torch.autograd.grad(g1.sum(), a1)[0], torch.autograd.grad(g2.sum(), a2)[0]
    assert torch.equal(h1, h2)


@pytest.mark.parametrize("name", ["rms_norm", "add_rms_norm", "softmax", "log_softmax", "sum", "mean"])
def test_row_ops_eager_fast_path_is_the_op(name):
    """The row ops' plain eager calls run their custom op's body and formula
    without the dispatcher: output and gradients equal the dispatched op's
    bit for bit, and the fast path's autograd node is the one recorded."""
    g = torch.Generator().manual_seed(4)
    x, r, w = (torch.randn(6, 40, generator=g) for _ in range(3))
    w = w[0]
    calls = {
        "rms_norm": (lambda x, r, w: D.rms_norm(x, w), lambda x, r, w: D._rms_norm_op(x, w, 1e-6)[0]),
        "add_rms_norm": (lambda x, r, w: D.add_rms_norm(x, r, w)[0],
                         lambda x, r, w: D._add_rms_norm_op(x, r, w, 1e-6)[0]),
        "softmax": (lambda x, r, w: D.softmax(x), lambda x, r, w: D._softmax_op(x, False, x.dtype)),
        "log_softmax": (lambda x, r, w: D.log_softmax(x), lambda x, r, w: D._softmax_op(x, True, x.dtype)),
        "sum": (lambda x, r, w: D.sum(x), lambda x, r, w: D._reduce_op(x, False, x.dtype)),
        "mean": (lambda x, r, w: D.mean(x), lambda x, r, w: D._reduce_op(x, True, x.dtype)),
    }
    fast, op = calls[name]
    a = [t.clone().requires_grad_(True) for t in (x, r, w)]
    b = [t.clone().requires_grad_(True) for t in (x, r, w)]
    y1, y2 = fast(*a), op(*b)
    assert "_eagerBackward" in type(y1.grad_fn).__name__
    assert "_eager" not in type(y2.grad_fn).__name__
    dy = torch.randn(y1.shape, generator=g)
    used = [0, 1, 2] if name == "add_rms_norm" else ([0, 2] if name == "rms_norm" else [0])
    g1 = torch.autograd.grad(y1, [a[i] for i in used], dy)
    g2 = torch.autograd.grad(y2, [b[i] for i in used], dy)
    assert torch.equal(y1, y2) and all(torch.equal(p, q) for p, q in zip(g1, g2))
    x2 = x.clone()
    x2[2, 3] += 1.0  # negative control: a changed input changes what was compared
    assert not torch.equal(op(x2, r, w), y2)


# RMSNorm's weight gradient is pinned to the order docs/numerics_dense.md
# writes down, not only to itself: the CPU backend's dw equals an fp32
# re-computation in that order bit for bit (numerics_ref.rmsnorm_dw_in_order).
# Negative control: the same re-computation in chunks of 16 rows, or in one
# chunk, differs from it (at 600 and 1000 rows, with dw in fp32: rounded to
# 16 bits the orders' results mostly coincide).
@pytest.mark.parametrize("M,N", [(1, 40), (33, 64), (600, 40), (1000, 72)])
@pytest.mark.parametrize("dtype,wdtype", [(torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16),
                                          (torch.float16, torch.float16), (torch.bfloat16, torch.float32)])
def test_rmsnorm_dw_follows_the_documented_order(M, N, dtype, wdtype):

    g = torch.Generator().manual_seed(M * 131 + N)
    x = (torch.randn(M, N, generator=g) * 2).to(dtype)
    dy = torch.randn(M, N, generator=g).to(dtype)
    w = (1 + torch.randn(N, generator=g) / 4).to(wdtype)
    rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)[2]
    _, dw = D._rms_norm_bwd_op(dy, x, w, rstd, True)
    assert dw.dtype == wdtype
    assert torch.equal(dw, rmsnorm_dw_in_order(x, dy, rstd, wdtype))
    if M >= 600 and wdtype == torch.float32:
        assert not torch.equal(dw, rmsnorm_dw_in_order(x, dy, rstd, wdtype, chunk=16))
        assert not torch.equal(dw, rmsnorm_dw_in_order(x, dy, rstd, wdtype, chunk=M))


# The CPU row ops follow docs/numerics_dense.md to the bit: sum and mean (in
# fp32), RMSNorm's rstd, y and dx (and, with a residual, h, rstd and y) equal
# a re-computation by the documented formulas and lane-16 order
# (numerics_ref.row_ops_in_order). Negative control: the same re-computation
# with the sm90 order (numerics_ref.tree256_row_sums) differs somewhere.
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_ops_follow_the_documented_order(dtype):

    other = False
    for N in (1, 15, 16, 17, 40, 1000, 4099):
        g = torch.Generator().manual_seed(N)
        x = (torch.randn(5, N, generator=g) * 2).to(dtype)
        dy = torch.randn(5, N, generator=g).to(dtype)
        w = (1 + torch.randn(N, generator=g) / 4).to(dtype)
        want = row_ops_in_order(lane16_row_sums, x, w, dy, 1e-6)
        y, _, rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)
        got = {"sum": D.reduce_rows(x, False, torch.float32), "mean": D.reduce_rows(x, True, torch.float32),
               "rstd": rstd, "y": y, "dx": D._rms_norm_bwd_op(dy, x, w, rstd, False)[0]}
        for k, v in want.items():
            if v is not None:
                assert torch.equal(got[k], v), (k, N)
        r = torch.randn(5, N, generator=g).to(dtype)  # add + RMSNorm: h = round(x + r) normalized
        want_r = row_ops_in_order(lane16_row_sums, x, w, dy, 1e-6, residual=r)
        y, h, rstd = D._rmsnorm_fwd_impl(x, r, w, 1e-6)
        assert torch.equal(h, want_r["h"]) and torch.equal(rstd, want_r["rstd"]) and torch.equal(y, want_r["y"]), N
        vec = 16 // x.element_size()
        alt = row_ops_in_order(lambda t: tree256_row_sums(t, vec), x, w, dy, 1e-6)
        other |= any(not torch.equal(got[k], alt[k]) for k in ("sum", "mean", "rstd"))
    assert other


# The CPU GEMM follows docs/numerics_dense.md to the bit: out = alpha * S +
# beta * bias, S the lane-16 sum over k of the fp32-rounded products, one
# rounding to the output dtype. Negative control (fp32 out; rounded to 16
# bits the two orders' results coincide here): S summed left to right over
# k differs somewhere.
@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_follows_the_documented_order(dtype):

    other = False
    for k in (1, 15, 17, 100, 1000):
        g = torch.Generator().manual_seed(k)
        a = torch.randn(8, k, generator=g).to(dtype)
        b = torch.randn(k, 32, generator=g).to(dtype)
        bias = torch.randn(8, 32, generator=g).to(dtype)
        prods = (a.float()[:, :, None] * b.float()[None, :, :]).permute(0, 2, 1).reshape(256, k)
        s = lane16_row_sums(prods).view(8, 32)
        want = (torch.tensor(0.5) * s + torch.tensor(2.0) * bias.float()).to(dtype)
        got = D.addmm(bias, a, b, beta=2.0, alpha=0.5)
        assert torch.equal(got, want), k
        assert torch.equal(D.matmul(a, b), s.to(dtype)), k
        plain = torch.zeros(256)
        for q in range(k):
            plain = plain + prods[:, q]
        other |= not torch.equal(D.matmul(a, b), plain.view(8, 32).to(dtype))
    assert other or dtype != torch.float32


# The CPU softmax and log_softmax, forward and backward, follow
# docs/numerics_dense.md to the bit, down to the backend's own exp2 and
# log2 (numerics_ref.cpu_exp2, cpu_log2: the same operations in numpy). Negative
# control: torch's exp in their place changes some output.
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_follows_the_documented_order(dtype):

    other = False
    for N in (1, 17, 1000):
        g = torch.Generator().manual_seed(N + 3)
        x = (torch.randn(6, N, generator=g) * 4).to(dtype)
        if N > 1:
            x[1, ::3] = float("-inf")
        dy = torch.randn(6, N, generator=g).to(dtype)
        for log in (False, True):
            for out_dtype in (dtype, torch.float32):
                y = D._softmax_op(x, log, out_dtype)
                assert torch.equal(y, cpu_softmax_in_order(x, log, out_dtype)), (N, log, out_dtype)
                dx = D._softmax_bwd_op(y, dy.to(out_dtype), log, dtype)
                assert torch.equal(dx, cpu_softmax_backward_in_order(y, dy.to(out_dtype), log, dtype)), (N, log)
            if not log:
                xf = x.float()
                e = torch.exp(xf - xf.max(dim=1, keepdim=True).values)
                other |= not torch.equal(D._softmax_op(x, False, torch.float32), e / e.sum(dim=1, keepdim=True))
    assert other
