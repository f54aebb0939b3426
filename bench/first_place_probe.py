"""Where the probes' first-place slowness comes from: the capture order or the
timing order.

The thirty-first session found that bench/gemm_cluster_probe.py and
bench/bench_decode.py read whatever configuration they capture and time first
0.3-2.4 us slow. In those scripts the first configuration is both captured
first and timed first in every repetition, so the two causes were not told
apart. Here they are: several identical graphs of one call (samebits' default
GEMM, and cuBLAS through F.linear) are captured in a fixed order, then timed
in a rotating order, so that every graph takes every place of a repetition
equally often. Each timed call is one replay after an L2 flush (256 MiB
written, then 256 MiB read), between CUDA events.

Printed and written (--out, JSON), us:
- by graph: the median of each graph over every place (a capture-order
  effect shows here, as the first-captured graph slower than its copies);
- by place: the median, over the graphs, of each time divided by its graph's
  median (a timing-order effect shows here, as place 0 above 1.0);
- each graph's output address (the first capture's pool may sit elsewhere).

With --shared-pool every graph is captured into one memory pool (the
outputs then sit side by side).

    SAMEBITS_LIBRARY=lib.so PYTHONPATH=python python bench/first_place_probe.py --out fp.json
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

from samebits import dense as D

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--reps", type=int, default=24, help="repetitions (a multiple of the graph count keeps places even)")
ap.add_argument("--shapes", default="384x4096x4096,1280x4096x4096")
ap.add_argument("--copies", type=int, default=3, help="graphs of each implementation")
ap.add_argument("--shared-pool", action="store_true")
args = ap.parse_args()


def graphed(fn, pool):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, pool=pool):
        out = fn()
    return g, out


flush_w = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
flush_r = torch.ones(64 << 20, dtype=torch.float32, device="cuda")
result = {"device": torch.cuda.get_device_name(), "shared_pool": args.shared_pool, "shapes": {}}
for sh in args.shapes.split(","):
    M, N, K = (int(x) for x in sh.split("x"))
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    pool = torch.cuda.graph_pool_handle() if args.shared_pool else None
    graphs, names, addrs = [], [], []
    # capture order: samebits 0, cuBLAS 0, samebits 1, cuBLAS 1, ...
    for c in range(args.copies):
        for impl, fn in (("samebits", lambda: D.linear(x, w)), ("cuBLAS", lambda: F.linear(x, w))):
            gr, out = graphed(fn, pool)
            gr.replay()
            graphs.append(gr)
            names.append(f"{impl}#{c}")
            addrs.append(out.data_ptr())
    torch.cuda.synchronize()
    n = len(graphs)
    times = {name: [] for name in names}  # name -> [(place, us)]
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for rep in range(args.reps):
        order = [(rep + i) % n for i in range(n)]
        for place, gi in enumerate(order):
            flush_w.zero_()
            flush_r.sum()
            e0.record()
            graphs[gi].replay()
            e1.record()
            e1.synchronize()
            times[names[gi]].append((place, e0.elapsed_time(e1) * 1e3))
    by_graph = {k: statistics.median(t for _, t in v) for k, v in times.items()}
    rel = {p: [] for p in range(n)}
    for k, v in times.items():
        for place, t in v:
            rel[place].append(t / by_graph[k])
    by_place = {p: statistics.median(v) for p, v in rel.items()}
    first_place_us = {k: statistics.median(t for p, t in v if p == 0) for k, v in times.items()}
    result["shapes"][sh] = {"by_graph_us": by_graph, "by_place_rel": by_place, "at_place0_us": first_place_us,
                            "out_addr": dict(zip(names, (hex(a) for a in addrs))), "raw": times}
    print(f"{sh}: by graph (capture order) " + "  ".join(f"{k} {v:.2f}" for k, v in by_graph.items()))
    print(f"{sh}: by place (time / its graph's median) " + "  ".join(f"{p}:{v:.3f}" for p, v in by_place.items()))
    print(f"{sh}: at place 0 " + "  ".join(f"{k} {v:.2f}" for k, v in first_place_us.items()))
    print(f"{sh}: outputs " + "  ".join(f"{k} {hex(a)}" for k, a in zip(names, addrs)), flush=True)
    del graphs
json.dump(result, open(args.out, "w"), indent=1)
