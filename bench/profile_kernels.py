"""Which kernels run, and for how long, inside one samebits call and its peers'.

A timeline view that events around a call cannot give: for each case the
kernels launched (name, grid time) and the gaps between them, from
torch.profiler (CUPTI), with L2 flushed (256 MiB write) before each call and
the call replayed from a CUDA graph (as decode steps are served) or eager.
Cases: decode (samebits paged page 64 / SDPA flash / SDPA cuDNN; GQA 8:1,
d128, bf16) at small batch x context, and GEMM (samebits.linear / F.linear,
bf16) at a few M; the names show, e.g., whether cuBLAS splits K; and (--only
bwd, eager) the attention backward of samebits and SDPA cuDNN, d128 bf16.

usage: python bench/profile_kernels.py --out DIR [--reps 5] [--only decode|gemm|bwd]
           [--gemm-tiles 128x256,128x256m2] [--gemm-ms 2048,16384] [--gemm-shapes 4096x4096] [--gemm-bias]
Writes DIR/profile_kernels.json (per case: median duration of each kernel,
the summed kernel time, and the span from the first kernel's start to the
last one's end) and prints a table.
"""
import argparse
import json
import os
import statistics

import torch
import torch.nn.functional as F

import samebits
from bench_util import forced_tile, graphed


def decode_cases():
    H, HK, D, PAGE = 64, 8, 128, 64
    for B, ctx in ((1, 1024), (1, 4096), (1, 32768), (4, 1024), (16, 1024), (64, 1024), (256, 1024), (64, 4096)):
        q = torch.randn(B, 1, H, D, dtype=torch.bfloat16, device="cuda")
        pages = B * ctx // PAGE
        kc = torch.randn(pages, PAGE, HK, D, dtype=torch.bfloat16, device="cuda")
        vc = torch.randn_like(kc)
        table = torch.randperm(pages, device="cuda", dtype=torch.int32).view(B, ctx // PAGE)
        seqlens = torch.full((B,), ctx, dtype=torch.int32, device="cuda")
        ws_bytes, _ = samebits.kvcache_workspace_size(q, kc, table)
        ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")
        kd = kc[table.long().view(-1)].view(B, ctx, HK, D).transpose(1, 2).contiguous()
        vd = vc[table.long().view(-1)].view(B, ctx, HK, D).transpose(1, 2).contiguous()
        qd = q.transpose(1, 2)
        kv_bytes = 2 * B * ctx * HK * D * 2
        yield f"decode {B}x{ctx} samebits", kv_bytes, (
            lambda q=q, kc=kc, vc=vc, s=seqlens, t=table, ws=ws: samebits.attention_with_kvcache(
                q, kc, vc, cache_seqlens=s, block_table=t, causal=True, workspace=ws))
        # the same keys in other layouts: pages of one head's slots each
        # (num_pages, Hk, page, D) seen as (num_pages, page, Hk, D), and the
        # peers' own (B, Hk, context, D) memory seen as (B, context, Hk, D)
        kh = kc.transpose(1, 2).contiguous().transpose(1, 2)
        vh = vc.transpose(1, 2).contiguous().transpose(1, 2)
        yield f"decode {B}x{ctx} samebits-hnd-paged", kv_bytes, (
            lambda q=q, kc=kh, vc=vh, s=seqlens, t=table, ws=ws: samebits.attention_with_kvcache(
                q, kc, vc, cache_seqlens=s, block_table=t, causal=True, workspace=ws))
        ws2 = torch.empty(max(samebits.kvcache_workspace_size(q, kd.transpose(1, 2), None)[0], 1),
                          dtype=torch.uint8, device="cuda")
        yield f"decode {B}x{ctx} samebits-peers-memory", kv_bytes, (
            lambda q=q, kc=kd.transpose(1, 2), vc=vd.transpose(1, 2), s=seqlens, ws=ws2:
            samebits.attention_with_kvcache(q, kc, vc, cache_seqlens=s, causal=True, workspace=ws))
        from torch.nn.attention import SDPBackend, sdpa_kernel
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            def call(backend=backend, qd=qd, kd=kd, vd=vd):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qd, kd, vd, enable_gqa=True)
            yield f"decode {B}x{ctx} {name}", kv_bytes, call


def bwd_cases(lengths=(1024, 4096, 16384)):
    """Attention backward (bf16, 16 heads, d128, B x L = 16k): the kernels of
    one autograd backward of samebits.attention and of SDPA cuDNN (eager)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    H, D = 16, 128
    for L in lengths:
        B = 16384 // L
        for causal in (False, True):
            q, k, v = (torch.randn(B, L, H, D, dtype=torch.bfloat16, device="cuda").requires_grad_()
                       for _ in range(3))
            dout = torch.randn(B, L, H, D, dtype=torch.bfloat16, device="cuda")
            flops = 2.5 * 4 * B * H * L * L * D / (2 if causal else 1)
            out = samebits.attention(q, k, v, causal=causal)
            yield (f"bwd {B}x{L} causal={int(causal)} samebits", flops,
                   lambda out=out, q=q, k=k, v=v, dout=dout:
                   torch.autograd.grad(out, (q, k, v), dout, retain_graph=True))
            qt, kt, vt = (t.detach().transpose(1, 2).requires_grad_() for t in (q, k, v))
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                o2 = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            yield (f"bwd {B}x{L} causal={int(causal)} cudnn", flops,
                   lambda o2=o2, qt=qt, kt=kt, vt=vt, d2=dout.transpose(1, 2):
                   torch.autograd.grad(o2, (qt, kt, vt), d2, retain_graph=True))


def forced(tile, fn):
    """fn with the GEMM tile entry `tile` forced (SAMEBITS_GEMM_TILE is read on
    every call, so also while a CUDA graph is captured)."""
    def call():
        with forced_tile(tile):
            return fn()
    return call


def gemm_cases(shapes=((4096, 4096), (14336, 4096)), ms=(1, 16, 64, 256, 2048, 16384), tiles=(), bias=False):
    """bias: y = x W^T + b (a bf16 bias of N), the case names end in "+bias"."""
    for N, K in shapes:
        w = torch.randn(N, K, dtype=torch.bfloat16, device="cuda") / K ** 0.5
        b = torch.randn(N, dtype=torch.bfloat16, device="cuda") if bias else None
        tag = "+bias" if bias else ""
        for M in ms:
            x = torch.randn(M, K, dtype=torch.bfloat16, device="cuda")
            flops = 2 * M * N * K
            yield f"gemm {M}x{N}x{K}{tag} samebits", flops, (lambda x=x, w=w: samebits.dense.linear(x, w, b))
            for t in tiles:
                yield (f"gemm {M}x{N}x{K}{tag} samebits[{t}]", flops,
                       forced(t, lambda x=x, w=w: samebits.dense.linear(x, w, b)))
            yield f"gemm {M}x{N}x{K}{tag} cublas", flops, (lambda x=x, w=w: F.linear(x, w, b))


def profile_case(fn, flush, reps, out_path, warm=False):
    """Kernels of `reps` calls, each after an L2 flush; per call: [(name, start_us, dur_us)]."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(reps):
            flush.zero_()
            torch.cuda.synchronize()
            if warm:
                fn()  # the call's data back into L2
                torch.cuda.synchronize()
            fn()
            torch.cuda.synchronize()
    prof.export_chrome_trace(out_path)
    with open(out_path) as f:
        trace = json.load(f)
    os.remove(out_path)
    kernels = sorted((e for e in trace["traceEvents"] if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    calls, cur = [], None
    for e in kernels:
        if e["name"].startswith("void at::native::vectorized_elementwise_kernel") and e["dur"] > 60:
            cur = []  # the flush (a 256 MiB fill, ~90 us; a call's own zero fills take less) opens a call
            calls.append(cur)
            continue
        if cur is not None:
            cur.append((e["name"], float(e["ts"]), float(e["dur"])))
    if warm:  # each group holds the warming call, then the timed one
        calls = [c[len(c) // 2:] for c in calls]
    return [c for c in calls if c]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", choices=["decode", "gemm", "bwd"])
    ap.add_argument("--bwd-lengths", default="1024,4096,16384", help="comma-separated L of the backward cases")
    ap.add_argument("--eager", action="store_true", help="profile eager calls instead of graph replays")
    ap.add_argument("--no-flush", action="store_true",
                    help="leave L2 warm (the call's own data may be in it): separates memory from the rest")
    ap.add_argument("--cases", default="", help="comma-separated substrings: only cases whose name has one")
    ap.add_argument("--gemm-tiles", default="", help="comma-separated tile entries to profile forced, beside the default")
    ap.add_argument("--gemm-ms", default="1,16,64,256,2048,16384", help="comma-separated M of the GEMM cases")
    ap.add_argument("--gemm-shapes", default="4096x4096,14336x4096", help="comma-separated NxK of the GEMM cases")
    ap.add_argument("--gemm-bias", action="store_true", help="GEMM cases with a bias (y = x W^T + b)")
    args = ap.parse_args()
    torch.manual_seed(0)
    samebits.set_value_checks(False)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    gens = []
    if args.only == "bwd":
        gens.append(bwd_cases(tuple(int(x) for x in args.bwd_lengths.split(","))))
        args.eager = True  # autograd backward: profiled eager
    if args.only in (None, "decode"):
        gens.append(decode_cases())
    if args.only in (None, "gemm"):
        gens.append(gemm_cases(shapes=[tuple(int(v) for v in sh.split("x")) for sh in args.gemm_shapes.split(",") if sh],
                               ms=[int(v) for v in args.gemm_ms.split(",") if v],
                               tiles=[t for t in args.gemm_tiles.split(",") if t], bias=args.gemm_bias))
    rows = []
    tmp = os.path.join(args.out, "_trace.json")
    for gen in gens:
        for name, work, fn in gen:
            if args.cases and not any(c in name for c in args.cases.split(",")):
                continue
            try:
                run = fn if args.eager else graphed(fn)
                calls = profile_case(run, flush, args.reps, tmp, warm=args.no_flush)
            except Exception as e:  # noqa: BLE001 - a peer that cannot run this case
                rows.append({"case": name, "error": f"{type(e).__name__}: {str(e)[:160]}"})
                print(f"{name:40s} ERROR {rows[-1]['error']}", flush=True)
                continue
            kinds = {}
            for c in calls:
                for i, (kn, _, d) in enumerate(c):
                    kinds.setdefault((i, kn), []).append(d)
            spans = [c[-1][1] + c[-1][2] - c[0][1] for c in calls]
            busy = [sum(d for _, _, d in c) for c in calls]
            row = {"case": name, "work": work, "calls": len(calls),
                   "kernels": [{"index": i, "name": kn, "median_us": statistics.median(ds)}
                               for (i, kn), ds in sorted(kinds.items())],
                   "span_us": statistics.median(spans), "busy_us": statistics.median(busy)}
            rows.append(row)
            unit = "GB/s" if name.startswith("decode") else "TFLOP/s"  # bwd: FLOPs 2.5x the forward's
            rate = work / (row["span_us"] * 1e-6) / (1e9 if unit == "GB/s" else 1e12)
            print(f"{name:40s} span {row['span_us']:8.1f} us  busy {row['busy_us']:8.1f} us  {rate:7.1f} {unit}",
                  flush=True)
            for k in row["kernels"]:
                print(f"    [{k['index']}] {k['median_us']:8.1f} us  {k['name'][:150]}", flush=True)
    with open(os.path.join(args.out, "profile_kernels.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "graph": not args.eager, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
