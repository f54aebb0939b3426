"""Host time of the samebits attention backward through autograd, and of its
pieces (d 128, 16 heads, bf16, 16 x 1024), each call queued behind a sleep
kernel so that the GPU never waits; a cProfile of the autograd calls. Also
where the call's first kernel starts relative to the host call (exposed host
time = idle GPU time minus queued GPU time).

    SAMEBITS_LIBRARY=lib.so PYTHONPATH=python python bench/host_probe_bwd.py > probe.log
"""
import cProfile
import ctypes
import io
import json
import pstats
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import samebits
from samebits import _lib, ops
from samebits import _validate as V

dev = "cuda"


def host_us(fn, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        torch.cuda._sleep(4_000_000)
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    return round(statistics.median(ts), 1)


def gpu_us(fn, queued, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        if queued:
            torch.cuda._sleep(4_000_000)
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    return round(statistics.median(ts), 1)


B, L, H, D = 16, 1024, 16, 128
q, k, v = (torch.randn(B, L, H, D, device=dev, dtype=torch.bfloat16).requires_grad_() for _ in range(3))
out = samebits.attention(q, k, v)
dout = torch.randn_like(out)
qc, kc, vc = (t.detach().transpose(1, 2).requires_grad_() for t in (q, k, v))
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    outc = F.scaled_dot_product_attention(qc, kc, vc)
doutc = dout.transpose(1, 2)


def sb_bwd():
    torch.autograd.backward(out, dout, retain_graph=True)
    q.grad = k.grad = v.grad = None


def cd_bwd():
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        torch.autograd.backward(outc, doutc, retain_graph=True)
    qc.grad = kc.grad = vc.grad = None


res = {}
for name, fn in (("sb_autograd", sb_bwd), ("cudnn_autograd", cd_bwd)):
    res[name] = {"host_us": host_us(fn), "gpu_idle_us": gpu_us(fn, False), "gpu_queued_us": gpu_us(fn, True)}
o2, lse2 = torch.ops.samebits.attn_fwd(q.detach(), k.detach(), v.detach(), None, None, L, L, D ** -0.5, 0.0, -1, -1)
qd, kd, vd = q.detach(), k.detach(), v.detach()
pieces = {
    "attn_bwd_run": lambda: ops._attn_bwd_run(dout, qd, kd, vd, o2, lse2, None, None, D ** -0.5, 0.0, -1, -1, False),
    "check_backward": lambda: V.check_backward(dout, o2, lse2, ops._lse_shape(qd, False)),
    "base_params": lambda: ops._base_params(qd, kd, vd, None, None, D ** -0.5, 0.0, -1, -1),
    "empty_x3": lambda: [torch.empty(qd.shape, dtype=qd.dtype, device=dev) for _ in range(3)],
    "device_guard": lambda: samebits._cuda.guard(qd.device).__enter__(),
    "torch_device_guard": lambda: torch.cuda.device(qd.device).__enter__(),
    "current_stream": lambda: samebits._cuda.stream(qd.device),
    "torch_current_stream": lambda: torch.cuda.current_stream(qd.device).cuda_stream,
    "plain_eager": lambda: samebits._eager.plain_eager(dout, qd, kd, vd, o2, lse2, None, None, grad_ok=True),
}
p = ops._base_params(qd, kd, vd, None, None, D ** -0.5, 0.0, -1, -1)
dq = torch.empty_like(qd); dk = torch.empty_like(qd); dv = torch.empty_like(qd)
p.out, p.lse = ops._view4(o2), ops._view_lse(lse2)
p.dout, p.dq, p.dk, p.dv = ops._view4(dout), ops._view4(dq), ops._view4(dk), ops._view4(dv)
size = ctypes.c_size_t(0)
lib = _lib.lib()
pieces["ws_size_c"] = lambda: lib.sb_attention_backward_workspace_size(ctypes.byref(p), 0, ctypes.byref(size))
lib.sb_attention_backward_workspace_size(ctypes.byref(p), 0, ctypes.byref(size))
ws = torch.empty(max(size.value, 1), dtype=torch.uint8, device=dev)
pieces["bwd_c"] = lambda: lib.sb_attention_backward_ws(ctypes.byref(p), 0, ctypes.c_void_p(ws.data_ptr()), size.value)
res["pieces_host_us"] = {k_: host_us(f) for k_, f in pieces.items()}
res["bwd_c_gpu"] = {"idle_us": gpu_us(pieces["bwd_c"], False), "queued_us": gpu_us(pieces["bwd_c"], True)}
print(json.dumps(res, indent=1), flush=True)
# the autograd engine runs the Python backward on its device thread, which a
# profile of this thread does not see: the op's body is profiled directly
for name, fn in (("attn_bwd_run", pieces["attn_bwd_run"]), ("sb_autograd", sb_bwd)):
    pr = cProfile.Profile()
    torch.cuda.synchronize()
    pr.enable()
    for _ in range(50):
        torch.cuda._sleep(4_000_000)
        fn()
    pr.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
    print("== cProfile", name, "(50 calls, tottime)\n", s.getvalue()[:6000], flush=True)
