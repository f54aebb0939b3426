"""Trainer side: recompute the sampled tokens' log-probabilities with a packed
(varlen) forward of the same model, then a policy-gradient step.

The sequences of a batch are packed back to back (no padding) and run
through `attention_varlen`; the row that predicts completion token j of a
sequence is the row the sampler computed that token's logits from, so under
samebits the recomputed log-probabilities equal the sampler's bit for bit.
"""
from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass

import torch


@dataclass
class Rollout:
    prompt: list
    tokens: list  # sampled completion
    logprobs: list  # the sampler's float32 log-probabilities of `tokens`
    reward: float = 0.0


def pack(rollouts, device):
    """(ids, cu_seqlens int32, rows, targets): sequence i is prompt + tokens[:-1];
    rows[k] is the packed row whose logits predict targets[k]."""
    ids, cu, rows, targets = [], [0], [], []
    for r in rollouts:
        seq = r.prompt + r.tokens[:-1]
        base = len(ids) + len(r.prompt) - 1
        rows += range(base, base + len(r.tokens))
        targets += r.tokens
        ids += seq
        cu.append(len(ids))
    t = lambda x, **k: torch.tensor(x, device=device, **k)  # noqa: E731
    return t(ids), t(cu, dtype=torch.int32), t(rows), t(targets)


def token_logprobs(model, rollouts):
    """float32 log p(token) for every completion token, packed in rollout order; differentiable."""
    device = next(model.parameters()).device
    ids, cu, rows, targets = pack(rollouts, device)
    hidden = model.forward_packed(ids, cu)
    return model.logprobs_of(hidden[rows]).gather(1, targets[:, None])[:, 0]


def group_advantages(rollouts, group_size: int):
    """GRPO-style: reward minus the mean reward of its group of `group_size`
    consecutive rollouts (same prompt). Pure Python floats: exact and ordered."""
    adv = []
    for g in range(0, len(rollouts), group_size):
        grp = rollouts[g:g + group_size]
        mean = sum(r.reward for r in grp) / len(grp)
        adv += [r.reward - mean for r in grp]
    return adv


@contextlib.contextmanager
def deterministic_algorithms():
    prev, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev, warn_only=warn)


class Trainer:
    def __init__(self, model, lr: float = 1e-3):
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, foreach=False, fused=False)

    def step(self, rollouts, advantages) -> dict:
        """One policy-gradient step: loss = -sum_t A(seq) * log p(t) / tokens.
        Returns the recomputed log-probabilities beside the sampler's."""
        device = next(self.model.parameters()).device
        with deterministic_algorithms():
            lp = token_logprobs(self.model, rollouts)
            adv = torch.tensor([a for r, a in zip(rollouts, advantages) for _ in r.tokens],
                               dtype=torch.float32, device=device)
            loss = -(adv * lp).sum() / lp.numel()
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
        sampled = torch.tensor([x for r in rollouts for x in r.logprobs], dtype=torch.float32)
        return {"loss": float(loss.detach()), "trainer_logprobs": lp.detach().cpu(), "sampler_logprobs": sampled}


def compare_logprobs(sampler_lp: torch.Tensor, trainer_lp: torch.Tensor) -> dict:
    """Bitwise agreement of two float32 log-probability vectors, and the
    sampler/trainer KL estimate mean(log p_sampler - log p_trainer)."""
    a, b = sampler_lp.float(), trainer_lp.float()
    same = (a.view(torch.int32) == b.view(torch.int32))
    return {"tokens": a.numel(), "mismatches": int((~same).sum()),
            "max_abs_diff": float((a - b).abs().max()) if a.numel() else 0.0,
            "kl": float((a.double() - b.double()).mean()) if a.numel() else 0.0}


def weight_hash(model) -> str:
    h = hashlib.sha256()
    for k, v in model.state_dict().items():
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]
