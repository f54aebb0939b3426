"""Host cost of a small GEMM call: samebits.dense.linear (and F.linear under the mode) vs F.linear, GPU idle vs queued."""
import json, statistics, sys, time
import torch, torch.nn.functional as F
import samebits
from samebits import dense as D
from samebits.mode import set_batch_invariant_mode
def gpu_time(fn, busy, reps=30):
    for _ in range(5): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        if busy: torch.cuda._sleep(5_000_000)
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e) * 1e3)
    return round(statistics.median(ts), 1)
res = {"py": sys.argv[1]}
for M in (1, 64):
    x = torch.randn(M, 4096, device="cuda", dtype=torch.bfloat16); w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    for name, fn in (("samebits", lambda: D.linear(x, w)), ("torch", lambda: F.linear(x, w))):
        res[f"M{M}_{name}_idle_us"] = gpu_time(fn, False); res[f"M{M}_{name}_busy_us"] = gpu_time(fn, True)
    with set_batch_invariant_mode():
        res[f"M{M}_mode_idle_us"] = gpu_time(lambda: F.linear(x, w), False); res[f"M{M}_mode_busy_us"] = gpu_time(lambda: F.linear(x, w), True)
print(json.dumps(res))
