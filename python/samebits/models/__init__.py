"""End-to-end pieces built on samebits: a Llama/Qwen2-style decoder, Hugging
Face checkpoint loading, a continuous-batching sampler over a paged KV cache
and a policy-gradient trainer whose log-probabilities match the sampler's
bit for bit (docs/e2e.md)."""
from .config import ModelConfig, preset
from .hf import load_hf, save_hf
from .kv_cache import PageAllocator, PagedKVCache
from .llama import CausalLM
from .sampler import Request, Sampler
from .trainer import Rollout, Trainer, compare_logprobs, group_advantages, token_logprobs, weight_hash

__all__ = ["ModelConfig", "preset", "load_hf", "save_hf", "PageAllocator", "PagedKVCache", "CausalLM", "Request",
           "Sampler", "Rollout", "Trainer", "compare_logprobs", "group_advantages", "token_logprobs", "weight_hash"]
