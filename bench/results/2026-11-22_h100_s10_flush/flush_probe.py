"""Does the L2 flush's kind move decode's time? samebits and cuDNN SDPA at
B x 1k (and 1 x 32k), graph replays, after flush.zero_(), flush.fill_(r),
a 256 MiB copy, or no flush."""
import json, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
sys.path.insert(0, "bench")
import samebits
from bench_util import graphed

samebits.set_value_checks(False)
dev = "cuda"
H, HK, D, PAGE = 64, 8, 128, 64
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
src = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
flushes = {"zero": lambda r: flush.zero_(), "fill": lambda r: flush.fill_(r % 250 + 1),
           "copy": lambda r: flush.copy_(src), "none": lambda r: None}

def timed(fn, fl, reps=15):
    fn(); torch.cuda.synchronize()
    ts = []
    for r in range(reps):
        fl(r)
        e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
        e0.record(); fn(); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    ts.sort()
    return ts[len(ts) // 2] * 1e3

for B, ctx in [(256, 1024), (64, 1024), (16, 1024), (1, 32768), (64, 4096)]:
    torch.manual_seed(0)
    q = torch.randn(B, 1, H, D, dtype=torch.bfloat16, device=dev)
    pages = B * ctx // PAGE
    kc = torch.randn(pages, PAGE, HK, D, dtype=torch.bfloat16, device=dev)
    vc = torch.randn_like(kc)
    table = torch.randperm(pages, device=dev, dtype=torch.int32).view(B, ctx // PAGE)
    seqlens = torch.full((B,), ctx, dtype=torch.int32, device=dev)
    ws = torch.empty(max(samebits.kvcache_workspace_size(q, kc, table)[0], 1), dtype=torch.uint8, device=dev)
    kd = kc[table.long().view(-1)].view(B, ctx, HK, D).transpose(1, 2).contiguous()
    vd = vc[table.long().view(-1)].view(B, ctx, HK, D).transpose(1, 2).contiguous()
    qd = q.transpose(1, 2)
    def cud():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(qd, kd, vd, enable_gqa=True)
    impls = {"samebits": graphed(lambda: samebits.attention_with_kvcache(q, kc, vc, cache_seqlens=seqlens,
             block_table=table, causal=True, workspace=ws)), "cudnn": graphed(cud)}
    for fname, fl in flushes.items():
        row = {"B": B, "ctx": ctx, "flush": fname}
        for name, g in impls.items():
            row[name + "_us"] = round(timed(g, fl), 1)
        print(json.dumps(row), flush=True)
    del kc, vc, kd, vd
    torch.cuda.empty_cache()
