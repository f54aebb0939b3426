"""Paged KV cache: a page allocator and per-layer page pools.

Each layer holds k and v pools of shape (num_pages, page_size, Hk, D). A
sequence owns a list of pages (its block-table row); page j holds its keys
[j*page_size, (j+1)*page_size). Which physical pages a sequence gets depends
on the traffic before it; the numerics contract says the bits cannot.
"""
from __future__ import annotations

import torch


class PageAllocator:
    """A free list of page indices. Pages freed last are reused first, so page
    placement keeps changing with traffic."""

    def __init__(self, num_pages: int):
        self.free = list(range(num_pages - 1, -1, -1))
        self.num_pages = num_pages

    def allocate(self, n: int) -> list:
        if n > len(self.free):
            raise MemoryError(f"KV cache full: need {n} pages, {len(self.free)} free")
        return [self.free.pop() for _ in range(n)]

    def release(self, pages: list) -> None:
        self.free.extend(reversed(pages))

    @property
    def num_free(self) -> int:
        return len(self.free)


class PagedKVCache:
    def __init__(self, cfg, num_pages: int, page_size: int, dtype, device):
        shape = (num_pages, page_size, cfg.num_key_value_heads, cfg.head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.num_hidden_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.num_hidden_layers)]
        self.page_size = page_size
        self.allocator = PageAllocator(num_pages)
        self.pages = {}  # sequence id -> list of pages

    def pages_needed(self, seq_id, length: int) -> int:
        have = len(self.pages.get(seq_id, ()))
        return max(0, -(-length // self.page_size) - have)

    def reserve(self, seq_id, length: int) -> None:
        """Make sure seq_id owns pages for `length` tokens."""
        n = self.pages_needed(seq_id, length)
        self.pages.setdefault(seq_id, []).extend(self.allocator.allocate(n) if n else [])

    def free(self, seq_id) -> None:
        self.allocator.release(self.pages.pop(seq_id, []))

    def block_table(self, seq_ids, device) -> torch.Tensor:
        """(len(seq_ids), max_pages) int32; unused slots hold 0 (never read)."""
        width = max(1, max(len(self.pages[s]) for s in seq_ids))
        rows = [self.pages[s] + [0] * (width - len(self.pages[s])) for s in seq_ids]
        return torch.tensor(rows, dtype=torch.int32, device=device)
