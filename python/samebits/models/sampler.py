"""Continuous-batching sampler over a paged KV cache.

Every engine step packs, into one token batch, the next chunk of each
running request: a decode token, or up to `prefill_chunk` prompt tokens
(chunked prefill). Requests arrive at given steps and leave when done, so the
batch composition changes every step. Dense ops run on the packed rows;
attention runs per group of requests with the same number of new tokens,
through `attention_with_kvcache` on the pages. Under samebits a token's
logits are the bits the trainer's packed forward computes for it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

import torch

from .kv_cache import PagedKVCache
from .sampling import choose


@dataclass
class Request:
    rid: int
    prompt: list
    max_new_tokens: int
    seed: Optional[int] = None  # None: greedy
    temperature: float = 1.0
    arrival: int = 0  # engine step at which the request arrives
    eos: Optional[int] = None
    tokens: list = field(default_factory=list)  # generated tokens
    logprobs: list = field(default_factory=list)  # float32 log p(token), temperature 1
    cached: int = 0  # tokens whose K/V are in the cache

    @property
    def sequence(self):
        return self.prompt + self.tokens

    @property
    def done(self) -> bool:
        return len(self.tokens) >= self.max_new_tokens or (bool(self.tokens) and self.tokens[-1] == self.eos)


class PagedContext:
    """Attention for one engine step: groups of requests with equal new-token
    counts, each group one attention_with_kvcache call."""

    def __init__(self, cache: PagedKVCache, groups):
        self.cache, self.groups = cache, groups  # groups: [(rows (B, n) long, cache_seqlens, block_table)]

    def attend(self, ops, layer, q, k, v):
        out = torch.empty_like(q)
        for rows, seqlens, table in self.groups:
            B, n = rows.shape
            o = ops.attention_paged(q[rows], k[rows], v[rows], self.cache, layer, seqlens, table)
            out[rows.reshape(-1)] = o.reshape(B * n, *q.shape[1:])
        return out


class Sampler:
    def __init__(self, model, *, num_pages: int = 256, page_size: int = 16, max_batch_tokens: int = 256,
                 prefill_chunk: int = 64, max_running: int = 64):
        p = next(model.parameters())
        self.model, self.device = model, p.device
        self.cache = PagedKVCache(model.config, num_pages, page_size, p.dtype, p.device)
        self.max_batch_tokens, self.prefill_chunk, self.max_running = max_batch_tokens, prefill_chunk, max_running
        self.waiting, self.running, self.finished = [], [], []
        self.step_count, self.generated, self.batch_sizes = 0, 0, []

    def add(self, req: Request) -> None:
        need = len(req.prompt) + req.max_new_tokens
        if need > self.model.config.max_position_embeddings:
            raise ValueError(f"request {req.rid}: {need} tokens exceed max_position_embeddings")
        self.waiting.append(req)

    def _admit(self) -> None:
        self.waiting.sort(key=lambda r: (r.arrival, r.rid))
        while self.waiting and self.waiting[0].arrival <= self.step_count and len(self.running) < self.max_running:
            r = self.waiting[0]
            total = len(r.prompt) + r.max_new_tokens
            if self.cache.pages_needed(r.rid, total) > self.cache.allocator.num_free:
                break  # wait for pages to come free
            self.cache.reserve(r.rid, total)  # all pages up front: a running request is never preempted
            self.running.append(self.waiting.pop(0))

    def _schedule(self):
        """[(request, number of new tokens)]: decodes first, then prefill chunks."""
        budget, plan = self.max_batch_tokens, []
        for r in sorted(self.running, key=lambda r: len(r.sequence) - r.cached):
            n = min(len(r.sequence) - r.cached, self.prefill_chunk, budget)
            if n > 0:
                plan.append((r, n))
                budget -= n
        return plan

    @torch.no_grad()
    def step(self) -> None:
        self._admit()
        plan = self._schedule()
        self.step_count += 1
        if not plan:
            return
        ids, pos, starts, groups = [], [], [], {}
        for r, n in plan:
            starts.append(len(ids))
            ids += r.sequence[r.cached:r.cached + n]
            pos += range(r.cached, r.cached + n)
            groups.setdefault(n, []).append((r, len(ids) - n))
        dev = self.device
        ctx = PagedContext(self.cache, [
            (torch.tensor([[s + j for j in range(n)] for _, s in g], device=dev),
             torch.tensor([r.cached for r, _ in g], dtype=torch.int32, device=dev),
             self.cache.block_table([r.rid for r, _ in g], dev))
            for n, g in groups.items()])
        hidden = self.model(torch.tensor(ids, device=dev), torch.tensor(pos, device=dev), ctx)
        # requests whose known tokens are now all cached sample their next token
        sample = [(r, s + n - 1) for (r, n), s in zip(plan, starts) if r.cached + n == len(r.sequence)]
        for r, n in plan:
            r.cached += n
        self.batch_sizes.append(len(ids))
        if not sample:
            return
        lp = self.model.logprobs_of(hidden[torch.tensor([row for _, row in sample], device=dev)])
        reqs = [r for r, _ in sample]
        tok = choose(lp, [r.seed for r in reqs], [r.temperature for r in reqs], [len(r.sequence) for r in reqs])
        chosen = lp.gather(1, tok[:, None])[:, 0]
        for r, t, l in zip(reqs, tok.tolist(), chosen.tolist()):
            r.tokens.append(t)
            r.logprobs.append(l)
        self.generated += len(reqs)
        for r in [r for r in self.running if r.done]:
            self.running.remove(r)
            self.cache.free(r.rid)
            self.finished.append(r)

    def run(self, requests) -> dict:
        """Serve `requests` to completion; returns {rid: Request} and sets
        self.seconds and self.tokens_per_s (generated tokens / wall time)."""
        for r in requests:
            self.add(r)
        t0 = time.perf_counter()
        while self.waiting or self.running:
            self.step()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.seconds = time.perf_counter() - t0
        self.tokens_per_s = self.generated / max(self.seconds, 1e-9)
        return {r.rid: r for r in self.finished}
