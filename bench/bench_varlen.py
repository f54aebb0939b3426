#!/usr/bin/env python3
"""Packed (varlen) attention, forward and backward, on batches of random
lengths: the trainer's case. Times samebits alone, as TFLOP/s over the
batch's sum of L^2, under each value of the FREE knobs named in --knobs
(environment variables the library reads at every call), alternated in
--rounds rounds, so one run compares the ways of loading a sequence's last
tiles (SAMEBITS_FWD_TAIL_TMA, SAMEBITS_BWD_TAIL_TMA: 1 by TMA, 0 by hand).

Method: value checks off (no host sync per call); per timed sample,
--calls back-to-back calls between two CUDA events, divided by --calls;
median of --reps samples. Forward: attention_varlen; backward:
torch.autograd.grad(out, (q, k, v), dout, retain_graph=True) (the
gradients returned, not added into .grad: before 2026-11-26's last runs
the bench used autograd.backward, and every call after the first also
timed three bf16 additions into .grad, ~200 us at 16k tokens). Lengths: uniform
in [lo, hi] from a fixed seed until --tokens tokens. Prints one JSON line
per (distribution, causal, knob value, round) and writes them to --out.

usage: PYTHONPATH=python SAMEBITS_LIBRARY=... python bench/bench_varlen.py --out $OUT
"""
import argparse
import json
import os
import random
import statistics

import torch

import samebits


def lengths(lo, hi, tokens, seed):
    rng = random.Random(seed)
    out = []
    while sum(out) < tokens:
        out.append(rng.randint(lo, hi))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--dists", default="64-2048,512-4096", help="lo-hi ranges of the lengths")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=16)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--knobs", default="SAMEBITS_FWD_TAIL_TMA,SAMEBITS_BWD_TAIL_TMA")
    ap.add_argument("--values", default="1,0", help="the knobs' values to time, in turn")
    ap.add_argument("--flex", action="store_true",
                    help="also time compiled FlexAttention with a document mask (the peer for packed batches)")
    ap.add_argument("--profile", action="store_true",
                    help="also list the kernels of one backward (torch.profiler, mean of 3 calls, us)")
    args = ap.parse_args()
    samebits.set_value_checks(False)
    dev, dt = torch.device("cuda"), torch.bfloat16
    H, Hk, D = args.heads, args.kv_heads, args.dim
    knobs = [k for k in args.knobs.split(",") if k]
    rows = []
    for dist in args.dists.split(","):
        lo, hi = (int(x) for x in dist.split("-"))
        lens = lengths(lo, hi, args.tokens, 2026 + lo + hi)
        T = sum(lens)
        cu = torch.tensor([0] + list(__import__("itertools").accumulate(lens)), dtype=torch.int32, device=dev)
        sq = sum(L * L for L in lens)
        g = torch.Generator(device=dev).manual_seed(7)
        q = torch.randn(T, H, D, device=dev, dtype=dt, generator=g).requires_grad_()
        k = torch.randn(T, Hk, D, device=dev, dtype=dt, generator=g).requires_grad_()
        v = torch.randn(T, Hk, D, device=dev, dtype=dt, generator=g).requires_grad_()
        dout = torch.randn(T, H, D, device=dev, dtype=dt, generator=g)
        for causal in (False, True):
            fwd_flops = 4.0 * H * sq * D * (0.5 if causal else 1.0)

            def fwd():
                return samebits.attention_varlen(q, k, v, cu, cu, causal=causal)

            def timed(fn):
                for _ in range(2):
                    fn()
                torch.cuda.synchronize()
                ts = []
                for _ in range(args.reps):
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                    for _ in range(args.calls):
                        fn()
                    e.record()
                    e.synchronize()
                    ts.append(s.elapsed_time(e) / args.calls)
                return statistics.median(ts)

            if args.profile:
                from torch.profiler import ProfilerActivity, profile
                out = fwd()
                for _ in range(2):
                    torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(3):
                        torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
                    torch.cuda.synchronize()
                kern = {}
                for ev in prof.events():
                    if ev.device_type.name == "CUDA":
                        kern[ev.name] = kern.get(ev.name, 0.0) + ev.device_time / 3
                row = {"dist": dist, "causal": causal, "profile_bwd_us": {k[:90]: round(v, 1) for k, v in
                                                                          sorted(kern.items(), key=lambda x: -x[1])}}
                print(json.dumps(row), flush=True)
                rows.append(row)
                del out
            for r in range(args.rounds):
                for val in args.values.split(","):
                    for kn in knobs:
                        os.environ[kn] = val
                    with torch.no_grad():
                        f_ms = timed(fwd)
                    out = fwd()
                    b_ms = timed(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True))
                    row = {"gpu": torch.cuda.get_device_name(), "impl": "samebits", "dist": dist, "seqs": len(lens), "tokens": T,
                           "heads": H, "kv_heads": Hk, "head_dim": D, "causal": causal, "knobs": knobs, "value": val,
                           "round": r + 1, "fwd_ms": f_ms, "fwd_tflops": fwd_flops / f_ms / 1e9,
                           "bwd_ms": b_ms, "bwd_tflops": 2.5 * fwd_flops / b_ms / 1e9}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
                    del out
            if args.flex:
                # The same batch as one sequence of T tokens whose keys are
                # masked to the query's own document (and causal).
                row = {"gpu": torch.cuda.get_device_name(), "impl": "flex", "dist": dist, "seqs": len(lens),
                       "tokens": T, "heads": H, "kv_heads": Hk, "head_dim": D, "causal": causal}
                try:
                    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
                    doc = torch.repeat_interleave(torch.arange(len(lens), device=dev),
                                                  torch.tensor(lens, device=dev))
                    if causal:
                        def mask_mod(b, h, qi, ki):
                            return (doc[qi] == doc[ki]) & (qi >= ki)
                    else:
                        def mask_mod(b, h, qi, ki):
                            return doc[qi] == doc[ki]
                    bm = create_block_mask(mask_mod, None, None, T, T, device=dev)
                    fx = torch.compile(flex_attention, dynamic=False)
                    qf, kf, vf = (x.detach().view(1, T, x.shape[1], D).transpose(1, 2).contiguous().requires_grad_()
                                  for x in (q, k, v))
                    doutf = dout.view(1, T, H, D).transpose(1, 2).contiguous()

                    def ffwd():
                        return fx(qf, kf, vf, block_mask=bm, enable_gqa=H != Hk)

                    with torch.no_grad():
                        f_ms = timed(ffwd)
                    of = ffwd()
                    b_ms = timed(lambda: torch.autograd.grad(of, (qf, kf, vf), doutf, retain_graph=True))
                    row.update({"fwd_ms": f_ms, "fwd_tflops": fwd_flops / f_ms / 1e9, "bwd_ms": b_ms,
                                "bwd_tflops": 2.5 * fwd_flops / b_ms / 1e9})
                    del of
                except Exception as e:  # noqa: BLE001 - the peer could not run this configuration
                    row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                print(json.dumps(row), flush=True)
                rows.append(row)
    for kn in knobs:
        os.environ.pop(kn, None)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_varlen.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
