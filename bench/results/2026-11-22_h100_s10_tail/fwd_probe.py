"""Forward speed where the last KV block / Q tile of a sequence is partial
(hand-loaded), for one library (SAMEBITS_LIBRARY). JSON lines."""
import json, os, sys
import torch
import samebits

dev = "cuda"
lib = sys.argv[1]
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)

def timed(fn, reps=20):
    for _ in range(3):
        fn()
    ts = []
    for r in range(reps):
        flush.fill_(r)
        e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
        e0.record(); fn(); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    ts.sort()
    return ts[len(ts) // 2] * 1e3

g = torch.Generator(device=dev).manual_seed(0)
for D in (128,):
    for L in (4096, 4095, 4033):
        q, k, v = (torch.randn(4, L, 16, D, dtype=torch.bfloat16, device=dev, generator=g) for _ in range(3))
        for causal in (False, True):
            us = timed(lambda: samebits.attention(q, k, v, causal=causal))
            print(json.dumps({"lib": lib, "case": "dense", "B": 4, "L": L, "H": 16, "D": D, "causal": causal, "us": round(us, 1)}), flush=True)
    # varlen: 16 sequences of ragged lengths (a packed training batch)
    torch.manual_seed(1)
    lens = torch.randint(500, 1500, (16,)).tolist()
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device=dev)
    T = sum(lens)
    q, k, v = (torch.randn(T, 16, D, dtype=torch.bfloat16, device=dev, generator=g) for _ in range(3))
    for causal in (False, True):
        us = timed(lambda: samebits.attention_varlen(q, k, v, cu, cu, causal=causal))
        print(json.dumps({"lib": lib, "case": "varlen16", "T": T, "H": 16, "D": D, "causal": causal, "us": round(us, 1)}), flush=True)
