"""Does a timed call depend on which kernel ran before it, across the L2 flush?

The thirty-first session found the probes' first configuration reading slow
and put a throwaway copy ('lead') in front of it. first_place_probe.py (this
session) then saw, with the order rotated, a graph run 1-3 % *faster* when
the graph before it (before the flush) was the same call, and slower when it
was the other implementation. If that is what 'first place' was, the lead
makes samebits' call follow a copy of itself while the peers follow another
implementation: the tables would then read samebits warm and the peers cold.

Here every ordered pair (P, X) of the calls of a shape is timed: one replay
of P, the L2 flush (256 MiB written, then 256 MiB read), then X between CUDA
events; 'flush' as P is the flush alone (no call before it). The pairs are
taken in a rotating order, --reps times each; medians in us.

Shapes: GEMM MxNxK (samebits' linear beside cuBLAS through F.linear), and
decode bBxC (samebits' attention_with_kvcache over a paged cache of 64-token
pages beside SDPA's cuDNN backend on contiguous K/V, 64 query heads, 8 KV
heads, head dim 128, bf16: bench_decode.py's defaults).

--variants adds samebits calls captured under the library's knobs, each a
call of its own in the pairs (e.g. "nopdl:SAMEBITS_DECODE_PDL=0,walk:
SAMEBITS_DECODE_WALK=force"; several settings of one variant joined by
'+'), to see which schedule or launch form pays for a cold start.

    SAMEBITS_LIBRARY=lib.so PYTHONPATH=python:bench python bench/predecessor_probe.py --out pp.json
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

import samebits
from bench_util import Flush, forced_env, graphed
from samebits import dense as D

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--reps", type=int, default=15)
ap.add_argument("--shapes", default="384x4096x4096,1280x4096x4096,b1x4096,b1x32768,b16x4096")
ap.add_argument("--twin", action="store_true",
                help="add predecessors 'twin' and 'peer twin': samebits' and the peer's call of the same shape on "
                     "buffers of their own (same kernels, other data), to tell a warm code/launch state from "
                     "warm data")
ap.add_argument("--variants", default="",
                help="comma list of NAME:ENV=VALUE[+ENV=VALUE]: samebits' call captured under those settings")
args = ap.parse_args()
VARIANTS = {}
for item in filter(None, args.variants.split(",")):
    name, settings = item.split(":", 1)
    VARIANTS[name] = dict(kv.split("=", 1) for kv in settings.split("+"))


# The captured calls' closures (and so their input tensors) for the shape
# being timed: a graph replay reads its inputs' memory, which must stay
# allocated until the graph is dropped.
ALIVE = []


def keep(fn):
    ALIVE.append(fn)
    return fn


def with_variants(ours, calls):
    """calls plus, for each --variants entry, samebits' call (`ours`)
    captured under its settings (the library reads its knobs on every
    call, so at capture)."""
    for name, env in VARIANTS.items():
        with forced_env(env):
            calls[name] = graphed(ours)
    return calls


def gemm_data(M, N, K, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    return x, w


def gemm_calls(M, N, K):
    x, w = gemm_data(M, N, K, M + N + K)
    calls = with_variants(keep(lambda: D.linear(x, w)),
                          {"samebits": graphed(lambda: D.linear(x, w)), "cuBLAS": graphed(lambda: F.linear(x, w))})
    twins = {}
    if args.twin:
        x2, w2 = gemm_data(M, N, K, M + N + K + 1)
        twins["twin"] = graphed(keep(lambda: D.linear(x2, w2)))
        twins["peer twin"] = graphed(lambda: F.linear(x2, w2))
    return calls, twins


def decode_data(B, ctx, H, HK, Dh, page):
    q = torch.randn(B, 1, H, Dh, dtype=torch.bfloat16, device="cuda")
    kc = torch.randn(B * ctx // page, page, HK, Dh, dtype=torch.bfloat16, device="cuda")
    vc = torch.randn_like(kc)
    table = torch.randperm(B * ctx // page, device="cuda", dtype=torch.int32).view(B, ctx // page)
    seqlens = torch.full((B,), ctx, dtype=torch.int32, device="cuda")
    ws_bytes, _ = samebits.kvcache_workspace_size(q, kc, table)
    ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")
    return q, kc, vc, table, seqlens, ws


def decode_calls(B, ctx, H=64, HK=8, Dh=128, page=64):
    samebits.set_value_checks(False)
    q, kc, vc, table, seqlens, ws = decode_data(B, ctx, H, HK, Dh, page)

    @keep
    def ours():
        return samebits.attention_with_kvcache(q, kc, vc, cache_seqlens=seqlens, block_table=table, causal=True,
                                               workspace=ws)

    from torch.nn.attention import SDPBackend, sdpa_kernel

    def cudnn_call(q, kc, vc, table):
        def logical(c):
            return c[table.long().view(-1)].reshape(B, ctx, HK, Dh).transpose(1, 2).contiguous()

        kd, vd, qd = logical(kc), logical(vc), q.transpose(1, 2)

        @keep
        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qd, kd, vd, enable_gqa=True)
        return cudnn

    calls = with_variants(ours, {"samebits": graphed(ours), "cuDNN": graphed(cudnn_call(q, kc, vc, table))})
    twins = {}
    if args.twin:
        q2, kc2, vc2, table2, seqlens2, ws2 = decode_data(B, ctx, H, HK, Dh, page)
        twins["twin"] = graphed(keep(lambda: samebits.attention_with_kvcache(
            q2, kc2, vc2, cache_seqlens=seqlens2, block_table=table2, causal=True, workspace=ws2)))
        twins["peer twin"] = graphed(cudnn_call(q2, kc2, vc2, table2))
    return calls, twins


flush = Flush("read")
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
result = {"device": torch.cuda.get_device_name(), "shapes": {}}
for sh in args.shapes.split(","):
    if sh.startswith("b"):
        B, ctx = (int(v) for v in sh[1:].split("x"))
        calls, twins = decode_calls(B, ctx)
    else:
        calls, twins = gemm_calls(*(int(v) for v in sh.split("x")))
    names = list(calls)
    pairs = [(p, x) for x in names for p in ["flush"] + names + list(twins)]
    calls.update(twins)
    ts = {pair: [] for pair in pairs}
    for rep in range(args.reps):
        for i in range(len(pairs)):
            p, x = pairs[(rep + i) % len(pairs)]
            if p == "flush":
                flush.zero_()
            else:
                calls[p]()
            flush.zero_()
            e0.record()
            calls[x]()
            e1.record()
            e1.synchronize()
            ts[(p, x)].append(e0.elapsed_time(e1) * 1e3)
    med = {f"{x} after {p}": round(statistics.median(v), 2) for (p, x), v in ts.items()}
    result["shapes"][sh] = med
    print(f"{sh}: " + "  ".join(f"{k} {v:.2f}" for k, v in med.items()), flush=True)
    del calls, twins
    ALIVE.clear()
    torch.cuda.empty_cache()
json.dump(result, open(args.out, "w"), indent=1)
