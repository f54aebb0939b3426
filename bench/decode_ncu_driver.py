"""One decode call of samebits and one of SDPA cuDNN (and flash) at a
batch x context (GQA 8:1, d 128, bf16, page 64 for samebits, contiguous
(B, Hk, keys, D) for the peers, as bench_decode.py), between
cudaProfilerStart / Stop, for `ncu --profile-from-start off`: every kernel
of those calls is profiled (ncu flushes caches before each by default).

    ncu --profile-from-start off ... python bench/decode_ncu_driver.py 64x4096
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import samebits

H, HK, D, PAGE = 64, 8, 128, 64
B, ctx = (int(x) for x in sys.argv[1].split("x"))
torch.manual_seed(0)
samebits.set_value_checks(False)
q = torch.randn(B, 1, H, D, dtype=torch.bfloat16, device="cuda")
pages = B * ctx // PAGE
kc = torch.randn(pages, PAGE, HK, D, dtype=torch.bfloat16, device="cuda")
vc = torch.randn_like(kc)
table = torch.randperm(pages, device="cuda", dtype=torch.int32).view(B, ctx // PAGE)
seqlens = torch.full((B,), ctx, dtype=torch.int32, device="cuda")
ws_bytes, _ = samebits.kvcache_workspace_size(q, kc, table)
ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")
kd = kc[table.long().view(-1)].reshape(B, ctx, HK, D).transpose(1, 2).contiguous()
vd = vc[table.long().view(-1)].reshape(B, ctx, HK, D).transpose(1, 2).contiguous()
qd = q.transpose(1, 2)


def ours():
    return samebits.attention_with_kvcache(q, kc, vc, cache_seqlens=seqlens, block_table=table, causal=True,
                                           workspace=ws)


def peer(backend):
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(qd, kd, vd, enable_gqa=True)


for f in (ours, lambda: peer(SDPBackend.CUDNN_ATTENTION), lambda: peer(SDPBackend.FLASH_ATTENTION)):
    f()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
ours()
peer(SDPBackend.CUDNN_ATTENTION)
peer(SDPBackend.FLASH_ATTENTION)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print("done", B, ctx, "K/V bytes", 2 * B * ctx * HK * D * 2)
