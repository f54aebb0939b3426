"""When an op's Python body may run without the dispatcher.

Dispatching a torch.library custom op costs tens of us of host time a call
(hundreds on a busy host), which a GPU waiting for the launch pays in full.
Plain eager calls run the bodies directly (or through one
torch.autograd.Function that carries the op's autograd formula); anything
traced, moded or wrapped keeps the dispatched op.
"""

from __future__ import annotations

import torch
from torch.utils import _python_dispatch


def plain_eager(*tensors, grad_ok: bool = False) -> bool:
    """True when running an op's Python body directly is what dispatching it
    would do: no torch.compile / export tracing, no active torch function or
    dispatch mode, only plain tensors (no fake, functional or other
    subclass), none of which autograd tracks (grad_ok: the caller brings the
    op's autograd formula itself, fast_op)."""
    if torch.compiler.is_compiling() or torch._C._is_torch_function_mode_enabled():
        return False
    if _python_dispatch._get_current_dispatch_mode() is not None:
        return False
    if torch._C._functorch.peek_interpreter_stack() is not None:  # inside vmap / grad / jvp
        return False
    for t in tensors:
        if t is not None and (type(t) is not torch.Tensor or (t.requires_grad and not grad_ok)):
            return False
    return True


def autograd_function(op, setup_context, backward) -> type:
    """A torch.autograd.Function running custom op `op`'s body forward and the
    formula registered for it (setup_context, backward) backward: the op's
    results and gradients without its dispatch."""

    def forward(ctx, *args):
        out = op._init_fn(*args)
        setup_context(ctx, args, out)
        return out

    def backward_(ctx, *grads):
        return backward(ctx, *grads)

    name = "samebits_" + op._name.split("::")[-1] + "_eager"  # grad_fn: samebits_gemm_eagerBackward
    return type(name, (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward_)})


def fast_op(op, setup_context, backward):
    """A callable with custom op `op`'s signature: plain eager calls run its
    body (or, when autograd tracks an input, autograd_function(...) of it);
    anything else dispatches the op."""
    fn = autograd_function(op, setup_context, backward)

    def call(*args):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if plain_eager(*tensors, grad_ok=True):
            if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
                return fn.apply(*args)
            return op._init_fn(*args)
        return op(*args)

    call.op, call.function = op, fn
    return call
