#!/usr/bin/env python3
"""Attention forward benchmark: samebits (sm90 kernel, through the C ABI)
beside PyTorch SDPA with the cuDNN and flash backends and compiled
FlexAttention, in one process on one GPU.

Method: bf16 (or fp16) inputs, 16 heads, batch * L = 16k tokens, head dims
64/128/256, causal and not. Each kernel is warmed up, then timed one call at
a time with CUDA events over `--reps` calls, rotating between input sets
that together exceed L2; the median is reported. FLOPs = 4 * B * H * L^2 * d
(halved for causal). Writes raw JSON, a Markdown table and a PNG plot to
--out.

usage: python bench/bench_attention.py --lib .carry/libsamebits.so --out $OUT
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

SB_F16, SB_BF16 = 1, 2
SB_CUDA = 1


class SbView(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("batch_stride", ctypes.c_int64),
                ("row_stride", ctypes.c_int64), ("head_stride", ctypes.c_int64)]


class SbAttentionParams(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int), ("device", ctypes.c_int), ("stream", ctypes.c_void_p),
        ("batch", ctypes.c_int32), ("num_heads", ctypes.c_int32), ("num_heads_k", ctypes.c_int32),
        ("head_dim", ctypes.c_int32), ("seqlen_q", ctypes.c_int32), ("seqlen_k", ctypes.c_int32),
        ("cu_seqlens_q", ctypes.c_void_p), ("cu_seqlens_k", ctypes.c_void_p),
        ("seqused_k", ctypes.c_void_p), ("block_table", ctypes.c_void_p),
        ("block_table_batch_stride", ctypes.c_int64), ("page_size", ctypes.c_int32),
        ("softmax_scale", ctypes.c_float), ("softcap", ctypes.c_float),
        ("window_left", ctypes.c_int32), ("window_right", ctypes.c_int32),
        ("q", SbView), ("k", SbView), ("v", SbView), ("out", SbView), ("lse", SbView),
        ("dout", SbView), ("dq", SbView), ("dk", SbView), ("dv", SbView),
    ]


def view(t):
    # (B, L, H, D) tensor -> sb_view; lse (B, H, L): "row" is L, "head" is H
    return SbView(t.data_ptr(), t.stride(0), t.stride(1), t.stride(2))


class Samebits:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.sb_attention_forward.argtypes = [ctypes.POINTER(SbAttentionParams)]
        self.lib.sb_attention_forward.restype = ctypes.c_int
        self.lib.sb_last_error.restype = ctypes.c_char_p

    def forward(self, q, k, v, out, lse, causal):
        B, L, H, D = q.shape
        p = SbAttentionParams()
        p.dtype = SB_BF16 if q.dtype == torch.bfloat16 else SB_F16
        p.device = SB_CUDA
        p.stream = torch.cuda.current_stream().cuda_stream
        p.batch, p.num_heads, p.num_heads_k, p.head_dim = B, H, k.shape[2], D
        p.seqlen_q, p.seqlen_k = L, k.shape[1]
        p.softmax_scale = 1.0 / math.sqrt(D)
        p.window_left, p.window_right = -1, (0 if causal else -1)
        p.q, p.k, p.v, p.out = view(q), view(k), view(v), view(out)
        p.lse = SbView(lse.data_ptr(), lse.stride(0), lse.stride(2), lse.stride(1))
        rc = self.lib.sb_attention_forward(ctypes.byref(p))
        if rc != 0:
            raise RuntimeError("samebits: %d %s" % (rc, self.lib.sb_last_error().decode()))


def time_fn(fn, n_inputs, warmup, reps):
    for i in range(warmup):
        fn(i % n_inputs)
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn(i % n_inputs)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def write_plot(results, path, title):
    """TFLOP/s against L, one line per implementation, one panel per (causal, d)."""
    names = ["samebits", "cudnn", "flash", "flex"]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        dims = sorted({r["head_dim"] for r in results})
        fig, axes = plt.subplots(2, len(dims), figsize=(5 * len(dims), 8), squeeze=False)
        for ci, causal in enumerate((False, True)):
            for di, D in enumerate(dims):
                ax = axes[ci][di]
                rs = sorted((r for r in results if r["head_dim"] == D and r["causal"] == causal),
                            key=lambda r: r["seqlen"])
                for n in names:
                    pts = [(r["seqlen"], r[n + "_tflops"]) for r in rs if n + "_tflops" in r]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=n)
                ax.set_xscale("log", base=2)
                ax.set_title("d=%d %s" % (D, "causal" if causal else "non-causal"))
                ax.set_xlabel("L")
                ax.set_ylabel("TFLOP/s")
                ax.legend()
        fig.suptitle("attention forward, " + title)
        fig.tight_layout()
        fig.savefig(path, dpi=80)
    except Exception as e:  # noqa: BLE001
        print("plot skipped:", e)


def replot(argv):
    """`bench_attention.py --replot OUT.png RESULTS.json...`: redraw the plot
    from saved raw JSON (the device returns at most 8 files per call)."""
    import json as _json
    out, files = argv[0], argv[1:]
    results = [r for f in files for r in _json.load(open(f))]
    write_plot(results, out, "%s, %s" % (results[0]["gpu"], results[0]["dtype"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=".carry/libsamebits.so")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--dims", default="64,128,256")
    ap.add_argument("--lengths", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--flex-dims", default="128", help="head dims to time FlexAttention at")
    ap.add_argument("--flex-lengths", default="1024,4096,16384")
    ap.add_argument("--no-flex", action="store_true")
    args = ap.parse_args()

    from torch.nn.attention import SDPBackend, sdpa_kernel
    sb = Samebits(args.lib)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    dev = torch.device("cuda")
    flex = None
    if not args.no_flex:
        try:
            from torch.nn.attention.flex_attention import flex_attention, create_block_mask
            flex = torch.compile(flex_attention, dynamic=False)
        except Exception as e:  # noqa: BLE001
            print("flex unavailable:", e)
    results = []
    gpu = torch.cuda.get_device_name()
    for D in [int(x) for x in args.dims.split(",")]:
        for causal in (False, True):
            for L in [int(x) for x in args.lengths.split(",")]:
                B = max(1, args.tokens // L)
                H = args.heads
                flops = 4.0 * B * H * L * L * D * (0.5 if causal else 1.0)
                # rotate input sets so the inputs of one call are not in L2
                n_inputs = 2
                inputs = []
                for _ in range(n_inputs):
                    q = torch.randn(B, L, H, D, device=dev, dtype=dtype)
                    k = torch.randn(B, L, H, D, device=dev, dtype=dtype)
                    v = torch.randn(B, L, H, D, device=dev, dtype=dtype)
                    inputs.append((q, k, v))
                out = torch.empty(B, L, H, D, device=dev, dtype=dtype)
                lse = torch.empty(B, H, L, device=dev, dtype=torch.float32)
                row = {"gpu": gpu, "dtype": args.dtype, "head_dim": D, "causal": causal, "seqlen": L,
                       "batch": B, "heads": H, "flops": flops}

                def run_sb(i):
                    q, k, v = inputs[i]
                    sb.forward(q, k, v, out, lse, causal)

                def sdpa(backend):
                    def f(i):
                        q, k, v = inputs[i]
                        with sdpa_kernel([backend]):
                            F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                           v.transpose(1, 2), is_causal=causal)
                    return f

                cands = [("samebits", run_sb), ("cudnn", sdpa(SDPBackend.CUDNN_ATTENTION)),
                         ("flash", sdpa(SDPBackend.FLASH_ATTENTION))]
                if flex is not None and str(D) in args.flex_dims.split(",") and \
                        str(L) in args.flex_lengths.split(","):
                    try:
                        bm = None
                        if causal:
                            bm = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, L, L,
                                                   device="cuda")
                        qt = [tuple(x.transpose(1, 2) for x in inp) for inp in inputs]

                        def run_flex(i, bm=bm, qt=qt):
                            q, k, v = qt[i]
                            flex(q, k, v, block_mask=bm)
                        cands.append(("flex", run_flex))
                    except Exception as e:  # noqa: BLE001
                        print("flex setup failed:", e)
                for name, fn in cands:
                    try:
                        ms = time_fn(fn, n_inputs, args.warmup, args.reps)
                        row[name + "_ms"] = ms
                        row[name + "_tflops"] = flops / ms / 1e9
                    except Exception as e:  # noqa: BLE001
                        row[name + "_error"] = str(e)[:200]
                if "samebits_tflops" in row and "cudnn_tflops" in row:
                    row["ratio_vs_cudnn"] = row["samebits_tflops"] / row["cudnn_tflops"]
                print(json.dumps(row), flush=True)
                results.append(row)
                del inputs, out, lse
                torch.cuda.empty_cache()

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_attention.json"), "w") as f:
        json.dump(results, f, indent=1)
    names = ["samebits", "cudnn", "flash", "flex"]
    lines = ["| d | causal | L | B | " + " | ".join(n + " TFLOP/s" for n in names) + " | samebits/cuDNN |",
             "|---|---|---|---|" + "---|" * len(names) + "---|"]
    for r in results:
        cells = ["%.0f" % r[n + "_tflops"] if n + "_tflops" in r else "-" for n in names]
        ratio = "%.2fx" % r["ratio_vs_cudnn"] if "ratio_vs_cudnn" in r else "-"
        lines.append("| %d | %s | %d | %d | %s | %s |" % (r["head_dim"], "yes" if r["causal"] else "no",
                                                          r["seqlen"], r["batch"], " | ".join(cells), ratio))
    table = "\n".join(lines)
    with open(os.path.join(args.out, "bench_attention.md"), "w") as f:
        f.write("GPU: %s, %s, %d heads, batch*L = %d\n\n" % (gpu, args.dtype, args.heads, args.tokens) + table + "\n")
    print(table)
    write_plot(results, os.path.join(args.out, "bench_attention.png"), "%s, %s" % (gpu, args.dtype))

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--replot":
        replot(sys.argv[2:])
    else:
        main()
