"""Hugging Face checkpoints: config.json + *.safetensors (one file, or shards
listed in model.safetensors.index.json), Llama and Qwen2 key names.

The decoder's parameter names are HF's, so loading is a key-for-key copy;
the only translations are tied embeddings (no lm_head.weight in the file) and
the rotary inv_freq buffers some older checkpoints carry (ignored).
"""
from __future__ import annotations

import json
import os
from typing import Optional

import torch

from .config import ModelConfig
from .llama import CausalLM

_IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)


def _safetensors():
    try:
        import safetensors.torch as st
    except ImportError as e:  # pragma: no cover
        raise ImportError("loading checkpoints needs the safetensors package (pip install safetensors)") from e
    return st


def read_state_dict(path: str) -> dict:
    """All tensors of a checkpoint directory (sharded or not), on the CPU."""
    st = _safetensors()
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = sorted(f for f in os.listdir(path) if f.endswith(".safetensors"))
    if not files:
        raise FileNotFoundError(f"no .safetensors files in {path}")
    out = {}
    for name in files:
        out.update(st.load_file(os.path.join(path, name)))
    return out


def load_hf(path: str, *, dtype: Optional[torch.dtype] = None, device="cpu", stock: bool = False) -> CausalLM:
    """A CausalLM from a checkpoint directory. dtype defaults to the config's
    torch_dtype (float32 if absent)."""
    with open(os.path.join(path, "config.json")) as f:
        raw = json.load(f)
    cfg = ModelConfig.from_hf(raw)
    if dtype is None:
        dtype = getattr(torch, raw.get("torch_dtype") or "float32")
    with torch.device("meta"):
        model = CausalLM(cfg, stock=stock)
    model = model.to_empty(device=device).to(dtype)
    sd = {k: v for k, v in read_state_dict(path).items() if not k.endswith(_IGNORED_SUFFIXES)}
    if cfg.tie_word_embeddings:
        sd.pop("lm_head.weight", None)
    own = model.state_dict()
    missing, unexpected = sorted(set(own) - set(sd)), sorted(set(sd) - set(own))
    if missing or unexpected:
        raise KeyError(f"checkpoint does not match the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    with torch.no_grad():
        for k, p in own.items():
            if tuple(sd[k].shape) != tuple(p.shape):
                raise ValueError(f"{k}: checkpoint shape {tuple(sd[k].shape)}, model {tuple(p.shape)}")
            p.copy_(sd[k].to(device=device, dtype=dtype))
    return model


def save_hf(model: CausalLM, path: str, *, max_shard_bytes: Optional[int] = None) -> None:
    """Write config.json and safetensors (sharded with an index when the
    weights exceed max_shard_bytes) with HF key names."""
    st = _safetensors()
    os.makedirs(path, exist_ok=True)
    cfg = model.config.to_hf()
    sd = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    cfg["torch_dtype"] = str(next(iter(sd.values())).dtype).replace("torch.", "")
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    shards, cur, size = [], {}, 0
    for k, v in sd.items():
        nbytes = v.numel() * v.element_size()
        if cur and max_shard_bytes is not None and size + nbytes > max_shard_bytes:
            shards.append(cur)
            cur, size = {}, 0
        cur[k], size = v, size + nbytes
    shards.append(cur)
    if len(shards) == 1:
        st.save_file(shards[0], os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
        return
    weight_map = {}
    for i, shard in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        st.save_file(shard, os.path.join(path, name), metadata={"format": "pt"})
        weight_map.update({k: name for k in shard})
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)
