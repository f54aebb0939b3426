"""Why bench_decode.py (Python, graph) and the C bench differ at B x 1k."""
import json, sys, os
import torch
sys.path.insert(0, "bench")
import samebits
from bench_util import graphed

samebits.set_value_checks(False)
dev = "cuda"
H, HK, D, PAGE = 64, 8, 128, 64
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)

def timed(fn, reps=15):
    ts = []
    for r in range(reps):
        flush.fill_(r)
        e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
        e0.record(); fn(); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    ts.sort()
    return ts[len(ts) // 2]

rows = []
for B, ctx in [(16, 1024), (64, 1024), (256, 1024), (64, 4096), (256, 4096)]:
    torch.manual_seed(0)
    q = torch.randn(B, 1, H, D, dtype=torch.bfloat16, device=dev)
    pages = B * ctx // PAGE
    kc = torch.randn(pages, PAGE, HK, D, dtype=torch.bfloat16, device=dev)
    vc = torch.randn_like(kc)
    kv_bytes = 2 * B * ctx * HK * D * 2
    perm = torch.randperm(pages, device=dev, dtype=torch.int32).view(B, ctx // PAGE)
    ident = torch.arange(pages, device=dev, dtype=torch.int32).view(B, ctx // PAGE)
    for name, table, lens in [("perm_len", perm, ctx), ("perm_len-1", perm, ctx - 1), ("ident_len", ident, ctx),
                              ("perm_len-64", perm, ctx - 64)]:
        seqlens = torch.full((B,), lens, dtype=torch.int32, device=dev)
        ws_bytes, _ = samebits.kvcache_workspace_size(q, kc, table)
        ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=dev)
        fn = lambda: samebits.attention_with_kvcache(q, kc, vc, cache_seqlens=seqlens, block_table=table,
                                                     causal=True, workspace=ws)
        g = graphed(fn)
        ms = timed(g)
        row = {"B": B, "ctx": ctx, "case": name, "us": ms * 1e3, "gbs": kv_bytes / ms / 1e6}
        if name == "perm_len" and ctx == 1024:
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(3):
                    flush.fill_(1); g()
                torch.cuda.synchronize()
            row["kernels"] = [(e.name[:60], round(e.device_time, 1)) for e in prof.events()
                              if e.device_type == torch.autograd.DeviceType.CUDA][:12]
        print(json.dumps(row), flush=True)
    del kc, vc
    torch.cuda.empty_cache()
