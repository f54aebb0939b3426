"""Batch-invariant dense ops: GEMM, RMSNorm, softmax / log_softmax, sum / mean.

Each op is a torch.library custom op (``samebits::...``) with a fake
implementation and a deterministic autograd formula, running on CPU tensors
(the reference backend) and CUDA tensors (sm90 kernels). Every output row
depends only on its input row and the weights: never on the row count, the
other rows, the run or the machine's thread / SM count. The reduction order
of each op is written down in docs/numerics_dense.md.

Public functions (what user code calls):
    linear(x, weight, bias=None)            x @ weight.T + bias
    matmul(a, b)                            2-D or batched 3-D a @ b
    rms_norm(x, weight=None, eps=1e-6)
    add_rms_norm(x, residual, weight, eps)  -> (rms_norm(x + residual), x + residual)
    softmax(x, dim=-1), log_softmax(x, dim=-1)
    sum(x, dim=-1), mean(x, dim=-1)
"""

from __future__ import annotations

import ctypes
import math
from typing import Optional

import torch

from . import _cuda, _lib
from ._eager import fast_op

# ----------------------------------------------------------------------------
# ctypes mirror of include/samebits/dense.h (edit both together)
# ----------------------------------------------------------------------------
_e = ctypes.c_int
_i64, _i32, _f32, _p = ctypes.c_int64, ctypes.c_int32, ctypes.c_float, ctypes.c_void_p

SB_B_NK, SB_B_KN = 0, 1
SB_REDUCE_SUM, SB_REDUCE_MEAN = 0, 1
RMSNORM_DW_CHUNK = 32  # SB_RMSNORM_DW_CHUNK


class SbGemmParams(ctypes.Structure):
    _fields_ = [
        ("dtype", _e), ("out_dtype", _e), ("bias_dtype", _e), ("device", _e), ("stream", _p),
        ("batch", _i32), ("m", _i64), ("n", _i64), ("k", _i64),
        ("a", _p), ("a_batch_stride", _i64), ("a_row_stride", _i64),
        ("b", _p), ("b_layout", _e), ("b_batch_stride", _i64), ("b_row_stride", _i64),
        ("bias", _p), ("bias_batch_stride", _i64), ("bias_row_stride", _i64),
        ("alpha", _f32), ("beta", _f32),
        ("out", _p), ("out_batch_stride", _i64), ("out_row_stride", _i64),
    ]


class SbRmsnormParams(ctypes.Structure):
    _fields_ = [
        ("x_dtype", _e), ("w_dtype", _e), ("y_dtype", _e), ("device", _e), ("stream", _p),
        ("rows", _i64), ("cols", _i64),
        ("x", _p), ("x_row_stride", _i64),
        ("residual", _p), ("residual_row_stride", _i64),
        ("residual_out", _p), ("residual_out_row_stride", _i64),
        ("weight", _p), ("eps", _f32),
        ("y", _p), ("y_row_stride", _i64), ("rstd", _p),
    ]


class SbRmsnormBackwardParams(ctypes.Structure):
    _fields_ = [
        ("x_dtype", _e), ("w_dtype", _e), ("y_dtype", _e), ("device", _e), ("stream", _p),
        ("rows", _i64), ("cols", _i64),
        ("x", _p), ("x_row_stride", _i64), ("weight", _p), ("rstd", _p),
        ("dy", _p), ("dy_row_stride", _i64), ("dx", _p), ("dx_row_stride", _i64),
        ("dw", _p), ("workspace", _p),
    ]


class SbSoftmaxParams(ctypes.Structure):
    _fields_ = [
        ("x_dtype", _e), ("y_dtype", _e), ("device", _e), ("stream", _p), ("log", _i32),
        ("rows", _i64), ("cols", _i64), ("x", _p), ("x_row_stride", _i64),
        ("y", _p), ("y_row_stride", _i64),
    ]


class SbSoftmaxBackwardParams(ctypes.Structure):
    _fields_ = [
        ("y_dtype", _e), ("dx_dtype", _e), ("device", _e), ("stream", _p), ("log", _i32),
        ("rows", _i64), ("cols", _i64), ("y", _p), ("y_row_stride", _i64),
        ("dy", _p), ("dy_row_stride", _i64), ("dx", _p), ("dx_row_stride", _i64),
    ]


class SbReduceParams(ctypes.Structure):
    _fields_ = [
        ("x_dtype", _e), ("y_dtype", _e), ("device", _e), ("stream", _p), ("op", _e),
        ("rows", _i64), ("cols", _i64), ("x", _p), ("x_row_stride", _i64),
        ("y", _p), ("y_stride", _i64),
    ]


_declared = False


def _clib() -> ctypes.CDLL:
    global _declared
    lib = _lib.lib()
    if not _declared:
        for name, st in (
            ("sb_gemm", SbGemmParams),
            ("sb_rmsnorm_forward", SbRmsnormParams),
            ("sb_rmsnorm_backward", SbRmsnormBackwardParams),
            ("sb_softmax_forward", SbSoftmaxParams),
            ("sb_softmax_backward", SbSoftmaxBackwardParams),
            ("sb_reduce", SbReduceParams),
        ):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = [ctypes.POINTER(st)], ctypes.c_int
        lib.sb_rmsnorm_dw_workspace_elems.argtypes = [_i64, _i64]
        lib.sb_rmsnorm_dw_workspace_elems.restype = _i64
        _declared = True
    return lib


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_SB_DTYPE = {torch.float32: _lib.SB_F32, torch.float16: _lib.SB_F16, torch.bfloat16: _lib.SB_BF16}


def _dt(t: torch.dtype) -> int:
    try:
        return _SB_DTYPE[t]
    except KeyError:
        raise TypeError(f"samebits dense ops take float32, float16 or bfloat16, got {t}") from None


def _device(t: torch.Tensor):
    """(sb_device, stream pointer) for a tensor."""
    if t.device.type == "cpu":
        return _lib.SB_CPU, None
    if t.device.type == "cuda":
        return _lib.SB_CUDA, _cuda.stream(t.device)
    raise ValueError(f"samebits dense ops run on CPU and CUDA tensors, got {t.device}")


def _rows2d(x: torch.Tensor) -> torch.Tensor:
    """x as (rows, cols) with unit column stride (a view when possible)."""
    if x.dim() == 0:
        x = x.reshape(1)
    if x.stride(-1) != 1 and x.size(-1) > 1:
        x = x.contiguous()
    x2 = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
    return x2 if x2.stride(-1) == 1 or x2.size(-1) <= 1 else x2.contiguous()


def _ptr(t: Optional[torch.Tensor]):
    return None if t is None else t.data_ptr()


def _row_stride(t: torch.Tensor) -> int:
    return t.stride(0) if t.size(0) > 1 else t.size(1)


def _broadcasts_to(t: torch.Tensor, shape) -> bool:
    """Whether t broadcasts to exactly `shape` (no dim of t larger or extra)."""
    try:
        return torch.broadcast_shapes(t.shape, shape) == torch.Size(shape)
    except RuntimeError:
        return False


def _same_device(op: str, x: torch.Tensor, **others) -> None:
    """Every tensor of `others` (None: absent) on x's device, else an error
    naming it: a kernel must never be handed another device's memory."""
    for name, t in others.items():
        if t is not None and t.device != x.device:
            raise ValueError(f"samebits {op}: {name} is on {t.device} but the input is on {x.device}")


def _cuda_guard(t: torch.Tensor):
    return _cuda.guard(t.device)


# ----------------------------------------------------------------------------
# GEMM
# ----------------------------------------------------------------------------
def _b_operand(b: torch.Tensor):
    """(tensor, layout, row_stride) for B with logical shape (..., k, n)."""
    if b.stride(-1) == 1 or b.size(-1) == 1:
        return b, SB_B_KN, b.stride(-2) if b.size(-2) > 1 else b.size(-1)
    if b.stride(-2) == 1 or b.size(-2) == 1:  # (n, k) storage: the nn.Linear weight layout
        return b, SB_B_NK, b.stride(-1)
    b = b.contiguous()
    return b, SB_B_KN, b.size(-1)


def _gemm_impl(a, b, bias, alpha, beta):
    _check_gemm(a, b)  # here and in the fake: every caller (the wrappers, the mode, torch.ops) passes one
    _same_device("gemm", a, bias=bias)
    if bias is not None:
        _dt(bias.dtype)
    batched = a.dim() == 3
    a3 = a if batched else a.unsqueeze(0)
    b3 = b if batched else b.unsqueeze(0)
    if a3.stride(-1) != 1 and a3.size(-1) > 1:
        a3 = a3.contiguous()
    bs, m, k = a3.shape
    n = b3.size(-1)
    b3, layout, b_rs = _b_operand(b3)
    out = torch.empty((bs, m, n), dtype=a.dtype, device=a.device)
    out_shape = (bs, m, n) if batched else (m, n)
    if bias is not None and not _broadcasts_to(bias, out_shape):
        raise ValueError(f"samebits gemm: bias of shape {tuple(bias.shape)} does not broadcast to the "
                         f"output's shape {out_shape}")
    p = SbGemmParams()
    p.dtype = p.bias_dtype = _dt(a.dtype)
    p.out_dtype = _dt(out.dtype)
    p.device, p.stream = _device(a)
    p.batch, p.m, p.n, p.k = bs, m, n, k
    p.a, p.a_batch_stride = a3.data_ptr(), a3.stride(0) if bs > 1 else 0
    p.a_row_stride = a3.stride(1) if m > 1 else k
    p.b, p.b_layout, p.b_row_stride = b3.data_ptr(), layout, b_rs
    p.b_batch_stride = b3.stride(0) if bs > 1 else 0
    if bias is not None:
        bias3 = bias.expand(bs, m, n)  # broadcast dims get stride 0, read as such
        if bias3.stride(-1) != 1 and n > 1:
            bias3 = bias3.contiguous()
        p.bias, p.bias_dtype = bias3.data_ptr(), _dt(bias3.dtype)
        p.bias_batch_stride = bias3.stride(0) if bs > 1 else 0
        p.bias_row_stride = bias3.stride(1) if m > 1 else 0
    p.alpha, p.beta = float(alpha), float(beta)
    p.out, p.out_batch_stride, p.out_row_stride = out.data_ptr(), m * n, n
    with _cuda_guard(a):
        _lib.check(_clib().sb_gemm(ctypes.byref(p)), "gemm")
    return out if batched else out[0]


@torch.library.custom_op("samebits::gemm", mutates_args=())
def _gemm_op(
    a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], alpha: float, beta: float
) -> torch.Tensor:
    return _gemm_impl(a, b, bias, alpha, beta)


@_gemm_op.register_fake
def _(a, b, bias, alpha, beta):
    _check_gemm(a, b)
    return a.new_empty((*a.shape[:-1], b.shape[-1]))


def _gemm_setup(ctx, inputs, output):
    a, b, bias, alpha, beta = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha, ctx.beta = alpha, beta
    ctx.bias_shape = None if bias is None else bias.shape
    ctx.bias_dtype = None if bias is None else bias.dtype


def _gemm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    ga = gb = gbias = None
    if ctx.alpha != 1.0:
        grad_s = grad * ctx.alpha
    else:
        grad_s = grad
    if ctx.needs_input_grad[0]:
        ga = gemm(grad_s, b.mT, None, 1.0, 0.0)
    if ctx.needs_input_grad[1]:
        gb = gemm(a.mT, grad_s, None, 1.0, 0.0)
    if ctx.bias_shape is not None and ctx.needs_input_grad[2]:
        g = grad * ctx.beta if ctx.beta != 1.0 else grad
        gbias = _sum_to_shape(g, ctx.bias_shape).to(ctx.bias_dtype)
    return ga, gb, gbias, None, None


def _sum_to_shape(g: torch.Tensor, shape) -> torch.Tensor:
    """Deterministic reduction of a broadcast gradient back to `shape`: every
    reduced axis is moved last and summed with samebits' fixed-order sum."""
    lead = g.dim() - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    if not dims:
        return g.reshape(shape)
    out = sum_dims(g, dims, keepdim=True, dtype=torch.float32)
    return out.reshape(shape)


_gemm_op.register_autograd(_gemm_backward, setup_context=_gemm_setup)
# samebits::gemm without the dispatcher for plain eager calls (samebits._eager).
gemm = fast_op(_gemm_op, _gemm_setup, _gemm_backward)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for 2-D (m, k) @ (k, n) or batched 3-D (B, m, k) @ (B, k, n)."""
    return gemm(a, b, None, 1.0, 0.0)


def addmm(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor, beta: float = 1.0, alpha: float = 1.0):
    """beta * bias + alpha * (a @ b), bias broadcastable to (m, n)."""
    return gemm(a, b, bias, alpha, beta)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """x @ weight.T + bias, x of shape (..., in_features)."""
    if weight.dim() != 2:
        raise ValueError(f"samebits linear: weight must be 2-D (out_features, in_features), got shape "
                         f"{tuple(weight.shape)}")
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    out = gemm(x2, weight.t(), bias, 1.0, 1.0)
    return out.reshape(*lead, weight.shape[0])


def _check_gemm(a, b):
    if a.dim() != b.dim() or a.dim() not in (2, 3):
        raise ValueError(f"samebits gemm: expected 2-D @ 2-D or 3-D @ 3-D, got {a.dim()}-D @ {b.dim()}-D")
    if a.shape[-1] != b.shape[-2] or (a.dim() == 3 and a.shape[0] != b.shape[0]):
        raise ValueError(f"samebits gemm: shapes {tuple(a.shape)} and {tuple(b.shape)} do not match")
    if a.dtype != b.dtype:
        raise TypeError(f"samebits gemm: a is {a.dtype} but b is {b.dtype}")
    _dt(a.dtype)
    if a.device != b.device:
        raise ValueError(f"samebits gemm: b is on {b.device} but a is on {a.device}")


# ----------------------------------------------------------------------------
# RMSNorm (optionally fused with a residual add)
# ----------------------------------------------------------------------------
def _rmsnorm_fwd_impl(x, residual, weight, eps):
    shape = x.shape
    x2 = _rows2d(x)
    rows, cols = x2.shape
    op = "add_rms_norm" if residual is not None else "rms_norm"
    _same_device(op, x, residual=residual, weight=weight)
    if residual is not None:
        if residual.dtype != x.dtype:
            raise TypeError("samebits add_rms_norm: residual must have x's dtype")
        if not _broadcasts_to(residual, shape):
            raise ValueError(f"samebits add_rms_norm: residual of shape {tuple(residual.shape)} does not "
                             f"broadcast to x's shape {tuple(shape)}")
    if weight is not None and tuple(weight.shape) != (cols,):
        raise ValueError(f"samebits {op}: weight must have shape ({cols},), got {tuple(weight.shape)}")
    y_dtype = x.dtype  # like torch.rms_norm: the output has the input's dtype
    y = torch.empty((rows, cols), dtype=y_dtype, device=x.device)
    rstd = torch.empty((rows,), dtype=torch.float32, device=x.device)
    p = SbRmsnormParams()
    p.x_dtype, p.y_dtype = _dt(x.dtype), _dt(y_dtype)
    p.w_dtype = _dt(weight.dtype if weight is not None else x.dtype)
    p.device, p.stream = _device(x)
    p.rows, p.cols = rows, cols
    p.x, p.x_row_stride = x2.data_ptr(), _row_stride(x2)
    h = None
    if residual is not None:
        r2 = _rows2d(residual.expand(shape))
        h = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        p.residual, p.residual_row_stride = r2.data_ptr(), _row_stride(r2)
        p.residual_out, p.residual_out_row_stride = h.data_ptr(), cols
    if weight is not None:
        weight = weight.contiguous()
        p.weight = weight.data_ptr()
    p.eps = float(eps)
    p.y, p.y_row_stride, p.rstd = y.data_ptr(), cols, rstd.data_ptr()
    with _cuda_guard(x):
        _lib.check(_clib().sb_rmsnorm_forward(ctypes.byref(p)), "rmsnorm_forward")
    return y.view(shape), (h.view(shape) if h is not None else None), rstd.view(shape[:-1])


@torch.library.custom_op("samebits::rms_norm", mutates_args=())
def _rms_norm_op(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    y, _, rstd = _rmsnorm_fwd_impl(x, None, weight, eps)
    return y, rstd


@_rms_norm_op.register_fake
def _(x, weight, eps):
    return x.new_empty(x.shape), x.new_empty(x.shape[:-1], dtype=torch.float32)


@torch.library.custom_op("samebits::add_rms_norm", mutates_args=())
def _add_rms_norm_op(
    x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    y, h, rstd = _rmsnorm_fwd_impl(x, residual, weight, eps)
    return y, h, rstd


@_add_rms_norm_op.register_fake
def _(x, residual, weight, eps):
    return (
        x.new_empty(x.shape),
        x.new_empty(x.shape),
        x.new_empty(x.shape[:-1], dtype=torch.float32),
    )


@torch.library.custom_op("samebits::rms_norm_backward", mutates_args=())
def _rms_norm_bwd_op(
    dy: torch.Tensor, h: torch.Tensor, weight: Optional[torch.Tensor], rstd: torch.Tensor, need_dw: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    shape = h.shape
    _same_device("rms_norm backward", h, dy=dy, weight=weight, rstd=rstd)
    x2, dy2 = _rows2d(h), _rows2d(dy.to(h.dtype))
    rows, cols = x2.shape
    rstd = rstd.contiguous().to(torch.float32)
    dx = torch.empty((rows, cols), dtype=h.dtype, device=h.device)
    p = SbRmsnormBackwardParams()
    p.x_dtype, p.y_dtype = _dt(h.dtype), _dt(dy2.dtype)
    p.w_dtype = _dt(weight.dtype if weight is not None else h.dtype)
    p.device, p.stream = _device(h)
    p.rows, p.cols = rows, cols
    p.x, p.x_row_stride = x2.data_ptr(), _row_stride(x2)
    p.rstd = rstd.data_ptr()
    p.dy, p.dy_row_stride = dy2.data_ptr(), _row_stride(dy2)
    p.dx, p.dx_row_stride = dx.data_ptr(), cols
    dw = torch.empty((0,), dtype=h.dtype, device=h.device)
    if weight is not None:
        weight = weight.contiguous()
        p.weight = weight.data_ptr()
        if need_dw:
            dw = torch.empty((cols,), dtype=weight.dtype, device=h.device)
            ws = torch.empty((_clib().sb_rmsnorm_dw_workspace_elems(rows, cols),), dtype=torch.float32, device=h.device)
            p.dw, p.workspace = dw.data_ptr(), ws.data_ptr()
    with _cuda_guard(h):
        _lib.check(_clib().sb_rmsnorm_backward(ctypes.byref(p)), "rmsnorm_backward")
    return dx.view(shape), dw


@_rms_norm_bwd_op.register_fake
def _(dy, h, weight, rstd, need_dw):
    n = h.shape[-1] if (weight is not None and need_dw) else 0
    return h.new_empty(h.shape), h.new_empty((n,), dtype=weight.dtype if weight is not None else h.dtype)


def _rms_setup(ctx, inputs, output):
    x, weight, eps = inputs
    y, rstd = output
    ctx.save_for_backward(x, weight, rstd)


def _rms_backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    need_dw = weight is not None and ctx.needs_input_grad[1]
    dx, dw = _rms_norm_bwd_op(dy, x, weight, rstd, need_dw)
    return dx, (dw if need_dw else None), None


_rms_norm_op.register_autograd(_rms_backward, setup_context=_rms_setup)
rms_norm_rows = fast_op(_rms_norm_op, _rms_setup, _rms_backward)


def _add_rms_setup(ctx, inputs, output):
    x, residual, weight, eps = inputs
    y, h, rstd = output
    ctx.save_for_backward(h, weight, rstd)
    ctx.res_shape = residual.shape


def _add_rms_backward(ctx, dy, dh, _drstd):
    h, weight, rstd = ctx.saved_tensors
    need_dw = weight is not None and ctx.needs_input_grad[2]
    dx, dw = _rms_norm_bwd_op(dy, h, weight, rstd, need_dw)
    if dh is not None:
        dx = dx + dh  # elementwise: deterministic
    dres = dx if tuple(ctx.res_shape) == tuple(dx.shape) else _sum_to_shape(dx, ctx.res_shape).to(dx.dtype)
    return dx, dres, (dw if need_dw else None), None


_add_rms_norm_op.register_autograd(_add_rms_backward, setup_context=_add_rms_setup)
add_rms_norm_rows = fast_op(_add_rms_norm_op, _add_rms_setup, _add_rms_backward)


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6) -> torch.Tensor:
    """x * rsqrt(mean(x^2, -1) + eps) * weight over the last dim."""
    _dt(x.dtype)
    if weight is not None:
        _dt(weight.dtype)
        if weight.shape != x.shape[-1:]:
            raise ValueError(f"samebits rms_norm: weight must have shape ({x.shape[-1]},), got {tuple(weight.shape)}")
    return rms_norm_rows(x, weight, float(eps))[0]


def add_rms_norm(x, residual, weight=None, eps: float = 1e-6):
    """(rms_norm(x + residual), x + residual), the sum rounded to x.dtype."""
    _dt(x.dtype)
    y, h, _ = add_rms_norm_rows(x, residual, weight, float(eps))
    return y, h


# ----------------------------------------------------------------------------
# softmax / log_softmax over the last dim
# ----------------------------------------------------------------------------
@torch.library.custom_op("samebits::softmax", mutates_args=())
def _softmax_op(x: torch.Tensor, log: bool, out_dtype: torch.dtype) -> torch.Tensor:
    shape = x.shape
    x2 = _rows2d(x)
    rows, cols = x2.shape
    y = torch.empty((rows, cols), dtype=out_dtype, device=x.device)
    p = SbSoftmaxParams()
    p.x_dtype, p.y_dtype = _dt(x.dtype), _dt(out_dtype)
    p.device, p.stream = _device(x)
    p.log, p.rows, p.cols = int(log), rows, cols
    p.x, p.x_row_stride = x2.data_ptr(), _row_stride(x2)
    p.y, p.y_row_stride = y.data_ptr(), cols
    with _cuda_guard(x):
        _lib.check(_clib().sb_softmax_forward(ctypes.byref(p)), "softmax_forward")
    return y.view(shape)


@_softmax_op.register_fake
def _(x, log, out_dtype):
    return x.new_empty(x.shape, dtype=out_dtype)


@torch.library.custom_op("samebits::softmax_backward", mutates_args=())
def _softmax_bwd_op(y: torch.Tensor, dy: torch.Tensor, log: bool, dx_dtype: torch.dtype) -> torch.Tensor:
    shape = y.shape
    _same_device("softmax backward", y, dy=dy)
    y2, dy2 = _rows2d(y), _rows2d(dy.to(y.dtype))
    rows, cols = y2.shape
    dx = torch.empty((rows, cols), dtype=dx_dtype, device=y.device)
    p = SbSoftmaxBackwardParams()
    p.y_dtype, p.dx_dtype = _dt(y.dtype), _dt(dx_dtype)
    p.device, p.stream = _device(y)
    p.log, p.rows, p.cols = int(log), rows, cols
    p.y, p.y_row_stride = y2.data_ptr(), _row_stride(y2)
    p.dy, p.dy_row_stride = dy2.data_ptr(), _row_stride(dy2)
    p.dx, p.dx_row_stride = dx.data_ptr(), cols
    with _cuda_guard(y):
        _lib.check(_clib().sb_softmax_backward(ctypes.byref(p)), "softmax_backward")
    return dx.view(shape)


@_softmax_bwd_op.register_fake
def _(y, dy, log, dx_dtype):
    return y.new_empty(y.shape, dtype=dx_dtype)


def _softmax_setup(ctx, inputs, output):
    x, log, out_dtype = inputs
    ctx.save_for_backward(output)
    ctx.log, ctx.x_dtype = log, x.dtype


def _softmax_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return _softmax_bwd_op(y, dy, ctx.log, ctx.x_dtype), None, None


_softmax_op.register_autograd(_softmax_backward, setup_context=_softmax_setup)
softmax_rows = fast_op(_softmax_op, _softmax_setup, _softmax_backward)
_softmax_bwd_op.register_autograd(
    lambda ctx, g: (_ for _ in ()).throw(NotImplementedError("samebits: double backward of softmax")),
    setup_context=lambda ctx, inputs, output: None,
)


def _wrap_dim(dim, nd: int, op: str) -> int:
    """dim of an nd-D tensor as a non-negative index (a 0-D tensor takes -1
    and 0, as in torch); anything else is an error naming the op."""
    n = max(nd, 1)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"samebits {op}: dim must be an int, got {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(f"samebits {op}: dim {dim} is out of range for a {nd}-D tensor (expected {-n} to {n - 1})")
    return dim % n


def _softmax_common(x, dim, dtype, log):
    if dtype is not None:
        x = x.to(dtype)
    _dt(x.dtype)
    dim = _wrap_dim(dim, x.dim(), "log_softmax" if log else "softmax")
    if x.dim() == 0:
        return softmax_rows(x.reshape(1), log, x.dtype).reshape(())
    if dim != x.dim() - 1:
        return softmax_rows(x.movedim(dim, -1), log, x.dtype).movedim(-1, dim)
    return softmax_rows(x, log, x.dtype)


def softmax(x: torch.Tensor, dim: int = -1, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _softmax_common(x, dim, dtype, False)


def log_softmax(x: torch.Tensor, dim: int = -1, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _softmax_common(x, dim, dtype, True)


# ----------------------------------------------------------------------------
# sum / mean over the last dim
# ----------------------------------------------------------------------------
@torch.library.custom_op("samebits::row_reduce", mutates_args=())
def _reduce_op(x: torch.Tensor, mean: bool, out_dtype: torch.dtype) -> torch.Tensor:
    shape = x.shape
    x2 = _rows2d(x)
    rows, cols = x2.shape
    y = torch.empty((rows,), dtype=out_dtype, device=x.device)
    p = SbReduceParams()
    p.x_dtype, p.y_dtype = _dt(x.dtype), _dt(out_dtype)
    p.device, p.stream = _device(x)
    p.op = SB_REDUCE_MEAN if mean else SB_REDUCE_SUM
    p.rows, p.cols = rows, cols
    p.x, p.x_row_stride = x2.data_ptr(), _row_stride(x2) if cols else 1
    p.y, p.y_stride = y.data_ptr(), 1
    with _cuda_guard(x):
        _lib.check(_clib().sb_reduce(ctypes.byref(p)), "reduce")
    return y.view(shape[:-1])


@_reduce_op.register_fake
def _(x, mean, out_dtype):
    return x.new_empty(x.shape[:-1], dtype=out_dtype)


def _reduce_setup(ctx, inputs, output):
    x, mean, out_dtype = inputs
    ctx.mean, ctx.n, ctx.x_dtype, ctx.x_shape = mean, x.shape[-1], x.dtype, x.shape


def _reduce_backward(ctx, g):
    g = g.unsqueeze(-1)
    if ctx.mean:
        g = g / ctx.n
    return g.expand(ctx.x_shape).to(ctx.x_dtype), None, None


_reduce_op.register_autograd(_reduce_backward, setup_context=_reduce_setup)
reduce_rows = fast_op(_reduce_op, _reduce_setup, _reduce_backward)


def sum_dims(x: torch.Tensor, dims, keepdim: bool = False, dtype: Optional[torch.dtype] = None, mean: bool = False):
    """sum (or mean) over `dims` (an int, a list, or None for all): the
    reduced dims are moved last, flattened into one row, and reduced in
    samebits' fixed order, so each output element depends only on its own
    slice."""
    out_dtype = dtype if dtype is not None else x.dtype
    _dt(x.dtype)
    _dt(out_dtype)
    nd = x.dim()
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        dims = list(range(nd))
    elif isinstance(dims, int):
        dims = [dims]
    op = "mean" if mean else "sum"
    wrapped = [_wrap_dim(d, nd, op) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise ValueError(f"samebits {op}: dims {list(dims)} name a dim more than once")
    dims = sorted(wrapped) if nd else []
    keep = [d for d in range(nd) if d not in dims]
    xp = x.permute(*keep, *dims) if nd else x
    kept_shape = [x.shape[d] for d in keep]
    red = 1
    for d in dims:
        red *= x.shape[d]
    rows = xp.reshape(*kept_shape, red) if nd else xp.reshape(1)
    y = reduce_rows(rows, mean, out_dtype)
    if keepdim:
        y = y.reshape([1 if d in dims else x.shape[d] for d in range(nd)])
    return y


def sum(x: torch.Tensor, dim=-1, keepdim: bool = False, dtype: Optional[torch.dtype] = None):  # noqa: A001
    return sum_dims(x, dim, keepdim, dtype, mean=False)


def mean(x: torch.Tensor, dim=-1, keepdim: bool = False, dtype: Optional[torch.dtype] = None):
    return sum_dims(x, dim, keepdim, dtype, mean=True)
