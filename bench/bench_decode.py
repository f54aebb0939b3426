"""Decode attention beside its peers, in one process, on one GPU.

One query token per sequence attends to `context` cached keys: head dim 128,
64 query heads over 8 KV heads (GQA 8:1), bf16. samebits reads a paged cache
(page 64 or --page, pages scattered; --page 0 a contiguous cache) through
samebits.attention_with_kvcache; the peers
read a contiguous (B, Hk, context, D) cache: PyTorch SDPA with the flash and
cuDNN backends (enable_gqa) and compiled FlexAttention. Bandwidth = the K and
V bytes the sequences own, read once, over the time; compared with a
device-to-device copy (bytes read + written). Each timed call is preceded by
an L2 flush; CUDA events; median of `--reps`, the implementations timed in
turn within each repetition.
--flush read (default): a 256 MiB write and then a 256 MiB read (a sum).
The write-backs happen during the read, and the timed call starts on an L2
of clean lines that hold none of its data. A decode step's previous kernels
leave a few MB dirty at most.
--flush write: the flush is the 256 MiB write alone, as until 2026-11-26. It
leaves the whole L2 dirty, so the timed call also pays for writing ~50 MB
back to memory as its own reads evict those lines: on an H100, 1 x 32k
measured 66 % of copy this way against 76-78 % with the read flush, and
every peer lost alike (docs/decode_design.md, "The L2 flush").
--graph: every implementation is captured in a CUDA graph (--captures
times, default once; the time is the median over all captures) and the
replays are timed (how decode steps are served), so host time per call
counts for none of them; without it the eager calls are timed.

--short N: every sequence holds context - N keys, so its last KV block is
partial (what a real decode batch has almost always); the peers get the same
keys.
--layout nhd (default) | hnd: the memory order of samebits' cache. nhd is
(pages, page_size, Hk, D) row-major, the flash-attn cache layout: a KV
head's keys sit 256 bytes apart every Hk x 256 bytes. hnd holds
(pages, Hk, page_size, D) and passes its (pages, page_size, Hk, D) view
(transpose(1, 2), strides only): a head's keys of a page are contiguous.
--peer-layout hsd (default) | shd: the peers' K and V, contiguous
(B, Hk, keys, D), or the (B, Hk, keys, D) view of a contiguous
(B, keys, Hk, D) tensor (the nhd order).

Each round times every implementation once, in turn, after the same
flush, so each timed call follows (before the flush) a call of another
implementation. That matters: a call that follows a call of its own kernel
runs faster, samebits' decode by up to 3 us at small shapes, the peers by
up to 0.7 us (bench/predecessor_probe.py, thirty-second session). --lead puts
a copy of samebits' call first, under the name 'lead'; samebits then follows
itself while the peers do not, which reads samebits faster than the peers
are read (the thirty-first session's default, dropped).

usage: python bench/bench_decode.py --out DIR [--reps 20] [--no-flex] [--graph] [--short N] [--flush read|write]
    [--page P] [--layout nhd|hnd] [--peer-layout hsd|shd] [--shapes 1x32768,...] [--lead] [--head-dim 64|128|256]
    [--q-len Q]
(PYTHONPATH=python and SAMEBITS_LIBRARY pointing at the library when run
from a source tree).
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F

import samebits
from bench_util import Flush, graphed

H, HK, D = 64, 8, 128
SHAPES = [(b, c) for b in (1, 4, 16, 64, 256) for c in (1024, 4096, 16384, 32768, 131072) if b * c <= 4 << 20]
FLEX_SHAPES = {(1, 32768), (1, 131072), (16, 16384), (64, 4096)}


def timed(fn, flush, reps):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        flush.zero_()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    ts.sort()
    return ts[len(ts) // 2]


def timed_interleaved(runs, flush, reps, pooled=False):
    """Median ms of each of `runs` (name -> callable), every repetition
    timing each once in turn after the same flush, so drift in clocks or
    memory state hits all alike. pooled: the keys are (name, capture) pairs;
    the result also holds, under each name, the median over all of its
    captures' samples."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = {name: [] for name in runs}
    for _ in range(reps):
        for name, fn in runs.items():
            flush.zero_()
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            ts[name].append(e0.elapsed_time(e1))
    med = {name: sorted(t)[len(t) // 2] for name, t in ts.items()}
    if pooled:
        groups = {}
        for (name, _c), t in ts.items():
            groups.setdefault(name, []).extend(t)
        med.update({name: sorted(t)[len(t) // 2] for name, t in groups.items()})
    return med


def copy_bandwidth():
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    ms = timed(lambda: b.copy_(a), torch.empty(1, device="cuda"), 10)
    return 2 * a.numel() / (ms * 1e-3) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--no-flex", action="store_true")
    ap.add_argument("--graph", action="store_true", help="time CUDA-graph replays of every implementation")
    ap.add_argument("--captures", type=int, default=1,
                    help="with --graph: graphs captured per implementation, timed in turn; the time is the median "
                         "over all of them (a first capture can run slower), each capture's median recorded too")
    ap.add_argument("--short", type=int, default=0, help="keys per sequence: context - SHORT")
    ap.add_argument("--page", type=int, default=64,
                    help="page size of samebits' cache (16..256; 0: a contiguous cache, no block table)")
    ap.add_argument("--layout", choices=("nhd", "hnd"), default="nhd", help="samebits' cache memory order (above)")
    ap.add_argument("--peer-layout", choices=("hsd", "shd"), default="hsd", help="the peers' K/V memory order (above)")
    ap.add_argument("--flush", choices=("write", "read"), default="read", help="the L2 flush (see above)")
    ap.add_argument("--shapes", default="", help="comma list of BxCONTEXT to run (default: all)")
    ap.add_argument("--lead", action="store_true",
                    help="capture and time a copy of samebits' call first, under the name 'lead': samebits' timed "
                         "call then follows a call of its own kernel, the peers' do not (see above)")
    ap.add_argument("--q-len", type=int, default=1,
                    help="queries per sequence (speculative verify / chunked prefill: causal, the last Q keys)")
    ap.add_argument("--head-dim", type=int, default=128, choices=(64, 128, 256), help="D (default 128)")
    args = ap.parse_args()
    global D
    D = args.head_dim
    PAGE = args.page
    torch.manual_seed(0)
    dev = "cuda"
    # the per-call value checks read block_table on the host (a sync); a
    # decode loop runs with them off (or under a CUDA graph, which skips them)
    samebits.set_value_checks(False)
    flush = Flush(args.flush)
    copy_gbs = copy_bandwidth()
    flex = None
    if not args.no_flex:
        from torch.nn.attention.flex_attention import flex_attention
        flex = torch.compile(flex_attention)
    rows = []
    shapes = SHAPES
    if args.shapes:
        shapes = [tuple(int(x) for x in sh.split("x")) for sh in args.shapes.split(",")]
    for B, ctx in shapes:
        row = {"gpu": torch.cuda.get_device_name(), "batch": B, "context": ctx, "heads": H, "kv_heads": HK,
               "head_dim": D, "page": PAGE, "layout": args.layout, "peer_layout": args.peer_layout, "copy_gbs": copy_gbs, "graph": args.graph, "flush": args.flush}
        keys = ctx - args.short
        row["keys"] = keys
        kv_bytes = 2 * B * keys * HK * D * 2
        Q = args.q_len
        row["q_len"] = Q
        q = torch.randn(B, Q, H, D, dtype=torch.bfloat16, device=dev)
        def cache():  # (pages | B, page_size | ctx, Hk, D), in --layout's memory order
            n, s = (B * ctx // PAGE, PAGE) if PAGE else (B, ctx)
            if args.layout == "hnd":
                return torch.randn(n, HK, s, D, dtype=torch.bfloat16, device=dev).transpose(1, 2)
            return torch.randn(n, s, HK, D, dtype=torch.bfloat16, device=dev)
        kc, vc = cache(), cache()
        # paged: pages scattered; else a contiguous cache of one page per sequence
        table = torch.randperm(B * ctx // PAGE, device=dev, dtype=torch.int32).view(B, ctx // PAGE) if PAGE else None
        seqlens = torch.full((B,), keys, dtype=torch.int32, device=dev)
        ws_bytes, _ = samebits.kvcache_workspace_size(q, kc, table)
        ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=dev)  # caller workspace: capturable
        def ours():
            return samebits.attention_with_kvcache(q, kc, vc, cache_seqlens=seqlens, block_table=table, causal=True,
                                                   workspace=ws)
        impls = {"lead": ours} if args.lead else {}
        impls["samebits"] = ours
        # the peers' contiguous cache holds the same keys in logical order
        def logical(c):
            return c if table is None else c[table.long().view(-1)].reshape(B, ctx, HK, D)
        def peer(c):
            if args.peer_layout == "shd":
                return logical(c)[:, :keys].contiguous().transpose(1, 2)
            return logical(c)[:, :keys].transpose(1, 2).contiguous()
        kd, vd = peer(kc), peer(vc)
        qd = q.transpose(1, 2)
        from torch.nn.attention import SDPBackend, sdpa_kernel
        # Q > 1: query i sees keys < keys - Q + 1 + i (causal, aligned at the end)
        mask = None
        if Q > 1:
            from torch.nn.attention.bias import causal_lower_right
            mask = causal_lower_right(Q, keys)
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            def call(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qd, kd, vd, attn_mask=mask, enable_gqa=True)
            impls[name] = call
        if flex is not None and (B, ctx) in FLEX_SHAPES:
            if Q == 1:
                impls["flex"] = lambda: flex(qd, kd, vd, enable_gqa=True)
        runs = {}  # (name, capture) -> callable
        captures = args.captures if args.graph else 1
        for name, fn in impls.items():
            try:
                for c in range(captures):
                    runs[(name, c)] = graphed(fn) if args.graph else fn
                    runs[(name, c)]()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a peer that cannot run this shape
                for c in range(captures):
                    runs.pop((name, c), None)
                row[name + "_error"] = f"{type(e).__name__}: {str(e)[:120]}"
        per = timed_interleaved(runs, flush, args.reps, pooled=True)
        for name in impls:
            if (name, 0) not in runs:
                continue
            ms = per[name]
            row[name + "_us"] = ms * 1e3
            row[name + "_gbs"] = kv_bytes / (ms * 1e-3) / 1e9
            if captures > 1:
                row[name + "_us_by_capture"] = [round(per[(name, c)] * 1e3, 2) for c in range(captures)]
        print(json.dumps(row), flush=True)
        rows.append(row)
        del kc, vc, kd, vd, table
        torch.cuda.empty_cache()
    os.makedirs(args.out, exist_ok=True)
    tag = (("_graph" if args.graph else "") + (f"_q{args.q_len}" if args.q_len != 1 else "")
           + (f"_d{args.head_dim}" if args.head_dim != 128 else "") + (f"_short{args.short}" if args.short else "")
           + (f"_page{args.page}" if args.page != 64 else "") + (f"_{args.layout}" if args.layout != "nhd" else "")
           + (f"_peer{args.peer_layout}" if args.peer_layout != "hsd" else "") + ("_writeflush" if args.flush == "write" else "")
           + ("_lead" if args.lead else ""))
    with open(os.path.join(args.out, f"bench_decode{tag}.json"), "w") as f:
        json.dump(rows, f, indent=1)
    names = ["samebits", "flash", "cudnn", "flex"] + (["lead"] if args.lead else [])
    mode = "CUDA-graph replays" if args.graph else "eager calls"
    lines = [f"copy bandwidth {copy_gbs:.0f} GB/s; GB/s of K/V read (% of copy); {mode}; "
             f"keys per sequence: context - {args.short}; page {args.page}; layout {args.layout}; "
             f"peers {args.peer_layout}; L2 flush: {args.flush}", "",
             "| batch | context | " + " | ".join(names) + " | samebits / best peer |",
             "|---|---|" + "---|" * (len(names) + 1)]
    for r in rows:
        cells = [f"{r[n + '_gbs']:.0f} ({100 * r[n + '_gbs'] / copy_gbs:.0f}%)" if n + "_gbs" in r else "-"
                 for n in names]
        peers = [r[n + "_gbs"] for n in ("flash", "cudnn", "flex") if n + "_gbs" in r]
        ratio = f"{r['samebits_gbs'] / max(peers):.2f}x" if peers and "samebits_gbs" in r else "-"
        lines.append(f"| {r['batch']} | {r['context']} | " + " | ".join(cells) + f" | {ratio} |")
    table = "\n".join(lines)
    with open(os.path.join(args.out, f"bench_decode{tag}.md"), "w") as f:
        f.write(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
