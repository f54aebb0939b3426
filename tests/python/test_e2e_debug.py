"""samebits.debug.find_divergence names the first module whose bits differ."""
import torch
from torch import nn

from samebits.debug import find_divergence
from samebits.models import CausalLM, ModelConfig


class RunVariant(nn.Module):
    """Deliberately not reproducible: adds a tiny amount that changes every call."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + 1e-3 * self.calls


class BatchVariant(nn.Module):
    """Deliberately not batch-invariant: each row's result depends on the batch size."""

    def forward(self, x):
        return x * (1.0 + 1e-3 * x.shape[0])


def net(mid):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), mid, nn.Linear(8, 4))


def loss(out):
    return out.square().sum()


def test_names_run_to_run_culprit():
    m = net(RunVariant())
    d = find_divergence(m, (torch.randn(5, 8),), loss_fn=loss)
    assert d.forward == "2" and d.parameter == "0.weight"
    assert "2" in str(d)


def test_names_batch_culprit_under_two_batchings():
    m = net(BatchVariant())
    x = torch.randn(6, 8)
    row0 = lambda name, t: t[:1]  # noqa: E731  compare only row 0, present in both batchings
    d = find_divergence(m, (x,), (x[:2],), view_a=row0, view_b=row0, loss_fn=lambda o: o[:1].square().sum())
    assert d.forward == "2"


class _NoisyGrad(torch.autograd.Function):
    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        _NoisyGrad.calls += 1
        return g * (1.0 + 1e-3 * _NoisyGrad.calls)


class BackwardVariant(nn.Module):
    """Forward is exact; the backward changes every run."""

    def forward(self, x):
        return _NoisyGrad.apply(x)


def test_names_backward_only_culprit():
    m = net(BackwardVariant())
    d = find_divergence(m, (torch.randn(3, 8),), loss_fn=loss)
    assert d.forward is None
    assert d.backward == "1"  # the gradient into ReLU's output: made by module 2, which consumes it
    assert d.parameter == "0.weight"


def test_identical_when_deterministic():
    m = net(nn.Identity())
    d = find_divergence(m, (torch.randn(4, 8),), loss_fn=loss)
    assert d.identical and "no divergence" in str(d)


def test_decoder_stock_vs_samebits_backend():
    """On the decoder: two backends on the same packed batch; the first module
    whose bits differ is reported (a leaf op, in execution order)."""
    cfg = ModelConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    a = CausalLM(cfg).init_weights(0)
    b = CausalLM(cfg, stock=True).init_weights(0)
    ids = torch.randint(0, 64, (40,), generator=torch.Generator().manual_seed(1))
    cu = torch.tensor([0, 13, 40], dtype=torch.int32)
    run = lambda m, x: m.forward_packed(*x)  # noqa: E731
    same = find_divergence(a, (ids, cu), run=run, loss_fn=lambda h: h.square().sum())
    assert same.identical
    d = find_divergence(a, (ids, cu), run=run, model_b=b)
    assert d.forward is not None and d.forward.startswith("model.")
