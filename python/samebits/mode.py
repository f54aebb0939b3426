"""set_batch_invariant_mode(): route PyTorch's own ops to samebits.

While the mode is on, these aten ops on tensors of the chosen devices run
samebits' batch-invariant kernels (each output row depends only on its input
row, never on the batch):

    mm, addmm, bmm, linear                  -> samebits::gemm
    _softmax, _log_softmax                  -> samebits::softmax
    mean.dim, sum.dim_IntList               -> samebits::row_reduce
    rms_norm                                -> samebits::rms_norm
    scaled_dot_product_attention            -> samebits attention

Everything else is left alone. How: a torch.library.Library("aten", "IMPL")
registers a Python kernel for each op on the backend key (CUDA / CPU) and on
its autograd key (AutogradCUDA / AutogradCPU). The autograd-key kernel is
what torch.compile's tracing meets (it runs above the fake-tensor layer), so
compiled graphs hold samebits' custom ops, which Inductor keeps opaque; the
backend-key kernel covers torch.inference_mode(), where autograd keys are
skipped. Gradients come from samebits' own deterministic backward formulas.

Routed cases (the rest run PyTorch's own kernel, unchanged):
  * dtypes float32, float16, bfloat16; all operands of one dtype (rms_norm's
    weight may differ); sum/mean output dtype among those three;
  * mm/bmm/addmm/linear: 2-D/3-D operands as torch defines them; addmm's
    input broadcastable to (m, n); linear's input of any rank >= 1;
  * rms_norm: any normalized_shape (flattened to one row);
  * scaled_dot_product_attention: 4-D (B, H, L, D), no attn_mask, dropout 0,
    H == Hk or enable_gqa, is_causal only with Lq == Lk (PyTorch aligns the
    causal mask top-left, samebits bottom-right: they agree only there),
    float16/bfloat16/float32, head_dim a multiple of 8 up to 256.
A case that is not routed but needs a gradient (an input requires grad under
grad mode) raises NotImplementedError rather than silently running a
batch-variant kernel. One that needs no gradient runs PyTorch's kernel:
silently for integer arguments (exact, so batch-independent), with a
warning once per op for floating-point ones (float64 matmuls, SDPA with a
mask, ...), or raising NotImplementedError under strict=True. Arguments
PyTorch itself rejects (a dim out of range or named twice, operands whose
shapes or dtypes do not match) get PyTorch's own error, strict or not: no
samebits kernel ever sees them.

Toggling the mode does not invalidate code torch.compile already compiled:
call torch._dynamo.reset() after switching it if compiled functions must see
the change.
"""

from __future__ import annotations

import math
import threading
import warnings
from typing import Callable, Optional, Sequence

import torch

from . import dense as _D

__all__ = [
    "set_batch_invariant_mode",
    "enable_batch_invariant_mode",
    "disable_batch_invariant_mode",
    "is_batch_invariant_mode_enabled",
]

_F = (torch.float32, torch.float16, torch.bfloat16)
_lock = threading.Lock()
_library: Optional[torch.library.Library] = None
_devices: tuple = ()
_strict = False
_warned: set = set()


class _NotRouted(Exception):
    """Raised by a router for an argument combination samebits does not take."""


def _need(cond: bool) -> None:
    if not cond:
        raise _NotRouted


class _Invalid(Exception):
    """Raised by a router for arguments PyTorch itself rejects (a dim out of
    range or named twice, operands whose shapes or dtypes do not match):
    PyTorch's kernel runs and raises its own error, with no fallback warning,
    under strict=True too. Never a samebits kernel on operands that do not
    fit: it would read past them."""


def _valid(cond: bool) -> None:
    if not cond:
        raise _Invalid


# ---------------------------------------------------------------------------
# routers: aten signature in, samebits result out (or _NotRouted)
# ---------------------------------------------------------------------------
def _floats(*ts) -> None:
    _need(all(isinstance(t, torch.Tensor) and t.dtype in _F for t in ts))
    _valid(len({t.dtype for t in ts}) == 1)  # mixed dtypes: PyTorch's error


def _matching(a, b, batched: bool) -> None:
    """mm / bmm operands as PyTorch takes them (their one dtype is _floats'
    check): the inner dims equal, and the batch for bmm; anything else is
    PyTorch's error."""
    _valid(a.shape[-1] == b.shape[-2] and (not batched or a.shape[0] == b.shape[0]))


def _mm(a, b):
    _floats(a, b)
    _need(a.dim() == 2 and b.dim() == 2)
    _matching(a, b, False)
    return _D.gemm(a, b, None, 1.0, 0.0)


def _bmm(a, b):
    _floats(a, b)
    _need(a.dim() == 3 and b.dim() == 3)
    _matching(a, b, True)
    return _D.gemm(a, b, None, 1.0, 0.0)


def _addmm(bias, a, b, *, beta=1, alpha=1):
    _floats(a, b)
    _need(a.dim() == 2 and b.dim() == 2 and isinstance(bias, torch.Tensor) and bias.dim() <= 2)
    _need(not isinstance(beta, complex) and not isinstance(alpha, complex))
    _matching(a, b, False)
    _valid(_D._broadcasts_to(bias, (a.shape[0], b.shape[1])) and bias.dtype == a.dtype)
    if beta == 0:  # torch ignores the input entirely (NaN included)
        return _D.gemm(a, b, None, float(alpha), 0.0)
    return _D.gemm(a, b, bias, float(alpha), float(beta))


def _linear(x, weight, bias=None):
    _floats(x, weight)
    _need(weight.dim() == 2 and x.dim() >= 1)
    _valid(x.shape[-1] == weight.shape[1])
    _need(bias is None or bias.dim() <= 1)
    _valid(bias is None or (bias.dtype == x.dtype and (bias.dim() == 0 or bias.shape[0] in (1, weight.shape[0]))))
    lead = x.shape[:-1]
    out = _D.gemm(x.reshape(-1, x.shape[-1]), weight.t(), bias, 1.0, 1.0)
    return out.reshape(*lead, weight.shape[0])


def _softmax_router(log: bool):
    def route(x, dim, half_to_float):
        _floats(x)
        out_dtype = torch.float32 if half_to_float else x.dtype
        _valid(-max(x.dim(), 1) <= dim < max(x.dim(), 1))
        if x.dim() == 0:
            return _D.softmax_rows(x.reshape(1), log, out_dtype).reshape(())
        d = dim % x.dim()
        if d != x.dim() - 1:
            return _D.softmax_rows(x.movedim(d, -1), log, out_dtype).movedim(-1, d)
        return _D.softmax_rows(x, log, out_dtype)

    return route


def _reduce_router(mean: bool):
    def route(x, dim, keepdim=False, *, dtype=None):
        _floats(x)
        _need(dtype is None or dtype in _F)
        if dim is not None:
            n = max(x.dim(), 1)
            _valid(all(-n <= d < n for d in dim) and len({d % n for d in dim}) == len(dim))
        return _D.sum_dims(x, None if dim is None else list(dim), keepdim, dtype, mean=mean)

    return route


def _rms_norm(x, normalized_shape, weight=None, eps=None):
    _floats(x)
    nd = len(normalized_shape)
    _need(nd >= 1)
    _valid(tuple(x.shape[-nd:]) == tuple(normalized_shape) and x.dim() >= nd)
    _valid(weight is None or tuple(weight.shape) == tuple(normalized_shape))
    _need(weight is None or weight.dtype in _F)
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    if nd > 1:
        flat = x.reshape(*x.shape[:-nd], -1)
        w = None if weight is None else weight.reshape(-1)
        return _D.rms_norm_rows(flat, w, float(eps))[0].reshape(x.shape)
    return _D.rms_norm_rows(x, weight, float(eps))[0]


def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False):
    _floats(q, k, v)
    _need(attn_mask is None and dropout_p == 0.0 and q.dim() == 4 and k.dim() == 4 and v.dim() == 4)
    d = q.shape[-1]
    _need(d % 8 == 0 and 0 < d <= 256 and v.shape[-1] == d)
    _need(q.shape[1] == k.shape[1] or (enable_gqa and q.shape[1] % k.shape[1] == 0))
    _need(not is_causal or q.shape[2] == k.shape[2])
    from . import attention  # samebits' attention (the package root)

    out = attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=bool(is_causal),
                    softmax_scale=scale if scale is not None else 1.0 / math.sqrt(d))
    return out.transpose(1, 2)


# op name -> router
_ROUTES: dict[str, Callable] = {
    "mm": _mm,
    "bmm": _bmm,
    "addmm": _addmm,
    "linear": _linear,
    "_softmax": _softmax_router(False),
    "_log_softmax": _softmax_router(True),
    "mean.dim": _reduce_router(True),
    "sum.dim_IntList": _reduce_router(False),
    "rms_norm": _rms_norm,
    "scaled_dot_product_attention": _sdpa,
}


def _needs_grad(args, kwargs) -> bool:
    if not torch.is_grad_enabled():
        return False
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, torch.Tensor) and a.requires_grad:
            return True
    return False


def _make_kernel(name: str, router: Callable, original, autograd_key: bool):
    def kernel(keyset, *args, **kwargs):
        try:
            return router(*args, **kwargs)
        except _NotRouted:
            pass
        except _Invalid:
            if original is not None:
                return original.call_boxed(keyset, *args, **kwargs)  # raises PyTorch's own error
        if autograd_key and _needs_grad(args, kwargs):
            raise NotImplementedError(
                f"samebits batch-invariant mode: aten::{name} with these arguments has no samebits "
                "kernel and needs a gradient (see samebits.mode's docstring for the routed cases); "
                "disable the mode around this call or change the arguments"
            )
        if _has_float_tensor(args, kwargs):
            # A floating-point result from PyTorch's own kernel may depend on
            # the batch: the one place the mode could leak, so say so.
            if _strict:
                raise NotImplementedError(
                    f"samebits batch-invariant mode (strict): aten::{name} with these arguments has no "
                    "samebits kernel (see samebits.mode's docstring for the routed cases)"
                )
            if name not in _warned:
                _warned.add(name)
                warnings.warn(
                    f"samebits batch-invariant mode: aten::{name} with these arguments has no samebits "
                    "kernel and runs PyTorch's own, whose result may depend on the batch "
                    "(strict=True raises instead; warned once per op)",
                    stacklevel=2,
                )
        if original is None:
            raise NotImplementedError(
                f"samebits batch-invariant mode: aten::{name} with these arguments has no samebits kernel, "
                "and this torch cannot call its original kernel from Python (needs torch with "
                "SafeKernelFunction.call_boxed); disable the mode around this call"
            )
        return original.call_boxed(keyset, *args, **kwargs)

    return kernel


def _has_float_tensor(args, kwargs) -> bool:
    """Whether any tensor argument is floating point (integer results are
    exact, so PyTorch's own kernel cannot make them batch-dependent)."""
    vals = list(args) + list(kwargs.values())
    for v in vals:
        items = v if isinstance(v, (list, tuple)) else (v,)
        if any(isinstance(t, torch.Tensor) and t.is_floating_point() for t in items):
            return True
    return False


def _original_kernel(name: str, key):
    """PyTorch's kernel for aten::name at `key`, callable with a keyset, or
    None where this torch cannot hand it out."""
    try:
        k = torch._C._dispatch_get_computed_kernel_for_dispatch_key(f"aten::{name}", key)
    except (AttributeError, RuntimeError):
        return None
    return k if hasattr(k, "call_boxed") else None


def _register(devices: Sequence[str]) -> torch.library.Library:
    lib = torch.library.Library("aten", "IMPL")
    for dev in devices:
        backend = {"cuda": "CUDA", "cpu": "CPU"}[dev]
        for key_name, is_ag in ((backend, False), ("Autograd" + backend, True)):
            key = getattr(torch._C.DispatchKey, key_name)
            for name, router in _ROUTES.items():
                original = _original_kernel(name, key)
                lib.impl(name, _make_kernel(name, router, original, is_ag), key_name, with_keyset=True)
    return lib


def _clear_dispatch_caches() -> None:
    """Forget the Python-side dispatch decisions torch cached for the routed
    ops (OpOverload._dispatch_cache). An earlier torch.compile in the process
    caches, e.g., linear's CompositeImplicitAutograd decomposition at
    AutogradCPU; without this, a later compile would keep using it and
    bypass the kernels registered here."""
    for name in _ROUTES:
        base, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, base), overload or "default", None)
        cache = getattr(op, "_dispatch_cache", None)
        if cache is not None:
            cache.clear()


def _normalize_devices(devices) -> tuple:
    if isinstance(devices, str):
        devices = (devices,)
    out = tuple(dict.fromkeys(str(d) for d in devices))
    for d in out:
        if d not in ("cuda", "cpu"):
            raise ValueError(f"samebits batch-invariant mode: devices must be 'cuda' and/or 'cpu', got {d!r}")
    return out


def enable_batch_invariant_mode(devices=("cuda",), strict: bool = False) -> None:
    """Route the listed aten ops on `devices` ('cuda', 'cpu') to samebits.

    A routed op called with floating-point arguments samebits does not take
    runs PyTorch's own kernel with a warning (once per op); with strict=True
    it raises NotImplementedError instead."""
    global _library, _devices, _strict
    devices = _normalize_devices(devices)
    with _lock:
        _strict = bool(strict)
        if _library is not None:
            if _devices == devices:
                return
            _library._destroy()
            _library = None
        _library = _register(devices)
        _devices = devices
        _clear_dispatch_caches()


def disable_batch_invariant_mode() -> None:
    """Restore PyTorch's own kernels."""
    global _library, _devices
    with _lock:
        if _library is not None:
            _library._destroy()
        _library, _devices = None, ()
        _clear_dispatch_caches()


def is_batch_invariant_mode_enabled() -> bool:
    return _library is not None


class set_batch_invariant_mode:
    """Turn the mode on (or off with enabled=False) now; used as a context
    manager it restores the previous state on exit:

        with samebits.set_batch_invariant_mode():              # CUDA ops
            logits = model(tokens)
        with samebits.set_batch_invariant_mode(devices=("cpu",)):
            ...
    """

    def __init__(self, enabled: bool = True, devices=("cuda",), strict: bool = False):
        self._prev = _devices if _library is not None else None
        self._prev_strict = _strict
        if enabled:
            enable_batch_invariant_mode(devices, strict)
        else:
            disable_batch_invariant_mode()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._prev is None:
            disable_batch_invariant_mode()
        else:
            enable_batch_invariant_mode(self._prev, self._prev_strict)
        return False
