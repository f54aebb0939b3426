"""A Llama / Qwen2-style decoder (RMSNorm, RoPE, GQA attention, SwiGLU MLP).

Module and parameter names follow Hugging Face's LlamaForCausalLM, so
`state_dict()` keys are the checkpoint's keys ("model.layers.0.self_attn.
q_proj.weight", ...). Every forward works on *packed* tokens, (T, hidden):
the attention context (`PackedContext` for training, the sampler's paged
context for inference) says how the T rows group into sequences. All row
ops (GEMM, RMSNorm, SiLU, log-softmax) see one row at a time under
samebits, so a token's bits do not depend on which other tokens share T.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .config import ModelConfig
from .ops import backend


class Linear(nn.Module):
    def __init__(self, cfg_ops, n_in, n_out, bias=False):
        super().__init__()
        self._ops = cfg_ops
        self.weight = nn.Parameter(torch.empty(n_out, n_in))
        self.bias = nn.Parameter(torch.zeros(n_out)) if bias else None

    def forward(self, x):
        return self._ops[0].linear(x, self.weight, self.bias)


class RMSNorm(nn.Module):
    def __init__(self, cfg_ops, n, eps):
        super().__init__()
        self._ops, self.eps = cfg_ops, eps
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return self._ops[0].rms_norm(x, self.weight, self.eps)


def rope_inv_freq(cfg: ModelConfig) -> torch.Tensor:
    """Inverse frequencies in float64, with Llama 3 frequency scaling if configured."""
    d = cfg.head_dim
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float64, device="cpu") / d))
    rs = cfg.rope_scaling or {}
    kind = rs.get("rope_type", rs.get("type"))
    if kind in (None, "default"):
        return inv
    if kind != "llama3":
        raise ValueError(f"rope_scaling type {kind!r} is not supported (only llama3)")
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    smooth = ((old / wavelen) - lo) / (hi - lo)
    scaled = torch.where(wavelen > old / lo, inv / factor, inv)
    mid = (wavelen <= old / lo) & (wavelen >= old / hi)
    return torch.where(mid, (1 - smooth) * inv / factor + smooth * inv, scaled)


class Rotary(nn.Module):
    """cos/sin tables for every position, computed once in float64 on the CPU
    (so their bits do not depend on the device's libm) and looked up by
    position: a token at position p gets the same rotation in every path."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        pos = torch.arange(cfg.max_position_embeddings, dtype=torch.float64, device="cpu")
        f = torch.outer(pos, rope_inv_freq(cfg))
        # plain attributes, not buffers: model.to(bfloat16) must not round them
        self._cpu = (torch.cat([f.cos(), f.cos()], -1).float(), torch.cat([f.sin(), f.sin()], -1).float())
        self._on = {}

    def tables(self, device):
        if device not in self._on:
            self._on[device] = tuple(t.to(device) for t in self._cpu)
        return self._on[device]

    def forward(self, x, positions):
        """x (T, heads, D) rotated by positions (T,), in float32, rounded once to x.dtype."""
        cos, sin = self.tables(x.device)
        cos, sin = cos[positions][:, None, :], sin[positions][:, None, :]
        xf = x.float()
        h = xf.shape[-1] // 2
        rot = torch.cat([-xf[..., h:], xf[..., :h]], -1)
        return (xf * cos + rot * sin).to(x.dtype)


@dataclass
class PackedContext:
    """Training / scoring: T rows are sequences packed back to back."""
    cu_seqlens: torch.Tensor  # (B + 1,) int32
    max_seqlen: int

    def attend(self, ops, layer, q, k, v):
        return ops.attention_varlen(q, k, v, self.cu_seqlens, self.max_seqlen)


class Attention(nn.Module):
    def __init__(self, cfg_ops, cfg: ModelConfig, idx: int):
        super().__init__()
        self._ops, self.idx = cfg_ops, idx
        self.h, self.hk, self.d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        b = cfg.attention_bias
        self.q_proj = Linear(cfg_ops, cfg.hidden_size, self.h * self.d, b)
        self.k_proj = Linear(cfg_ops, cfg.hidden_size, self.hk * self.d, b)
        self.v_proj = Linear(cfg_ops, cfg.hidden_size, self.hk * self.d, b)
        self.o_proj = Linear(cfg_ops, self.h * self.d, cfg.hidden_size, False)

    def forward(self, x, positions, rotary, ctx):
        T = x.shape[0]
        q = rotary(self.q_proj(x).view(T, self.h, self.d), positions)
        k = rotary(self.k_proj(x).view(T, self.hk, self.d), positions)
        v = self.v_proj(x).view(T, self.hk, self.d)
        o = ctx.attend(self._ops[0], self.idx, q, k, v)
        return self.o_proj(o.reshape(T, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, cfg_ops, cfg: ModelConfig):
        super().__init__()
        self._ops = cfg_ops
        self.gate_proj = Linear(cfg_ops, cfg.hidden_size, cfg.intermediate_size)
        self.up_proj = Linear(cfg_ops, cfg.hidden_size, cfg.intermediate_size)
        self.down_proj = Linear(cfg_ops, cfg.intermediate_size, cfg.hidden_size)

    def forward(self, x):
        return self.down_proj(self._ops[0].silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg_ops, cfg: ModelConfig, idx: int):
        super().__init__()
        self.self_attn = Attention(cfg_ops, cfg, idx)
        self.mlp = MLP(cfg_ops, cfg)
        self.input_layernorm = RMSNorm(cfg_ops, cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg_ops, cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, x, positions, rotary, ctx):
        x = x + self.self_attn(self.input_layernorm(x), positions, rotary, ctx)
        return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(nn.Module):
    """HF's `model.` prefix: embeddings, layers, final norm."""

    def __init__(self, cfg_ops, cfg: ModelConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg_ops, cfg, i) for i in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg_ops, cfg.hidden_size, cfg.rms_norm_eps)
        self.rotary = Rotary(cfg)

    def forward(self, ids, positions, ctx):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, positions, self.rotary, ctx)
        return self.norm(x)


class CausalLM(nn.Module):
    """The decoder with its LM head. `stock=True` runs it on stock PyTorch ops."""

    def __init__(self, cfg: ModelConfig, stock: bool = False):
        super().__init__()
        self.config = cfg
        self._ops = [backend(stock)]  # a list shared by every submodule: one switch for all
        self.model = Backbone(self._ops, cfg)
        self.lm_head = None if cfg.tie_word_embeddings else Linear(self._ops, cfg.hidden_size, cfg.vocab_size)

    @property
    def stock(self) -> bool:
        return self._ops[0].stock

    @stock.setter
    def stock(self, value: bool) -> None:
        self._ops[0] = backend(bool(value))

    @property
    def ops(self):
        return self._ops[0]

    def init_weights(self, seed: int = 0, std: float = 0.02) -> "CausalLM":
        """Random weights from a CPU generator (same bits on every device)."""
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("layernorm.weight") or name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float32) * std)
        return self

    def logits_of(self, hidden):
        w = self.model.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        return self.ops.linear(hidden, w)

    def logprobs_of(self, hidden):
        """log-softmax (float32) of the logits of each hidden row."""
        return self.ops.log_softmax(self.logits_of(hidden))

    def forward(self, ids, positions, ctx):
        """Final hidden states (T, hidden) of packed tokens ids (T,) at positions (T,)."""
        return self.model(ids, positions, ctx)

    def forward_packed(self, ids, cu_seqlens):
        """Hidden states of sequences packed back to back (cu_seqlens int32)."""
        lens = cu_seqlens[1:] - cu_seqlens[:-1]
        starts = torch.repeat_interleave(cu_seqlens[:-1].long(), lens.long())
        positions = torch.arange(ids.shape[0], device=ids.device) - starts
        return self(ids, positions, PackedContext(cu_seqlens, int(lens.max())))
