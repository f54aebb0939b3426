"""Dense ops on the GPU: invariance, accuracy and speed in one run.

    SAMEBITS_LIBRARY=path/to/libsamebits.so PYTHONPATH=python \
        python bench/bench_dense.py --out results.json [--quick] [--rows-only]

1. GEMM / RMSNorm / softmax / log_softmax / sum / mean: row r computed with
   M rows equals row r computed with the full batch, bitwise, for every M
   bucket (1, 2, 7, 64, 513, 4096, 16384), at two row offsets; for the GEMM
   also with every entry of the tile table forced (SAMEBITS_GEMM_TILE),
   compared with the default choice: the proof that the table is BITS-FREE.
2. 50 runs -> one hash (GEMM, RMSNorm forward+backward incl. dw, softmax
   backward).
3. Accuracy vs an fp64 reference, beside torch's own error.
4. set_batch_invariant_mode: a small transformer's logits for one prompt alone
   and inside a batch of 64 (mode on: equal; mode off: the negative control),
   and torch.compile == eager with the mode on.
5. Speed: GEMM vs torch (cuBLAS) at M = 1..16384 for four layer shapes
   (--tiles: also every tile-table entry forced, the data the table is
   chosen from),
   RMSNorm / softmax vs PyTorch and vs a device-to-device copy of the same
   bytes (bench_rowops says what each op is charged). Timing: CUDA events,
   warm-up, median of repeats, fresh L2 is not forced (inputs are >= 32 MiB
   at the sizes that matter).
   --rows-only: the row ops alone (1-3 and 5 without GEMMs); --skip-checks:
   speed only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from bench_util import forced_tile, graphed
from samebits import dense as D
from samebits import mode as Mode

dev = "cuda"
RESULTS: dict = {"invariance": {}, "hash": {}, "accuracy": {}, "mode": {}, "gemm": [], "rowops": [],
                 "gemm_tiles": []}
# Every entry of src/cuda/dense/gemm_tile_configs.h, forced through
# SAMEBITS_GEMM_TILE (read by the library on every call).
GEMM_TILES = ["64x32", "64x64", "64x128", "64x256", "128x128", "128x256", "64x128c2", "128x256m2", "128x128m2",
              "128x128pp", "128x128ppm2", "16x32s", "16x64s", "32x64s", "192x128", "128x224", "128x192", "128x160",
              "192x192", "256x160", "128x96", "192x192w3", "192x128w3", "128x168", "64x96", "16x112s"]


FAILS: list[str] = []


def h(*ts) -> str:
    m = hashlib.sha256()
    for t in ts:
        m.update(t.detach().contiguous().view(torch.uint8).cpu().numpy().tobytes())
    return m.hexdigest()[:16]


def rel(x, ref):
    return ((x.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def timeit(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def timeit_graph(fn, calls=10, reps=7):
    """Per-call time of `fn` replayed from a CUDA graph of `calls` calls:
    removes the Python / launch overhead, which dominates small kernels."""
    return timeit(graphed(fn, calls), reps, 2) / calls


def check(name, ok):
    if not ok:
        FAILS.append(name)
    return bool(ok)


# ------------------------------------------------------------------ invariance
def invariance(buckets, rows_only=False):
    g = torch.Generator(device=dev).manual_seed(0)
    Mmax = max(buckets) + 8
    K, N = 1024, 768
    x = torch.randn(Mmax, K, device=dev, dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device=dev, dtype=torch.bfloat16, generator=g) / 32
    wkn = w.t().contiguous()
    bias = torch.randn(N, device=dev, dtype=torch.bfloat16, generator=g)
    xs = torch.randn(Mmax, 4000, device=dev, dtype=torch.bfloat16, generator=g) * 3
    rw = torch.randn(4000, device=dev, dtype=torch.bfloat16, generator=g)
    xodd = torch.randn(Mmax, 72, device=dev, dtype=torch.float16, generator=g)  # K % 32 != 0
    wodd = torch.randn(100, 72, device=dev, dtype=torch.float16, generator=g)
    xf = torch.randn(Mmax, 96, device=dev, dtype=torch.float32, generator=g)
    wf = torch.randn(80, 96, device=dev, dtype=torch.float32, generator=g)
    ops = {
        "linear_nk_bias": lambda t: D.linear(t, w, bias),
        "mm_kn": lambda t: D.matmul(t, wkn),
        "linear_f16_odd_k": lambda t: D.linear(t, wodd),
        "linear_unaligned_scalar_path": lambda t: D.matmul(t[:, 1:1001], wkn[1:1001]),
        "rms_norm": lambda t: D.rms_norm(xs[: t.shape[0]], rw, 1e-6),
        "softmax": lambda t: D.softmax(xs[: t.shape[0]]),
        "log_softmax": lambda t: D.log_softmax(xs[: t.shape[0]]),
        "sum": lambda t: D.sum(xs[: t.shape[0]]),
        "mean_f32_out": lambda t: D.mean(xs[: t.shape[0]], dtype=torch.float32),
    }
    row_ops = ("rms_norm", "softmax", "log_softmax", "sum", "mean_f32_out")
    for name, fn in ops.items():
        if rows_only and name not in row_ops:
            continue
        src = xodd if "odd" in name else x
        full = fn(src)
        ok = True
        for M in buckets:
            for off in (0, 5):
                part = fn(src[off: off + M]) if "rms" not in name and "soft" not in name and "sum" not in name and "mean" not in name else None
                if part is None:  # row ops index a fixed tensor: slice it
                    sl = {"rms_norm": lambda: D.rms_norm(xs[off:off + M], rw, 1e-6),
                          "softmax": lambda: D.softmax(xs[off:off + M]),
                          "log_softmax": lambda: D.log_softmax(xs[off:off + M]),
                          "sum": lambda: D.sum(xs[off:off + M]),
                          "mean_f32_out": lambda: D.mean(xs[off:off + M], dtype=torch.float32)}[name]
                    part = sl()
                ok &= torch.equal(part, full[off: off + M])
        RESULTS["invariance"][name] = check("invariance " + name, ok)
    # negative control of the row comparison: one input bit of row 0 flipped
    # must show up in that row's output
    xs_bad = xs[:7].clone()
    xs_bad.view(torch.int16)[0, 11] ^= 1
    RESULTS["invariance"]["rows_negative_control (expect False)"] = bool(
        torch.equal(D.rms_norm(xs_bad, rw, 1e-6), D.rms_norm(xs, rw, 1e-6)[:7]))
    check("row invariance negative control", not RESULTS["invariance"]["rows_negative_control (expect False)"])
    if not rows_only:  # f32 GEMM (FFMA path)
        full = D.linear(xf, wf)
        RESULTS["invariance"]["linear_f32"] = check(
            "invariance f32", all(torch.equal(D.linear(xf[o:o + M], wf), full[o:o + M]) for M in buckets for o in (0, 5)))
    # RMSNorm backward dx
    xr = xs[:4096].float().requires_grad_()
    dyr = torch.randn_like(xr)
    dx_full = torch.autograd.grad(D.rms_norm(xr, rw.float(), 1e-6), xr, dyr)[0]
    ok = True
    for M in (1, 7, 513):
        xm = xs[:M].float().requires_grad_()
        ok &= torch.equal(torch.autograd.grad(D.rms_norm(xm, rw.float(), 1e-6), xm, dyr[:M])[0], dx_full[:M])
    RESULTS["invariance"]["rms_norm_backward_dx"] = check("invariance rms bwd", ok)


def tile_invariance(buckets):
    """Every tile-table entry gives the bits of the default choice, at every M
    bucket and two row offsets: the proof that the table is BITS-FREE. Shapes
    with partial M, N and K tiles; NK with bias, KN (packed copy), an
    unaligned A (packed copy), fp16, and a batched bmm. The entries with the
    staged epilogue use it here; "@direct" is the default entry storing
    directly."""
    g = torch.Generator(device=dev).manual_seed(3)
    Mmax = max(buckets) + 8
    x = torch.randn(Mmax, 1000, device=dev, dtype=torch.bfloat16, generator=g)
    w = torch.randn(1000, 1000, device=dev, dtype=torch.bfloat16, generator=g) / 32
    bias = torch.randn(1000, device=dev, dtype=torch.bfloat16, generator=g)
    wkn = w[:968].t().contiguous()  # (k, n) = (1000, 968)
    xh = torch.randn(Mmax, 1000, device=dev, dtype=torch.float16, generator=g)
    wh = (torch.randn(520, 1000, device=dev, dtype=torch.float16, generator=g) / 32)
    xb = torch.randn(3, 600, 256, device=dev, dtype=torch.bfloat16, generator=g)
    wb = torch.randn(3, 256, 200, device=dev, dtype=torch.bfloat16, generator=g)
    ops = {
        "tiles_linear_bias_bf16": (lambda t: D.linear(t, w, bias), x),
        "tiles_mm_kn": (lambda t: D.matmul(t, wkn), x),
        "tiles_unaligned_a": (lambda t: D.matmul(t[:, 1:], wkn[1:]), x),
        "tiles_linear_f16": (lambda t: D.linear(t, wh), xh),
    }
    for name, (fn, src) in ops.items():
        with forced_tile(None):
            full = fn(src)
        ok = True
        for tile in [None, "@direct"] + GEMM_TILES:  # "@direct": the default entry without the staged epilogue
            with forced_tile(tile):
                for M in buckets:
                    for off in (0, 5):
                        ok &= torch.equal(fn(src[off: off + M]), full[off: off + M])
        RESULTS["invariance"][name] = check("invariance " + name, ok)
    with forced_tile(None):
        full = D.matmul(xb, wb)
    ok = True
    for tile in [None, "@direct"] + GEMM_TILES:
        with forced_tile(tile):
            for M in (1, 7, 64, 513):
                ok &= torch.equal(D.matmul(xb[:, :M].contiguous(), wb), full[:, :M])
    RESULTS["invariance"]["tiles_bmm"] = check("invariance tiles_bmm", ok)


def tile_built(tile):
    """Whether this library has tile entry `tile` (a tiny forced GEMM)."""
    x = torch.zeros(1, 64, device=dev, dtype=torch.bfloat16)
    with forced_tile(tile):
        try:
            D.linear(x, x)
            return True
        except NotImplementedError as e:
            if "SAMEBITS_GEMM_RESEARCH_TILES" not in str(e):
                raise
            return False


def run_hashes(runs=50, rows_only=False):
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randn(2048, 4096, device=dev, dtype=torch.bfloat16, generator=g)
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16, generator=g) / 64
    rw = torch.randn(4096, device=dev, dtype=torch.bfloat16, generator=g)
    dy = torch.randn(2048, 4096, device=dev, dtype=torch.bfloat16, generator=g)
    out = {"gemm": set(), "rms_fwd_bwd": set(), "softmax_bwd": set()}
    if rows_only:
        del out["gemm"]
    for _ in range(runs):
        if not rows_only:
            out["gemm"].add(h(D.linear(x, w)))
        xr, wr = x.clone().requires_grad_(), rw.clone().requires_grad_()
        y = D.rms_norm(xr, wr, 1e-5)
        gx, gw = torch.autograd.grad(y, (xr, wr), dy)
        out["rms_fwd_bwd"].add(h(y, gx, gw))
        xs = x.clone().requires_grad_()
        s = D.softmax(xs)
        out["softmax_bwd"].add(h(s, torch.autograd.grad(s, xs, dy)[0]))
    for k, v in out.items():
        RESULTS["hash"][k] = len(v)
        check("hash " + k, len(v) == 1)


# ------------------------------------------------------------------ accuracy
def accuracy(rows_only=False):
    g = torch.Generator(device=dev).manual_seed(2)
    acc = RESULTS["accuracy"]
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for M, N, K in ((1, 4096, 4096), (300, 1000, 1000), (4096, 512, 4096)) if not rows_only else ():
            a = torch.randn(M, K, device=dev, dtype=dt, generator=g)
            w = torch.randn(N, K, device=dev, dtype=dt, generator=g) / K ** 0.5
            ref = a.double() @ w.double().T
            e_sb, e_t = rel(D.linear(a, w), ref), rel(F.linear(a, w), ref)
            e_kn = rel(D.matmul(a, w.t().contiguous()), ref)
            key = f"gemm {str(dt)[6:]} {M}x{N}x{K}"
            acc[key] = {"samebits": e_sb, "samebits_kn": e_kn, "torch": e_t}
            check(key, max(e_sb, e_kn) <= 2 * e_t + 1e-6)
        if dt != torch.float32 and not rows_only:
            a3 = torch.randn(4, 100, 300, device=dev, dtype=dt, generator=g)
            b3 = torch.randn(4, 300, 90, device=dev, dtype=dt, generator=g) / 300 ** 0.5
            ref = a3.double() @ b3.double()
            e_sb, e_t = rel(D.matmul(a3, b3), ref), rel(torch.bmm(a3, b3), ref)
            key = f"bmm {str(dt)[6:]} 4x100x90x300"
            acc[key] = {"samebits": e_sb, "torch": e_t}
            check(key, e_sb <= 2 * e_t + 1e-6)
        x = torch.randn(1024, 4096, device=dev, dtype=dt, generator=g) * 2
        w = torch.randn(4096, device=dev, dtype=dt, generator=g)
        ref = x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
        for name, ours, theirs, r in (
            ("rms_norm", D.rms_norm(x, w, 1e-6), F.rms_norm(x, (4096,), w, 1e-6), ref),
            ("softmax", D.softmax(x), x.softmax(-1), x.double().softmax(-1)),
            ("log_softmax", D.log_softmax(x), x.log_softmax(-1), x.double().log_softmax(-1)),
            ("sum", D.sum(x), x.sum(-1), x.double().sum(-1)),
        ):
            e_sb, e_t = rel(ours, r), rel(theirs, r)
            key = f"{name} {str(dt)[6:]}"
            acc[key] = {"samebits": e_sb, "torch": e_t}
            check(key, e_sb <= 2 * e_t + 1e-6)


# ------------------------------------------------------------------ mode
class Tiny(torch.nn.Module):
    def __init__(self, vocab=1000, d=256, heads=4, layers=2):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.heads = heads
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(torch.nn.ModuleDict({
                "n1": torch.nn.RMSNorm(d), "qkv": torch.nn.Linear(d, 3 * d), "o": torch.nn.Linear(d, d),
                "n2": torch.nn.RMSNorm(d), "up": torch.nn.Linear(d, 4 * d), "down": torch.nn.Linear(4 * d, d)}))
        self.nf = torch.nn.RMSNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, tok):
        B, L = tok.shape
        x = self.emb(tok)
        for b in self.blocks:
            q, k, v = b["qkv"](b["n1"](x)).view(B, L, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            q, k, v = (t.reshape(B * self.heads, L, -1) for t in (q, k, v))
            s = torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5
            s = s + torch.full((L, L), float("-inf"), device=s.device, dtype=s.dtype).triu(1)
            a = torch.bmm(torch.softmax(s, -1), v).view(B, self.heads, L, -1).transpose(1, 2).reshape(B, L, -1)
            x = x + b["o"](a)
            x = x + b["down"](F.gelu(b["up"](b["n2"](x))))
        return torch.log_softmax(self.head(self.nf(x)), -1)


def mode_checks():
    torch.manual_seed(0)
    # d = 1024 with a 4096-wide MLP and a short prompt: rows alone (M = 8)
    # and in the batch (M = 512) fall into different cuBLAS kernels (split-K
    # at small M), so the mode-off negative control has something to catch;
    # at d = 256 with 48-token prompts it did not (2026-11-21, H200).
    model = Tiny(d=1024, heads=8).to(dev, torch.bfloat16)
    prompt = torch.randint(0, 1000, (1, 8), device=dev)
    others = torch.randint(0, 1000, (63, 8), device=dev)
    batch = torch.cat([others[:20], prompt, others[20:]])
    res = RESULTS["mode"]
    with torch.no_grad():
        alone_off, batch_off = model(prompt)[0], model(batch)[20]
        with Mode.set_batch_invariant_mode():
            alone_on, batch_on = model(prompt)[0], model(batch)[20]
            torch._dynamo.reset()
            cm = torch.compile(model)
            comp = cm(batch)[20]
        torch._dynamo.reset()
    res["on_alone_equals_batch64"] = check("mode on invariant", torch.equal(alone_on, batch_on))
    res["off_alone_equals_batch64 (negative control, expect False)"] = bool(torch.equal(alone_off, batch_off))
    res["compiled_equals_eager_mode_on"] = check("compile == eager", torch.equal(comp, batch_on))
    # a direct negative control on cuBLAS: row 0 of x[:1] @ W^T vs of x @ W^T
    xx = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    ww = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    neg = {M: bool(torch.equal(F.linear(xx[:M], ww), F.linear(xx, ww)[:M])) for M in (1, 7, 64, 513)}
    res["cublas_rows_equal_full_batch (negative control, expect some False)"] = neg
    check("negative control fails", not all(neg.values()) or not torch.equal(alone_off, batch_off))
    res["on_vs_off_max_abs_diff"] = (alone_on.float() - alone_off.float()).abs().max().item()
    # training step under the mode: gradients deterministic
    with Mode.set_batch_invariant_mode():
        hs = set()
        for _ in range(3):
            model.zero_grad()
            model(batch).float().mean().backward()
            hs.add(h(*[p.grad for p in model.parameters() if p.grad is not None]))
    res["train_grad_hashes_3_runs"] = len(hs)
    check("mode grads deterministic", len(hs) == 1)


# ------------------------------------------------------------------ speed
def bench_gemm(Ms, shapes):
    for N, K in shapes:
        w = torch.randn(N, K, device=dev, dtype=torch.bfloat16) / K ** 0.5
        for M in Ms:
            x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            reps = 10 if 2 * M * N * K > 2e12 else 30
            tf = timeit_graph if M <= 1024 else timeit
            t_sb = tf(lambda: D.linear(x, w), reps=reps) if tf is timeit else tf(lambda: D.linear(x, w))
            t_cb = tf(lambda: F.linear(x, w), reps=reps) if tf is timeit else tf(lambda: F.linear(x, w))
            fl = 2 * M * N * K
            row = {"M": M, "N": N, "K": K, "samebits_ms": t_sb, "torch_ms": t_cb,
                   "samebits_tflops": fl / t_sb / 1e9, "torch_tflops": fl / t_cb / 1e9, "ratio": t_cb / t_sb}
            RESULTS["gemm"].append(row)
            print(f"gemm M={M:6d} N={N:6d} K={K:6d}  samebits {row['samebits_tflops']:7.1f} TF/s  "
                  f"torch {row['torch_tflops']:7.1f} TF/s  ratio {row['ratio']:.3f}", flush=True)
            del x
        del w
        torch.cuda.empty_cache()


def bench_gemm_tiles(Ms, shapes):
    """Each tile-table entry forced, beside the default choice and cuBLAS:
    the data the table in gemm_tile_configs.h is chosen from."""
    for N, K in shapes:
        w = torch.randn(N, K, device=dev, dtype=torch.bfloat16) / K ** 0.5
        for M in Ms:
            x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            big = 2 * M * N * K > 2e12
            tf = (lambda f: timeit_graph(f)) if M <= 1024 else (lambda f: timeit(f, reps=5 if big else 15, warm=2))
            row = {"M": M, "N": N, "K": K, "torch_ms": tf(lambda: F.linear(x, w))}
            for tile in [None] + GEMM_TILES:
                if tile in ("64x32", "64x64") and M > 2048:
                    continue
                with forced_tile(tile):
                    row[tile or "default"] = tf(lambda: D.linear(x, w))
            best = min((k for k in row if k not in ("M", "N", "K", "torch_ms", "default")), key=lambda k: row[k])
            row["best"] = best
            row["best_ratio"] = row["torch_ms"] / row[best]
            row["default_ratio"] = row["torch_ms"] / row["default"]
            RESULTS["gemm_tiles"].append(row)
            print(f"tiles M={M:6d} N={N:6d} K={K:6d} torch {row['torch_ms']*1e3:9.1f} us  default "
                  f"{row['default_ratio']:.3f}  best {best} {row['best_ratio']:.3f}  " +
                  " ".join(f"{t}:{row['torch_ms'] / row[t]:.2f}" for t in GEMM_TILES if t in row), flush=True)
            del x
        del w
        torch.cuda.empty_cache()


def bench_rowops(Ms, N=4096):
    """bf16 row ops beside torch and a device copy of x. frac_of_copy =
    (bytes / t) / (2 * bytes(x) / t_copy), with `bytes` what the op must move
    at least: 2 x (read x, write y) for the forward ops, as before; 4 x for
    add_rms_norm (x, residual in; y, h out); 3 x for the backward ops (two
    inputs, one gradient; rms_norm_bwd_dw also re-reads x and dy for dw, not
    counted); 1 x for sum. torch_ms is None where torch has no single op."""
    for M in Ms:
        x = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
        w = torch.randn(N, device=dev, dtype=torch.bfloat16)
        r = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
        dy = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
        y = torch.empty_like(x)
        xb = x.numel() * x.element_size()
        t_copy = timeit_graph(lambda: y.copy_(x))
        rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)[2]
        s_sm, s_ls = D.softmax(x), D.log_softmax(x)
        t_sm, t_ls = torch.softmax(x, -1), torch.log_softmax(x, -1)
        try:  # torch's own fused RMSNorm backward, where this torch has one
            t_rstd = torch.ops.aten._fused_rms_norm(x, [N], w, 1e-6)[1]
            fused_bwd = lambda: torch.ops.aten._fused_rms_norm_backward(dy, x, [N], t_rstd, w, [True, True])  # noqa: E731
            fused_bwd()
        except Exception as e:
            print(f"torch fused RMSNorm backward unavailable ({type(e).__name__}: {e})", flush=True)
            fused_bwd = None
        ops = (
            ("rms_norm", 2, lambda: D.rms_norm(x, w, 1e-6), lambda: F.rms_norm(x, (N,), w, 1e-6)),
            ("softmax", 2, lambda: D.softmax(x), lambda: torch.softmax(x, -1)),
            ("log_softmax", 2, lambda: D.log_softmax(x), lambda: torch.log_softmax(x, -1)),
            ("add_rms_norm", 4, lambda: D.add_rms_norm(x, r, w, 1e-6), lambda: F.rms_norm(x + r, (N,), w, 1e-6)),
            ("rms_norm_bwd_dx", 3, lambda: D._rms_norm_bwd_op(dy, x, w, rstd, False), None),
            ("rms_norm_bwd_dw", 3, lambda: D._rms_norm_bwd_op(dy, x, w, rstd, True),
             fused_bwd),
            ("softmax_bwd", 3, lambda: D._softmax_bwd_op(s_sm, dy, False, x.dtype),
             lambda: torch._softmax_backward_data(dy, t_sm, -1, x.dtype)),
            ("log_softmax_bwd", 3, lambda: D._softmax_bwd_op(s_ls, dy, True, x.dtype),
             lambda: torch._log_softmax_backward_data(dy, t_ls, -1, x.dtype)),
            ("sum", 1, lambda: D.sum(x), lambda: torch.sum(x, -1)),
        )
        for name, k, ours, theirs in ops:
            nbytes = k * xb
            t_sb = timeit_graph(ours)
            t_t = timeit_graph(theirs) if theirs is not None else None
            row = {"op": name, "M": M, "N": N, "samebits_ms": t_sb, "torch_ms": t_t, "copy_ms": t_copy,
                   "bytes": nbytes, "samebits_GBps": nbytes / t_sb / 1e6, "copy_GBps": 2 * xb / t_copy / 1e6,
                   "frac_of_copy": (nbytes / t_sb) / (2 * xb / t_copy),
                   "vs_torch": (t_t / t_sb) if t_t is not None else None}
            RESULTS["rowops"].append(row)
            vt = f"{row['vs_torch']:.2f}x" if t_t is not None else "-"
            print(f"{name:16s} M={M:6d} N={N}  samebits {t_sb * 1e3:7.1f} us {row['samebits_GBps']:7.0f} GB/s  copy "
                  f"{row['copy_GBps']:7.0f} GB/s  ({row['frac_of_copy']:.2f} of copy)  vs torch {vt}",
                  flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="dense_results.json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--gemm-only", action="store_true", help="GEMM checks and benchmarks only")
    ap.add_argument("--tiles", action="store_true", help="also time every tile-table entry")
    ap.add_argument("--tile-list", default=None,
                    help="comma-separated tile entries to force (default: all of GEMM_TILES); "
                         "bench/gemm_tile_smoke.py prints the entries that passed")
    ap.add_argument("--skip-checks", action="store_true", help="speed only: no invariance / hash / accuracy / mode")
    ap.add_argument("--ms", default=None, help="comma-separated M values of the GEMM sweeps (default: the full list)")
    ap.add_argument("--shapes", default=None,
                    help="comma-separated NxK weight shapes of the GEMM sweeps, e.g. 4096x4096,14336x4096 "
                         "(default: the four layer shapes)")
    ap.add_argument("--rows-only", action="store_true",
                    help="row ops only (RMSNorm, softmax, sum/mean): invariance, hashes, accuracy, speed")
    args = ap.parse_args()
    if args.tile_list is not None:
        unknown = [t for t in args.tile_list.split(",") if t and t not in GEMM_TILES]
        if unknown:
            ap.error(f"--tile-list: unknown entries {unknown}; known: {GEMM_TILES}")
        GEMM_TILES[:] = [t for t in args.tile_list.split(",") if t]
        RESULTS["tile_list"] = list(GEMM_TILES)
    # The measurement entries are built only with -DSAMEBITS_GEMM_RESEARCH_TILES=ON;
    # the default build refuses them (NotImplementedError naming the option).
    not_built = [t for t in GEMM_TILES if not tile_built(t)]
    if not_built:
        print(f"tile entries not in this build (SAMEBITS_GEMM_RESEARCH_TILES=OFF), skipped: {not_built}", flush=True)
        GEMM_TILES[:] = [t for t in GEMM_TILES if t not in not_built]
        RESULTS["tiles_not_built"] = not_built
    RESULTS["device"] = torch.cuda.get_device_name()
    RESULTS["torch"] = torch.__version__
    t0 = time.time()
    buckets = [1, 2, 7, 64, 513, 4096, 16384]
    stages = [("invariance", lambda: invariance(buckets)), ("tile_invariance", lambda: tile_invariance(buckets)),
              ("hash", lambda: run_hashes(50)), ("accuracy", accuracy), ("mode", mode_checks)]
    if args.rows_only:
        stages = [("invariance", lambda: invariance(buckets, rows_only=True)),
                  ("hash", lambda: run_hashes(50, rows_only=True)), ("accuracy", lambda: accuracy(rows_only=True))]
    if args.skip_checks:
        stages = []
    shapes = [(4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096)]
    if args.shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",") if s]
    if not args.skip_bench:
        Ms = ([1, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384]
              if not args.quick else [1, 4096])
        if args.ms:
            Ms = [int(v) for v in args.ms.split(",") if v]
        if not args.gemm_only:
            stages += [("rowops", lambda: bench_rowops([4096, 16384]))]
        if not args.rows_only:
            stages += [("gemm", lambda: bench_gemm(Ms, shapes))]
        if args.tiles:
            stages += [("gemm_tiles", lambda: bench_gemm_tiles(Ms, shapes))]
    for name, fn in stages:
        t = time.time()
        try:
            fn()
        except Exception as e:  # keep going: one broken stage must not hide the others
            import traceback
            traceback.print_exc()
            FAILS.append(f"{name}: {type(e).__name__}: {e}")
        print(f"[{name}] {time.time() - t:.1f} s", flush=True)
        with open(args.out, "w") as f:
            json.dump({**RESULTS, "fails": FAILS}, f, indent=1)
    print(json.dumps({k: RESULTS[k] for k in ("invariance", "hash", "accuracy", "mode") if RESULTS[k]}, indent=1))
    print("FAILS:", FAILS, f"total {time.time() - t0:.1f} s")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
