"""The numerics documents' orders redone in Python, one rounded fp32
operation at a time, for the tests that pin each backend to its document
(docs/numerics.md for attention, docs/numerics_dense.md for the dense ops):
the CPU backend's transcendentals (exp2, log2, tanh) in numpy, its 8-lane dot
and lane-16 row sum, the sm90 row ops' 256-thread tree, and the procedures
built from them. Each function says which part of which document it redoes;
the tests (test_numerics.py, test_dense.py, test_cuda.py) compare the
library's outputs with them bit for bit."""

from __future__ import annotations

import math

import numpy as np
import torch

import samebits
from conftest import visible
from samebits.dense import RMSNORM_DW_CHUNK


def rmsnorm_dw_in_order(x, dy, rstd, w_dtype, chunk: int = RMSNORM_DW_CHUNK) -> torch.Tensor:
    """RMSNorm's weight gradient by the documented order (docs/numerics_dense.md,
    "RMSNorm bwd dw"), one rounded fp32 operation at a time on the CPU: dy in
    x's dtype (as the op converts it), xh = x * rstd, each term dy * xh; rows in
    chunks of `chunk` consecutive rows from row 0, a chunk's partial the left
    to right sum of its rows' terms from +0, dw the left fold of the partials
    from +0, chunk 0 first; then rounded to w_dtype. x, dy (M, N); rstd (M,)."""
    xf = x.detach().cpu().float()
    d = dy.detach().cpu().to(x.dtype).float()
    t = d * (xf * rstd.detach().cpu().float()[:, None])
    dw = torch.zeros(x.shape[1])
    for c0 in range(0, x.shape[0], chunk):
        part = torch.zeros(x.shape[1])
        for r in range(c0, min(x.shape[0], c0 + chunk)):
            part = part + t[r]
        dw = dw + part
    return dw.to(w_dtype)


def lane16_row_sums(t: torch.Tensor) -> torch.Tensor:
    """The CPU backend's row reduction (docs/numerics_dense.md, "lane-16 sum")
    of the fp32 terms t (rows, n), one rounded add at a time: lane j adds
    t[j], t[j + 16], ... left to right from +0, then l[j] += l[j + w] for w =
    8, 4, 2, 1 (j < w)."""
    rows, n = t.shape
    lanes = torch.zeros(rows, 16)
    full = n // 16 * 16
    for i in range(0, full, 16):
        lanes = lanes + t[:, i:i + 16]
    if n > full:
        lanes[:, :n - full] = lanes[:, :n - full] + t[:, full:]
    for w in (8, 4, 2, 1):
        lanes[:, :w] = lanes[:, :w] + lanes[:, w:2 * w]
    return lanes[:, 0].clone()


def tree256_row_sums(t: torch.Tensor, vec: int) -> torch.Tensor:
    """The sm90 backend's row reduction (docs/numerics_dense.md, "Row
    reductions") of the fp32 terms t (rows, n): element j belongs to thread
    (j // vec) % 256, which adds its elements in increasing j from +0 (a
    vector that starts inside the row adds +0 for its elements past the end);
    each warp's 32 lanes combine by an xor butterfly (offsets 16, 8, 4, 2, 1);
    the 8 warp totals are added in order from +0, warp 0 first."""
    rows, n = t.shape
    per = 256 * vec
    slots = max(1, -(-n // per))
    tp = torch.zeros(rows, slots * per)
    tp[:, :n] = t
    tp = tp.view(rows, slots, 256, vec)
    s = torch.zeros(rows, 256)
    for c in range(slots):
        live = (c * 256 + torch.arange(256)) * vec < n
        for v in range(vec):
            s = torch.where(live, s + tp[:, c, :, v], s)
    s = s.view(rows, 8, 32)
    for o in (16, 8, 4, 2, 1):
        s = s + s[:, :, torch.arange(32) ^ o]
    total = torch.zeros(rows)
    for w in range(8):
        total = total + s[:, w, 0]
    return total


def row_ops_in_order(row_sums, x, w, dy, eps: float, residual=None) -> dict:
    """sum, mean, RMSNorm's rstd and y, and its dx (docs/numerics_dense.md's
    formulas, one rounded fp32 operation at a time on the CPU) with the row
    reduction row_sums; y and dx rounded to x's dtype. x, dy (M, N) in x's
    dtype, w (N,) (or None). With a residual (M, N): RMSNorm of h = round(x +
    residual) (returned as "h"); sum and mean stay those of x."""
    xf = x.detach().cpu().float()
    h = None
    if residual is not None:
        h = (xf + residual.detach().cpu().float()).to(x.dtype)
    n = torch.tensor(float(x.shape[1]))
    wf = w.detach().cpu().float() if w is not None else None
    s = row_sums(xf)
    if h is not None:
        xf = h.float()
    ss = row_sums(xf * xf)
    # the square root in fp64, rounded once to fp32 (correctly rounded, as the
    # kernels' sqrt is; torch's fp32 sqrt on the CPU can be 1 ulp off)
    rstd = torch.tensor(1.0) / torch.sqrt((ss / n + torch.tensor(eps, dtype=torch.float32)).double()).float()
    y = xf * rstd[:, None]
    if wf is not None:
        y = y * wf
    d = dy.detach().cpu().to(x.dtype).float()
    g = d * wf if wf is not None else d
    xh = xf * rstd[:, None]
    m = row_sums(g * xh) / n
    dx = rstd[:, None] * (g - xh * m[:, None])
    return {"sum": s, "mean": s / n, "rstd": rstd, "y": y.to(x.dtype), "dx": dx.to(x.dtype), "h": h}


def cpu_exp2(x: torch.Tensor) -> torch.Tensor:
    """The CPU backend's exp2 (src/cpu/numerics.h, docs/numerics.md) in
    numpy fp32, operation for operation: x = n + f by the 1.5 * 2^23 trick,
    2^f by a degree-7 Horner polynomial (no fused multiply-add), then two
    exact power-of-two scalings."""
    f32 = np.float32
    with np.errstate(invalid="ignore", over="ignore"):
        v = x.detach().cpu().float().numpy().astype(f32)
        v = np.where(v < f32(-151.0), f32(-151.0), v)
        v = np.where(v > f32(128.0), f32(128.0), v).astype(f32)
        magic = f32(12582912.0)  # 0x1.8p23
        big = (v + magic).astype(f32)
        f = (v - (big - magic).astype(f32)).astype(f32)
        n = big.view(np.int32).astype(np.int64) - np.array([magic], f32).view(np.int32)[0]
        n1 = n >> 1
        n2 = n - n1
        s1 = ((n1 + 127) << 23).astype(np.uint32).view(f32)
        s2 = ((n2 + 127) << 23).astype(np.uint32).view(f32)
        p = np.full_like(f, f32(1.525273380405984e-05))
        for c in (1.5403530393381606e-04, 1.3333558146428443e-03, 9.618129107628477e-03,
                  5.550410866482158e-02, 2.402265069591007e-01, 6.931471805599453e-01, 1.0):
            p = ((p * f).astype(f32) + f32(c)).astype(f32)
        out = ((p * s1).astype(f32) * s2).astype(f32)
    return torch.from_numpy(out)


def cpu_log2(x: float) -> float:
    """The CPU backend's log2 (once per row, for the LSE and log_softmax):
    exponent plus an atanh series in fp64, rounded once to fp32."""
    if not x > 0.0:
        return float("-inf") if x == 0.0 else float("nan")
    if math.isinf(x):
        return x
    m, e = math.frexp(x)
    if m < 0.70710678118654752:
        m *= 2.0
        e -= 1
    z = (m - 1.0) / (m + 1.0)
    z2, term, total = z * z, z, 0.0
    for k in range(14):
        total += term / float(2 * k + 1)
        term *= z2
    return float(np.float32(float(e) + 2.0 * total * 1.4426950408889634074))


def cpu_softmax_in_order(x: torch.Tensor, log: bool, out_dtype) -> torch.Tensor:
    """The CPU backend's softmax / log_softmax (docs/numerics_dense.md): mx the
    row max (0 for an all -inf row), e = exp2((x - mx) * log2e), s the lane-16
    sum of e; y = e * (1 / s), or (x - mx) - log2(s) * ln2."""
    xf = x.detach().cpu().float()
    mx = xf.max(dim=1).values
    mx = torch.where(mx == float("-inf"), torch.zeros_like(mx), mx)
    d = xf - mx[:, None]
    e = cpu_exp2(d * torch.tensor(float(np.float32(1.4426950408889634))))
    s = lane16_row_sums(e)
    if log:
        ls = torch.tensor([float(np.float32(cpu_log2(float(v))) * np.float32(0.6931471805599453)) for v in s])
        return (d - ls[:, None]).to(out_dtype)
    return (e * (torch.tensor(1.0) / s)[:, None]).to(out_dtype)


def cpu_softmax_backward_in_order(y: torch.Tensor, dy: torch.Tensor, log: bool, dx_dtype) -> torch.Tensor:
    """dx of the CPU softmax (docs/numerics_dense.md): log: s = lane-16 sum of
    dy, dx = dy - exp(y) * s; else s = lane-16 sum of dy * y, dx = y * (dy - s)."""
    yf, df = y.detach().cpu().float(), dy.detach().cpu().float()
    if log:
        s = lane16_row_sums(df)
        return (df - cpu_exp2(yf * torch.tensor(float(np.float32(1.4426950408889634)))) * s[:, None]).to(dx_dtype)
    s = lane16_row_sums(df * yf)
    return (yf * (df - s[:, None])).to(dx_dtype)


def cpu_tanh(y: torch.Tensor) -> torch.Tensor:
    """The CPU backend's tanh (src/cpu/numerics.h) in numpy fp64, rounded
    once to fp32: expm1(-2|y|) by its Taylor series to degree 18 after exact
    halvings to >= -1/2, undone by e -> e * (e + 2); tanh = -e / (e + 2)."""
    yv = y.detach().cpu().float().numpy().astype(np.float64)
    a = np.abs(yv)
    x = -2.0 * np.minimum(a, 10.0)
    halv = np.zeros(x.shape, dtype=np.int64)
    while (x < -0.5).any():
        m = x < -0.5
        x = np.where(m, x * 0.5, x)
        halv += m
    term, e = x.copy(), x.copy()
    for n in range(2, 19):
        term = term * (x / float(n))
        e = e + term
    for k in range(int(halv.max()) if halv.size else 0):
        e = np.where(halv > k, e * (e + 2.0), e)
    t = (-e / (e + 2.0)).astype(np.float32)
    t = np.where(a >= 10.0, np.float32(1.0), t)
    t = np.where(yv < 0, -t, t).astype(np.float32)
    return torch.from_numpy(t)


def cpu_dot(a: torch.Tensor, b: torch.Tensor, plain: bool = False) -> torch.Tensor:
    """docs/numerics.md's CPU dot of every row of a (R, D) with every row of b
    (C, D): lane l = c % 8 adds a[c] * b[c] for c = l, l + 8, ... from +0,
    then ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)); plain (negative
    controls): every product into lane 0, left to right."""
    lanes = torch.zeros(8, a.shape[0], b.shape[0])
    for ch in range(a.shape[1]):
        ln = 0 if plain else ch % 8
        lanes[ln] = lanes[ln] + a[:, ch:ch + 1] * b[:, ch][None, :]
    return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]))


def _logits(s, scale: float, softcap: float):
    """docs/numerics.md "Logits": (t, h) of the scores s, h the softcap's tanh
    (None without one)."""
    f32 = np.float32
    log2e = torch.tensor(float(f32(1.4426950408889634)))
    sc = torch.tensor(float(f32(scale)))
    if softcap > 0:
        cap = torch.tensor(float(f32(softcap)))
        h = cpu_tanh(s * (sc / cap))
        return h * (cap * log2e), h
    return s * (sc * log2e), None


def cpu_attention_backward_in_order(q, k, v, out, lse, dout, *, scale: float, softcap: float = 0.0,
                                    window=(-1, -1), heads_descending: bool = False):
    """The CPU backend's attention backward by docs/numerics.md "Backward",
    one rounded fp32 operation at a time: P = exp2(t - lse * log2e), D_i =
    dot(dout_i, out_i), dP = dot(dout_i, v_j), dS = P * (dP - D), G (times
    1 - h * h under a softcap); dq_i over keys ascending, dk_j / dv_j over the
    group's query heads ascending and rows ascending, one f32 accumulator
    each; scale (dq, dk), then one rounding. Invisible keys enter with P = G
    = 0 (adding a zero product to an accumulator that started at +0 changes
    no bit). Returns dq, dk, dv in q's dtype. heads_descending (negative
    controls): the group's heads in descending order."""
    B, Lq, H, D = q.shape
    Lk, Hk = k.shape[1], k.shape[2]
    grp = H // Hk
    log2e = torch.tensor(float(np.float32(1.4426950408889634)))
    sc = torch.tensor(float(np.float32(scale)))
    vis = visible(Lq, Lk, *window)
    dq, dk, dv = torch.zeros(B, Lq, H, D), torch.zeros(B, Lk, Hk, D), torch.zeros(B, Lk, Hk, D)
    for b in range(B):
        for g in range(Hk):
            kf, vf = k[b, :, g].float(), v[b, :, g].float()
            acc_k, acc_v = torch.zeros(Lk, D), torch.zeros(Lk, D)
            heads = range(g * grp, (g + 1) * grp)
            for h in reversed(heads) if heads_descending else heads:
                qf, of, df = q[b, :, h].float(), out[b, :, h].float(), dout[b, :, h].float()
                t, hh = _logits(cpu_dot(qf, kf), scale, softcap)
                t = torch.where(vis, t, torch.tensor(float("-inf")))
                P = cpu_exp2(t - (lse[b, h].float() * log2e)[:, None])
                Dv = torch.diagonal(cpu_dot(df, of))
                dS = P * (cpu_dot(df, vf) - Dv[:, None])
                G = dS * (torch.tensor(1.0) - hh * hh) if hh is not None else dS
                G = torch.where(vis, G, torch.zeros_like(G))
                rP, rG = P.to(q.dtype).float(), G.to(q.dtype).float()
                acc_q = torch.zeros(Lq, D)
                for j in range(Lk):
                    acc_q = acc_q + rG[:, j:j + 1] * kf[j][None, :]
                dq[b, :, h] = sc * acc_q
                for i in range(Lq):
                    acc_v = acc_v + rP[i][:, None] * df[i][None, :]
                    acc_k = acc_k + rG[i][:, None] * qf[i][None, :]
            dk[b, :, g] = sc * acc_k
            dv[b, :, g] = acc_v
    return dq.to(q.dtype), dk.to(q.dtype), dv.to(q.dtype)


def cpu_attention_in_order(q, k, v, *, scale: float, softcap: float = 0.0, window=(-1, -1), split=None,
                           plain_dot: bool = False):
    """The CPU backend's attention forward by docs/numerics.md, one rounded
    fp32 operation at a time: the 8-lane dot, base-2 logits, the online
    softmax over KV blocks of each split (blocks and splits from
    samebits.kv_block_size / split_size), the left fold of the splits, the
    output and natural-log LSE. Invisible keys enter as t = -inf, p = 0
    (the document's exact identities make that equal to skipping them).
    q (B, Lq, H, D), k / v (B, Lk, Hk, D); returns out (B, Lq, H, D) in q's
    dtype and lse (B, H, Lq) fp32. For negative controls: split (keys) in
    place of the table's, plain_dot sums the dot left to right."""
    f32 = np.float32
    B, Lq, H, D = q.shape
    Lk, Hk = k.shape[1], k.shape[2]
    bn, sp = samebits.kv_block_size(D, q.dtype), split or samebits.split_size(D, q.dtype)
    ln2 = torch.tensor(float(f32(0.6931471805599453)))
    inf = float("inf")
    vis = visible(Lq, Lk, *window)  # (Lq, Lk)
    out = torch.zeros(B, Lq, H, D)
    lse = torch.zeros(B, H, Lq)
    for b in range(B):
        for h in range(H):
            hk = h // (H // Hk)
            qf, kf, vf = q[b, :, h].float(), k[b, :, hk].float(), v[b, :, hk].float()
            s = cpu_dot(qf, kf, plain=plain_dot)
            t = _logits(s, scale, softcap)[0]
            t = torch.where(vis, t, torch.tensor(-inf))
            M, L, ACC = torch.full((Lq,), -inf), torch.zeros(Lq), torch.zeros(Lq, D)
            for s0 in range(0, Lk, sp):
                m, l, acc = torch.full((Lq,), -inf), torch.zeros(Lq), torch.zeros(Lq, D)
                for j0 in range(s0, min(Lk, s0 + sp), bn):
                    j1 = min(Lk, j0 + bn)
                    tb = t[:, j0:j1]
                    m_new = torch.maximum(m, tb.max(dim=1).values)
                    ms = torch.where(m_new == -inf, torch.zeros_like(m_new), m_new)
                    alpha = cpu_exp2(m - ms)
                    p = cpu_exp2(tb - ms[:, None])
                    rowsum = torch.zeros(Lq)
                    pv = torch.zeros(Lq, D)
                    rp = p.to(q.dtype).float()
                    for j in range(j1 - j0):
                        rowsum = rowsum + p[:, j]
                        pv = pv + rp[:, j:j + 1] * vf[j0 + j][None, :]
                    l = l * alpha + rowsum
                    acc = acc * alpha[:, None] + pv
                    m = m_new
                M_new = torch.maximum(M, m)
                Ms = torch.where(M_new == -inf, torch.zeros_like(M_new), M_new)
                a, bb = cpu_exp2(M - Ms), cpu_exp2(m - Ms)
                L = L * a + l * bb
                ACC = ACC * a[:, None] + acc * bb[:, None]
                M = M_new
            empty = L == 0
            inv = torch.tensor(1.0) / torch.where(empty, torch.ones_like(L), L)
            o = torch.where(empty[:, None], torch.zeros_like(ACC), ACC * inv[:, None])
            lg = torch.tensor([cpu_log2(float(x)) for x in L])
            ls = torch.where(empty, torch.tensor(inf), (M + lg) * ln2)
            out[b, :, h] = o
            lse[b, h] = ls
    return out.to(q.dtype), lse
