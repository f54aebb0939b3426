"""ctypes binding of the samebits C ABI (include/samebits/samebits.h).

The library links neither libtorch nor libpython, so one build serves every
torch and Python version. It is loaded from $SAMEBITS_LIBRARY when set, else
from the file installed next to this package. The structs below mirror the C
structs field for field; edit both together and bump SB_ABI_VERSION.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

ABI_VERSION = 2

# sb_dtype
SB_F32, SB_F16, SB_BF16 = 0, 1, 2
# sb_device
SB_CPU, SB_CUDA = 0, 1
# sb_status
SB_OK, SB_INVALID_ARGUMENT, SB_UNSUPPORTED, SB_CUDA_ERROR, SB_INTERNAL = 0, 1, 2, 3, 4

_c_enum = ctypes.c_int  # C enums are int-sized on every ABI samebits targets


class SbView(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("batch_stride", ctypes.c_int64),
        ("row_stride", ctypes.c_int64),
        ("head_stride", ctypes.c_int64),
    ]


class SbAttentionParams(ctypes.Structure):
    _fields_ = [
        ("dtype", _c_enum),
        ("device", _c_enum),
        ("stream", ctypes.c_void_p),
        ("batch", ctypes.c_int32),
        ("num_heads", ctypes.c_int32),
        ("num_heads_k", ctypes.c_int32),
        ("head_dim", ctypes.c_int32),
        ("seqlen_q", ctypes.c_int32),
        ("seqlen_k", ctypes.c_int32),
        ("cu_seqlens_q", ctypes.c_void_p),
        ("cu_seqlens_k", ctypes.c_void_p),
        ("seqused_k", ctypes.c_void_p),
        ("block_table", ctypes.c_void_p),
        ("block_table_batch_stride", ctypes.c_int64),
        ("page_size", ctypes.c_int32),
        ("softmax_scale", ctypes.c_float),
        ("softcap", ctypes.c_float),
        ("window_left", ctypes.c_int32),
        ("window_right", ctypes.c_int32),
        ("q", SbView),
        ("k", SbView),
        ("v", SbView),
        ("out", SbView),
        ("lse", SbView),
        ("dout", SbView),
        ("dq", SbView),
        ("dk", SbView),
        ("dv", SbView),
    ]


class SbKvcacheAppendParams(ctypes.Structure):
    _fields_ = [
        ("dtype", _c_enum),
        ("device", _c_enum),
        ("stream", ctypes.c_void_p),
        ("batch", ctypes.c_int32),
        ("seqlen_new", ctypes.c_int32),
        ("num_heads_k", ctypes.c_int32),
        ("head_dim", ctypes.c_int32),
        ("cache_seqlens", ctypes.c_void_p),
        ("block_table", ctypes.c_void_p),
        ("block_table_batch_stride", ctypes.c_int64),
        ("page_size", ctypes.c_int32),
        ("k_new", SbView),
        ("v_new", SbView),
        ("k_cache", SbView),
        ("v_cache", SbView),
    ]


def _library_path() -> str:
    env = os.environ.get("SAMEBITS_LIBRARY")
    if env:
        return env
    name = {"darwin": "libsamebits.dylib", "win32": "samebits.dll"}.get(sys.platform, "libsamebits.so")
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)


_lock = threading.Lock()
_handle: ctypes.CDLL | None = None


def _declare(lib: ctypes.CDLL) -> None:
    i32, st = ctypes.c_int32, ctypes.c_int
    for name, argtypes in (
        ("sb_attention_forward", [ctypes.POINTER(SbAttentionParams)]),
        ("sb_attention_backward", [ctypes.POINTER(SbAttentionParams)]),
        ("sb_kvcache_append", [ctypes.POINTER(SbKvcacheAppendParams)]),
    ):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, st
    # Added to ABI version 1 (additive): absent from older builds of the
    # library, which then keep the library-owned decode workspace.
    if hasattr(lib, "sb_attention_forward_ws"):
        lib.sb_attention_workspace_size.argtypes = [ctypes.POINTER(SbAttentionParams),
                                                    ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
        lib.sb_attention_workspace_size.restype = st
        lib.sb_attention_forward_ws.argtypes = [ctypes.POINTER(SbAttentionParams), ctypes.c_void_p, ctypes.c_size_t]
        lib.sb_attention_forward_ws.restype = st
    # Added in ABI version 2 (additive): without them the backward allocates
    # its own workspace inside the library.
    if hasattr(lib, "sb_attention_backward_ws"):
        lib.sb_attention_backward_workspace_size.argtypes = [ctypes.POINTER(SbAttentionParams), ctypes.c_int64,
                                                             ctypes.POINTER(ctypes.c_size_t)]
        lib.sb_attention_backward_workspace_size.restype = st
        lib.sb_attention_backward_ws.argtypes = [ctypes.POINTER(SbAttentionParams), ctypes.c_int64, ctypes.c_void_p,
                                                 ctypes.c_size_t]
        lib.sb_attention_backward_ws.restype = st
    for name in ("sb_kv_block_size", "sb_split_size"):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = [i32, i32, _c_enum], i32
    lib.sb_cuda_built.argtypes, lib.sb_cuda_built.restype = [], i32
    lib.sb_cuda_supported.argtypes, lib.sb_cuda_supported.restype = [i32], i32
    lib.sb_cpu_set_num_threads.argtypes, lib.sb_cpu_set_num_threads.restype = [i32], None
    for name in ("sb_last_error", "sb_version"):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = [], ctypes.c_char_p
    lib.sb_abi_version.argtypes, lib.sb_abi_version.restype = [], i32


def lib() -> ctypes.CDLL:
    """The loaded library (loaded on first use, so `import samebits` works
    without it)."""
    global _handle
    if _handle is not None:
        return _handle
    with _lock:
        if _handle is None:
            path = _library_path()
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                raise ImportError(
                    f"samebits: cannot load the native library {path!r} ({e}). Install the "
                    "package with `pip install .`, or point SAMEBITS_LIBRARY at a built "
                    "libsamebits.so."
                ) from e
            _declare(handle)
            abi = handle.sb_abi_version()
            if abi != ABI_VERSION:
                raise ImportError(
                    f"samebits: {path!r} has C ABI version {abi}, this Python package needs "
                    f"{ABI_VERSION}; rebuild the library or reinstall the package."
                )
            _handle = handle
    return _handle


def has_workspace_abi() -> bool:
    """Whether the loaded library takes a caller-provided workspace."""
    return hasattr(lib(), "sb_attention_forward_ws")


def has_backward_workspace_abi() -> bool:
    """Whether the loaded library's backward takes a caller-provided
    workspace (sb_attention_backward_ws, ABI version 2)."""
    return hasattr(lib(), "sb_attention_backward_ws")


def last_error() -> str:
    return lib().sb_last_error().decode("utf-8", "replace")


def check(status: int, what: str) -> None:
    """Turn an sb_status into the matching Python exception."""
    if status == SB_OK:
        return
    msg = last_error() or "(no message)"
    if status == SB_INVALID_ARGUMENT:
        raise ValueError(f"samebits {what}: {msg}")
    if status == SB_UNSUPPORTED:
        raise NotImplementedError(f"samebits {what}: no kernel for this configuration: {msg}")
    kind = {SB_CUDA_ERROR: "CUDA error", SB_INTERNAL: "internal error"}.get(status, f"status {status}")
    raise RuntimeError(f"samebits {what}: {kind}: {msg}")


def version() -> str:
    return lib().sb_version().decode()
