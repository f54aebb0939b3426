"""find_divergence: name the first module whose bits differ between two runs.

When a stack is not reproducible, the question is *where* the bits first
part. `find_divergence` runs a model twice (the same inputs twice, or two
batchings of the same work), hashes every module's forward outputs (forward
hooks) and the gradients flowing back into those outputs (tensor hooks
registered from the forward hooks), plus every parameter's gradient, and
returns the first module, in execution order, whose hash differs.

For two batchings, pass `view_a` / `view_b`: callables (module_name, tensor)
-> tensor that cut each output down to the part both runs share (for example
the rows of one sequence); return None to skip a tensor.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch


def tensor_hash(t: torch.Tensor) -> str:
    t = t.detach()
    h = hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode())
    h.update(t.cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def _tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _tensors(y)


@dataclass
class Trace:
    forward: list = field(default_factory=list)  # [(module name, call index, [hashes])] in call order
    backward: list = field(default_factory=list)  # [(module name, call index, hash)] in arrival order
    params: dict = field(default_factory=dict)  # parameter name -> gradient hash


def trace(model: torch.nn.Module, inputs, *, run: Optional[Callable] = None, loss_fn: Optional[Callable] = None,
          view: Optional[Callable] = None) -> Trace:
    """Run model on inputs once with hooks; backward through loss_fn(output)
    when given (parameter gradients are cleared first)."""
    view = view or (lambda name, t: t)
    run = run or (lambda m, x: m(**x) if isinstance(x, dict) else m(*x) if isinstance(x, tuple) else m(x))
    tr, handles, calls = Trace(), [], {}

    def make_hook(name):
        def hook(mod, args, out):
            i = calls[name] = calls.get(name, -1) + 1
            hashes = []
            for j, t in enumerate(_tensors(out)):
                v = view(name, t)
                hashes.append(None if v is None else tensor_hash(v))
                if t.requires_grad and v is not None:
                    t.register_hook(lambda g, name=name, i=i, j=j: tr.backward.append(
                        (name, i, j, None if view(name, g) is None else tensor_hash(view(name, g)))))
            tr.forward.append((name, i, hashes))
        return hook

    for name, mod in model.named_modules():
        handles.append(mod.register_forward_hook(make_hook(name or "<root>")))
    try:
        for p in model.parameters():
            p.grad = None
        out = run(model, inputs)
        if loss_fn is not None:
            loss_fn(out).backward()
            tr.params = {n: tensor_hash(p.grad) for n, p in model.named_parameters() if p.grad is not None}
    finally:
        for h in handles:
            h.remove()
    return tr


@dataclass
class Divergence:
    forward: Optional[str] = None  # first module (in call order) whose output differs
    # first module, in backward order, whose output gradient differs; the
    # gradient went wrong in a module that consumes that output (usually
    # the one that ran next in forward order), or in the loss
    backward: Optional[str] = None
    parameter: Optional[str] = None  # first parameter (in model order) whose gradient differs
    trace_a: Trace = None
    trace_b: Trace = None

    @property
    def identical(self) -> bool:
        return self.forward is None and self.backward is None and self.parameter is None

    def __str__(self) -> str:
        if self.identical:
            return "no divergence: every module output and gradient hash matches"
        return (f"first divergent forward output: {self.forward}; first divergent gradient: {self.backward}; "
                f"first divergent parameter gradient: {self.parameter}")


def find_divergence(model, inputs_a, inputs_b=None, *, run=None, loss_fn=None, view_a=None, view_b=None,
                    model_b=None) -> Divergence:
    """Trace model on inputs_a and on inputs_b (inputs_a again if None; model_b
    instead of model if given) and name the first difference.

    run(model, inputs) -> output defaults to model(*inputs) / model(**inputs);
    loss_fn(output) -> scalar enables the backward comparison.
    """
    a = trace(model, inputs_a, run=run, loss_fn=loss_fn, view=view_a)
    b = trace(model_b or model, inputs_a if inputs_b is None else inputs_b, run=run, loss_fn=loss_fn, view=view_b)
    d = Divergence(trace_a=a, trace_b=b)
    for (na, ia, ha), (nb, ib, hb) in zip(a.forward, b.forward):
        if (na, ia) != (nb, ib):
            d.forward = f"{na}#{ia} (the two runs called different modules: {nb}#{ib})"
            break
        if ha != hb:
            d.forward = na if ia == 0 else f"{na}#{ia}"
            break
    gb = {(n, i, j): h for n, i, j, h in b.backward}
    for n, i, j, h in a.backward:  # arrival order = backward execution order
        if gb.get((n, i, j)) != h:
            d.backward = n if i == 0 else f"{n}#{i}"
            break
    for name in a.params:
        if a.params[name] != b.params.get(name):
            d.parameter = name
            break
    return d
