"""Host overhead of the samebits backward/forward calls vs cuDNN (d128, 16 heads, bf16)."""
import ctypes, json, sys, time, statistics
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import samebits
from samebits import ops, _lib

dev = "cuda"
def gpu_time(fn, busy, reps=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        if busy:
            torch.cuda._sleep(20_000_000)  # ~10 ms: the CPU enqueues everything before s runs
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    return statistics.median(ts)

def cpu_time(fn, reps=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        torch.cuda._sleep(20_000_000)
        t0 = time.perf_counter(); fn(); ts.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    return statistics.median(ts)

for (B, L) in ((16, 1024), (16, 1000), (4, 4096)):
    H, D = 16, 128
    q, k, v = (torch.randn(B, L, H, D, device=dev, dtype=torch.bfloat16).requires_grad_() for _ in range(3))
    out = samebits.attention(q, k, v)
    dout = torch.randn_like(out)
    qc, kc, vc = (t.detach().transpose(1, 2).requires_grad_() for t in (q, k, v))
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        outc = F.scaled_dot_product_attention(qc, kc, vc)
    doutc = dout.transpose(1, 2)
    lse = None
    res = {"B": B, "L": L}
    sb_bwd = lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
    cd_bwd = lambda: torch.autograd.grad(outc, (qc, kc, vc), doutc, retain_graph=True)
    def sb_fwd():
        with torch.no_grad(): samebits.attention(q, k, v)
    def cd_fwd():
        with torch.no_grad(), sdpa_kernel([SDPBackend.CUDNN_ATTENTION]): F.scaled_dot_product_attention(qc, kc, vc)
    for name, fn in (("sb_bwd", sb_bwd), ("cudnn_bwd", cd_bwd), ("sb_fwd", sb_fwd), ("cudnn_fwd", cd_fwd)):
        res[name + "_gpu_idle_us"] = round(gpu_time(fn, False), 1)
        res[name + "_gpu_busy_us"] = round(gpu_time(fn, True), 1)
        res[name + "_cpu_us"] = round(cpu_time(fn), 1)
    # pieces of the samebits backward
    o2, lse2 = torch.ops.samebits.attn_fwd(q.detach(), k.detach(), v.detach(), None, None, L, L, D ** -0.5, 0.0, -1, -1)
    args = (dout, q.detach(), k.detach(), v.detach(), o2, lse2, None, None, L, L, D ** -0.5, 0.0, -1, -1)
    res["op_attn_bwd_cpu_us"] = round(cpu_time(lambda: torch.ops.samebits.attn_bwd(*args)), 1)
    res["zeros3_cpu_us"] = round(cpu_time(lambda: [torch.zeros(q.shape, dtype=q.dtype, device=dev) for _ in range(3)]), 1)
    print(json.dumps(res), flush=True)
    # the raw C call with prebuilt params
    dq = torch.zeros(q.shape, dtype=q.dtype, device=dev); dk = torch.zeros_like(dq); dv = torch.zeros_like(dq)
    p = ops._base_params(q.detach(), k.detach(), v.detach(), None, None, D ** -0.5, 0.0, -1, -1)
    p.out, p.lse = ops._view4(o2), ops._view_lse(lse2)
    p.dout, p.dq, p.dk, p.dv = ops._view4(dout), ops._view4(dq), ops._view4(dk), ops._view4(dv)
    fn = _lib.lib().sb_attention_backward
    res2 = {"B": B, "L": L, "c_call_cpu_us": round(cpu_time(lambda: fn(ctypes.byref(p))), 1),
            "c_call_gpu_idle_us": round(gpu_time(lambda: fn(ctypes.byref(p)), False), 1),
            "c_call_gpu_busy_us": round(gpu_time(lambda: fn(ctypes.byref(p)), True), 1)}
    print(json.dumps(res2), flush=True)
