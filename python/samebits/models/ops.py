"""The two op backends the decoder runs on.

`SamebitsOps` routes every op whose result could depend on the batch through
samebits (GEMM, RMSNorm, log-softmax, attention; SiLU through a row-local
softmax on the CPU, see `silu`). `StockOps` is the same model on stock
PyTorch (torch.nn.functional.linear, rms_norm, log_softmax,
scaled_dot_product_attention): the negative control.

Element-wise ops (residual adds, RoPE's multiply-adds, casts, the SwiGLU
product) are left to PyTorch on both backends: each is one correctly rounded
IEEE operation per element, so its bits cannot depend on the batch.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

import samebits
from samebits import dense


class SamebitsOps:
    name = "samebits"
    stock = False

    def linear(self, x, w, b=None):
        return dense.linear(x, w, b)

    def rms_norm(self, x, w, eps):
        return dense.rms_norm(x, w, eps)

    def log_softmax(self, x):
        return dense.log_softmax(x, dim=-1, dtype=torch.float32)

    def silu(self, x):
        # CUDA: torch's element-wise kernel runs the same instructions for
        # every element. CPU: its vectorised body and scalar tail use
        # different exp implementations, and where an element falls depends
        # on the tensor size; so compute sigmoid(x) = softmax([0, x])[1] with
        # samebits' row-local softmax (its own exp), which is exact per row.
        if x.is_cuda:
            return F.silu(x)
        z = torch.stack([torch.zeros_like(x), x], dim=-1)
        return x * dense.softmax(z, dim=-1)[..., 1]

    def attention_varlen(self, q, k, v, cu_seqlens, max_seqlen):
        return samebits.attention_varlen(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, causal=True)

    def attention_paged(self, q, k, v, cache, layer, cache_seqlens, block_table):
        """q (B, Lq, H, D), new k, v (B, Lq, Hk, D): append them to the pages and attend."""
        return samebits.attention_with_kvcache(
            q, cache.k[layer], cache.v[layer], k, v, cache_seqlens=cache_seqlens, block_table=block_table,
            causal=True)


class StockOps:
    name = "stock"
    stock = True

    def linear(self, x, w, b=None):
        return F.linear(x, w, b)

    def rms_norm(self, x, w, eps):
        return F.rms_norm(x, (x.shape[-1],), w, eps)

    def log_softmax(self, x):
        return torch.log_softmax(x.float(), dim=-1)

    def silu(self, x):
        return F.silu(x)

    def attention_varlen(self, q, k, v, cu_seqlens, max_seqlen):
        # pad the packed sequences to (B, H, Lmax, D); right padding is safe
        # under a causal mask (a real row never sees a padded key)
        lens = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
        B, L = len(lens), max(lens)
        idx, rows = _pad_index(lens, L, q.device)
        qp, kp, vp = (_pad(t, idx, B, L) for t in (q, k, v))
        o = F.scaled_dot_product_attention(qp, kp, vp, is_causal=True, enable_gqa=True)
        return o.transpose(1, 2).reshape(B * L, *q.shape[1:])[rows]

    def attention_paged(self, q, k, v, cache, layer, cache_seqlens, block_table):
        B, Lq, H, D = q.shape
        kc, vc = cache.k[layer], cache.v[layer]
        page = kc.shape[1]
        lens = cache_seqlens.long()
        # write the new keys/values into their pages
        pos = lens[:, None] + torch.arange(Lq, device=q.device)[None, :]
        pg = block_table.long().gather(1, pos // page)
        kc[pg, pos % page] = k
        vc[pg, pos % page] = v
        # gather every sequence's keys into a padded (B, Hk, Lk, D) batch
        Lk = int(lens.max()) + Lq
        kpos = torch.arange(Lk, device=q.device)[None, :].expand(B, Lk)
        kpg = block_table.long().gather(1, (kpos // page).clamp(max=block_table.shape[1] - 1))
        kk = kc[kpg, kpos % page].transpose(1, 2)
        vv = vc[kpg, kpos % page].transpose(1, 2)
        # query i of sequence b sees keys j <= lens[b] + i (bottom-right causal)
        mask = kpos[:, None, :] <= (lens[:, None, None] + torch.arange(Lq, device=q.device)[None, :, None])
        o = F.scaled_dot_product_attention(q.transpose(1, 2), kk, vv, attn_mask=mask[:, None], enable_gqa=True)
        return o.transpose(1, 2)


def _pad_index(lens, L, device):
    """(gather index into the packed rows for a padded (B, L) layout, the
    padded positions holding real rows)."""
    starts = torch.tensor([0] + lens[:-1], device=device).cumsum(0)
    ar = torch.arange(L, device=device)
    valid = ar[None, :] < torch.tensor(lens, device=device)[:, None]
    idx = (starts[:, None] + ar[None, :]).clamp(max=sum(lens) - 1)
    return idx, valid.reshape(-1).nonzero().squeeze(1)


def _pad(t, idx, B, L):
    return t[idx.reshape(-1)].reshape(B, L, *t.shape[1:]).transpose(1, 2)


SAMEBITS = SamebitsOps()
STOCK = StockOps()


def backend(stock: bool):
    return STOCK if stock else SAMEBITS
