"""Decoder configuration: the fields of a Hugging Face Llama / Qwen2 config.json
that the model uses, and the presets of the examples."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional


@dataclass
class ModelConfig:
    vocab_size: int = 256
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: Optional[int] = None  # None: hidden_size // num_attention_heads
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: Optional[dict] = None  # Llama 3 {"rope_type": "llama3", ...} or None
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    attention_bias: bool = False  # q/k/v projections carry a bias (Qwen2: True)
    model_type: str = "llama"  # "llama" or "qwen2": only changes attention_bias defaults
    extra: dict = field(default_factory=dict)  # other config.json keys, written back unchanged

    def __post_init__(self):
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")

    @classmethod
    def from_hf(cls, d: dict) -> "ModelConfig":
        """From a config.json dict (LlamaForCausalLM or Qwen2ForCausalLM)."""
        known = set(cls.__dataclass_fields__) - {"extra", "attention_bias", "model_type"}
        kw = {k: d[k] for k in known if k in d and d[k] is not None}
        model_type = d.get("model_type", "llama")
        if model_type not in ("llama", "qwen2"):
            raise ValueError(f"model_type {model_type!r}: only llama and qwen2 checkpoints are supported")
        bias = d.get("attention_bias", model_type == "qwen2")
        if d.get("mlp_bias"):
            raise ValueError("mlp_bias=True is not supported")
        extra = {k: v for k, v in d.items() if k not in known and k not in ("attention_bias", "model_type")}
        return cls(**kw, attention_bias=bool(bias), model_type=model_type, extra=extra)

    def to_hf(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k != "extra"}
        arch = "Qwen2ForCausalLM" if self.model_type == "qwen2" else "LlamaForCausalLM"
        d.update(self.extra)
        d.setdefault("architectures", [arch])
        d.setdefault("hidden_act", "silu")
        return d


PRESETS = {
    # CPU CI: runs the RL example in seconds on two cores
    "tiny": dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512),
    # ~1.2B parameters, Llama-3.2-1B-like shapes with a 32k vocabulary: fits one H100 with AdamW in fp32 state
    "1b": dict(vocab_size=32768, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
               num_attention_heads=32, num_key_value_heads=8, head_dim=64, rope_theta=500000.0,
               max_position_embeddings=4096, tie_word_embeddings=True),
}


def preset(name: str) -> ModelConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown config {name!r}; choose from {sorted(PRESETS)}")
    return ModelConfig(**PRESETS[name])
