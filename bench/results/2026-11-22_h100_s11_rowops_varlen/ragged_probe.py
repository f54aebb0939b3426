"""Forward and backward time where sequences end inside a tile (hand-loaded
last tiles), for one library (SAMEBITS_LIBRARY). JSON lines."""
import json, sys
import torch
import samebits

dev = "cuda"
lib = sys.argv[1]
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)

def timed(fn, reps=15):
    for _ in range(2):
        fn()
    ts = []
    for r in range(reps):
        flush.fill_(r % 250 + 1)
        e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
        e0.record(); fn(); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    ts.sort()
    return round(ts[len(ts) // 2] * 1e3, 1)

g = torch.Generator(device=dev).manual_seed(0)
D = 128
cases = []
for L in (4096, 4095):
    cases.append(("dense", L, lambda L=L: [torch.randn(4, L, 16, D, dtype=torch.bfloat16, device=dev, generator=g) for _ in range(3)], None))
torch.manual_seed(1)
lens = torch.randint(500, 1500, (16,)).tolist()
cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device=dev)
T = sum(lens)
cases.append(("varlen16", T, lambda: [torch.randn(T, 16, D, dtype=torch.bfloat16, device=dev, generator=g) for _ in range(3)], cu))
for name, L, make, cu in cases:
    q, k, v = [t.requires_grad_() for t in make()]
    for causal in (False, True):
        if cu is None:
            f = lambda: samebits.attention(q, k, v, causal=causal)
        else:
            f = lambda: samebits.attention_varlen(q, k, v, cu, cu, causal=causal)
        with torch.no_grad():
            fwd_us = timed(f)
        out = f()
        dout = torch.randn_like(out)
        bwd_us = timed(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True))
        print(json.dumps({"lib": lib, "case": name, "L": L, "causal": causal, "fwd_us": fwd_us, "bwd_us": bwd_us}), flush=True)
