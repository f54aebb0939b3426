#!/usr/bin/env python3
"""Attention backward benchmark: samebits beside PyTorch SDPA (cuDNN, flash,
flash under torch.use_deterministic_algorithms) and compiled FlexAttention,
in one process on one GPU.

Method: each implementation's forward runs once per input set; the timed
region is `torch.autograd.backward(out, dout, retain_graph=True)` alone,
between CUDA events, rotating between two input sets, median of `--reps`
after `--warmup` calls. Two timings of each call:
- idle (`<impl>_ms`, the ratios `ratio_vs_<peer>`): the GPU waits for the
  call's host work, as in a loop whose host cannot run ahead;
- queued (`<impl>_queued_ms`, `queued_ratio_vs_<peer>`): the call is
  enqueued behind ~4 ms of bf16 matrix products and the start event, so its
  host work is hidden, as in a training step whose host runs ahead of the
  GPU. Products rather than a sleep kernel: behind a 10 ms sleep every
  implementation timed ~10 % faster at 16k tokens on an H100, far more than
  its host time, as if the idle GPU then ran at higher clocks.
  `<impl>_host_ms` is the call's host time (perf_counter, median); a queued
  time whose host time exceeds the products' is not recorded.
FLOPs = 2.5 x the forward's 4 * B * H * L^2 * d (halved for causal). bf16,
16 heads, batch * L = 16k tokens. A peer that cannot run a configuration
(for example a backend without a deterministic backward) is recorded with
its error instead of a time. Writes raw JSON and
a Markdown table to --out.

usage: PYTHONPATH=python SAMEBITS_LIBRARY=... python bench/bench_attention_backward.py --out $OUT
(--device cpu with tiny --lengths runs the same code as a smoke test)
"""
import argparse
import json
import os
import statistics

import torch
import torch.nn.functional as F

import samebits


QUEUE_MATMULS = 3  # 8192^3 bf16 products ahead of a queued call: ~4 ms on an H100 / H200


def timer(device):
    """run(fn, n_inputs, warmup, reps) -> (idle ms, queued ms or None, host ms)."""
    import time

    if device == "cuda":
        busy = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        busy_out = torch.empty_like(busy)

        def run(fn, n_inputs, warmup, reps):
            for i in range(warmup):
                fn(i % n_inputs)
            torch.cuda.synchronize()
            idle, queued, host = [], [], []
            for i in range(reps):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn(i % n_inputs)
                e.record()
                e.synchronize()
                idle.append(s.elapsed_time(e))
            for i in range(reps):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s0 = torch.cuda.Event(enable_timing=True)
                s0.record()
                for _ in range(QUEUE_MATMULS):
                    torch.mm(busy, busy, out=busy_out)
                s.record()
                t0 = time.perf_counter()
                fn(i % n_inputs)
                host.append((time.perf_counter() - t0) * 1e3)
                e.record()
                e.synchronize()
                if host[-1] < s0.elapsed_time(s):  # the products outlasted the host work
                    queued.append(s.elapsed_time(e))
            q = statistics.median(queued) if len(queued) * 2 > reps else None
            return statistics.median(idle), q, statistics.median(host)
        return run

    def run_cpu(fn, n_inputs, warmup, reps):
        for i in range(warmup):
            fn(i % n_inputs)
        ts = []
        for i in range(reps):
            t0 = time.perf_counter()
            fn(i % n_inputs)
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts), None, statistics.median(ts)
    return run_cpu


def implementations(causal, flex):
    """name -> forward(q, k, v) on (B, L, H, D) leaves, returning (B, L, H, D)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def sdpa(backend, deterministic=False):
        def f(q, k, v):
            prev = torch.are_deterministic_algorithms_enabled()
            torch.use_deterministic_algorithms(deterministic)
            try:
                with sdpa_kernel([backend]):
                    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                       is_causal=causal)
            finally:
                torch.use_deterministic_algorithms(prev)
            return o.transpose(1, 2)
        return f

    impls = {
        "samebits": lambda q, k, v: samebits.attention(q, k, v, causal=causal),
        "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
        "flash": sdpa(SDPBackend.FLASH_ATTENTION),
        "flash_det": sdpa(SDPBackend.FLASH_ATTENTION, deterministic=True),
    }
    if flex is not None:
        flex_attention, create_block_mask = flex
        masks = {}

        def f(q, k, v):
            B, L, H, _ = q.shape
            bm = None
            if causal:
                if L not in masks:
                    masks[L] = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, L, L,
                                                 device=q.device)
                bm = masks[L]
            return flex_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                  block_mask=bm).transpose(1, 2)
        impls["flex"] = f
    return impls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dims", default="64,128,256")
    ap.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--flex-dims", default="128")
    ap.add_argument("--no-flex", action="store_true")
    ap.add_argument("--impls", default="", help="comma list of implementations to run (default: all)")
    args = ap.parse_args()
    dev = torch.device(args.device)
    dtype = torch.bfloat16
    flex = None
    if not args.no_flex and args.device == "cuda":
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex = (torch.compile(flex_attention, dynamic=False), create_block_mask)
    time_fn = timer(args.device)
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    rows = []
    for D in [int(x) for x in args.dims.split(",")]:
        for causal in (False, True):
            for L in [int(x) for x in args.lengths.split(",")]:
                B, H = max(1, args.tokens // L), args.heads
                flops = 2.5 * 4.0 * B * H * L * L * D * (0.5 if causal else 1.0)
                row = {"gpu": gpu, "dtype": "bf16", "head_dim": D, "causal": causal, "seqlen": L, "batch": B,
                       "heads": H, "flops": flops}
                impls = implementations(causal, flex if str(D) in args.flex_dims.split(",") else None)
                if args.impls:
                    impls = {k: f for k, f in impls.items() if k in args.impls.split(",")}
                for name, fwd in impls.items():
                    try:
                        sets = []
                        for _ in range(2):
                            q, k, v = (torch.randn(B, L, H, D, device=dev, dtype=dtype).requires_grad_()
                                       for _ in range(3))
                            out = fwd(q, k, v)
                            sets.append((out, torch.randn_like(out), (q, k, v)))

                        def bwd(i, name=name):
                            out, dout, leaves = sets[i]
                            det = name == "flash_det"
                            prev = torch.are_deterministic_algorithms_enabled()
                            torch.use_deterministic_algorithms(det)
                            try:
                                torch.autograd.backward(out, dout, retain_graph=True)
                            finally:
                                torch.use_deterministic_algorithms(prev)
                            for t in leaves:
                                t.grad = None

                        ms, queued_ms, host_ms = time_fn(bwd, 2, args.warmup, args.reps)
                        row[name + "_ms"] = ms
                        row[name + "_tflops"] = flops / (ms * 1e-3) / 1e12
                        row[name + "_host_ms"] = host_ms
                        if queued_ms is not None:
                            row[name + "_queued_ms"] = queued_ms
                            row[name + "_queued_tflops"] = flops / (queued_ms * 1e-3) / 1e12
                    except Exception as e:  # noqa: BLE001 - a peer that cannot run this configuration
                        row[name + "_error"] = f"{type(e).__name__}: {str(e)[:160]}"
                    finally:
                        sets = None
                        if args.device == "cuda":
                            torch.cuda.empty_cache()
                if "samebits_tflops" in row:
                    for peer in ("cudnn", "flash", "flash_det", "flex"):
                        if peer + "_tflops" in row:
                            row["ratio_vs_" + peer] = row["samebits_tflops"] / row[peer + "_tflops"]
                        if peer + "_queued_tflops" in row and "samebits_queued_tflops" in row:
                            row["queued_ratio_vs_" + peer] = row["samebits_queued_tflops"] / row[peer + "_queued_tflops"]
                print(json.dumps(row), flush=True)
                rows.append(row)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_attention_backward.json"), "w") as f:
        json.dump(rows, f, indent=1)
    names = ["samebits", "cudnn", "flash", "flash_det", "flex"]
    ratio_keys = ("ratio_vs_cudnn", "ratio_vs_flash_det", "queued_ratio_vs_cudnn", "queued_ratio_vs_flash_det")
    lines = ["| d | causal | L | B | " + " | ".join(n + " TFLOP/s" for n in names) +
             " | samebits/cuDNN | samebits/flash_det | queued: samebits/cuDNN | queued: samebits/flash_det |",
             "|---|---|---|---|" + "---|" * (len(names) + len(ratio_keys))]
    for r in rows:
        cells = ["%.0f" % r[n + "_tflops"] if n + "_tflops" in r else "-" for n in names]
        ratios = ["%.2fx" % r[k] if k in r else "-" for k in ratio_keys]
        lines.append("| %d | %s | %d | %d | %s | %s |" % (r["head_dim"], "yes" if r["causal"] else "no", r["seqlen"],
                                                          r["batch"], " | ".join(cells), " | ".join(ratios)))
    table = "\n".join(lines)
    with open(os.path.join(args.out, "bench_attention_backward.md"), "w") as f:
        f.write("GPU: %s, bf16, %d heads, batch*L = %d, backward only; TFLOP/s of the idle timing, "
                "ratios of both (see the module's docstring)\n\n" % (gpu, args.heads, args.tokens) +
                table + "\n")
    print(table)


if __name__ == "__main__":
    main()
