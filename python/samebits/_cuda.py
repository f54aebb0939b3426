"""The current CUDA stream and device of a tensor, for the calls into the
library: the values torch.cuda.current_stream(device).cuda_stream and
torch.cuda.device(device) give, without building a Stream object or
switching to a device that is already the current one (host time that an
eager call pays before its first kernel starts)."""

from __future__ import annotations

import contextlib

import torch

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_current_device = getattr(torch._C, "_cuda_getDevice", None)


def stream(device: torch.device) -> int:
    """The raw pointer of the current stream on CUDA device `device`."""
    if _raw_stream is None:
        return torch.cuda.current_stream(device).cuda_stream
    return _raw_stream(device.index if device.index is not None else torch.cuda.current_device())


def guard(device: torch.device):
    """torch.cuda.device(device) for a CUDA device that is not the current
    one; a context that does nothing otherwise."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    if _current_device is not None and (device.index is None or device.index == _current_device()):
        return contextlib.nullcontext()
    return torch.cuda.device(device)
