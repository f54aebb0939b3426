"""Token choice: greedy, or seeded Gumbel-max sampling whose noise is a pure
function of (request seed, token position, vocabulary index).

The noise comes from an integer hash (exact on every device), so a request
draws the same tokens whoever shares its batch and on every run. Turning the
hash into Gumbel noise needs a log: on CUDA torch's element-wise log runs the
same instructions for every element, so the whole batch is done at once; on
the CPU torch's vectorised body and scalar tail differ, so each row is done
alone with the same shape every time.
"""
from __future__ import annotations

import torch

_M32 = 0xFFFFFFFF


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer finaliser on int64 tensors holding values < 2**32
    (products wrap modulo 2**64; only their low 32 bits are kept)."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _M32
    return x ^ (x >> 16)


def uniform(seeds, positions, vocab: int, device) -> torch.Tensor:
    """(len(seeds), vocab) float64 uniforms in (0, 1); entry (r, i) is a pure
    function of (seeds[r], positions[r], i). Integer ops only: exact anywhere."""
    s = torch.tensor([(int(x) * 0x9E3779B1 + 0x632BE5AB) & _M32 for x in seeds], dtype=torch.int64, device=device)
    p = torch.tensor([int(x) & _M32 for x in positions], dtype=torch.int64, device=device)
    key = _mix32(_mix32(s) ^ p)[:, None]
    i = torch.arange(vocab, dtype=torch.int64, device=device)[None, :]
    x = _mix32(_mix32(key ^ ((i * 0x85EBCA6B) & _M32)) ^ 0x27D4EB2F)
    return ((x >> 8).double() + 0.5) * (1.0 / (1 << 24))


def gumbel(seeds, positions, vocab: int, device) -> torch.Tensor:
    """(len(seeds), vocab) float64 Gumbel noise, row r for (seeds[r], positions[r])."""
    u = uniform(seeds, positions, vocab, device)
    if u.is_cuda:
        return -torch.log(-torch.log(u))
    return torch.stack([-torch.log(-torch.log(row.clone())) for row in u])


def choose(logprobs: torch.Tensor, seeds, temperatures, positions) -> torch.Tensor:
    """Next tokens for rows of float32 log-probabilities: argmax where the
    seed is None (greedy), else argmax(logprobs / T + Gumbel(seed, position))."""
    tokens = logprobs.argmax(-1)
    rows = [r for r, s in enumerate(seeds) if s is not None]
    if rows:
        g = gumbel([seeds[r] for r in rows], [positions[r] for r in rows], logprobs.shape[-1], logprobs.device)
        t = torch.tensor([float(temperatures[r]) for r in rows], dtype=torch.float64, device=logprobs.device)
        scores = logprobs[rows].double() / t[:, None] + g
        tokens[rows] = scores.argmax(-1)
    return tokens
