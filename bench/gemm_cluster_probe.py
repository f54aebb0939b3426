"""GEMM cluster launches, measured: samebits entries forced by env
(SAMEBITS_GEMM_TILE, SAMEBITS_GEMM_EPILOGUE, and the scheduling-only knobs
SAMEBITS_GEMM_FAKE_CLUSTER and SAMEBITS_GEMM_CLUSTER_POLICY, read at every
launch) beside cuBLAS
(F.linear), in one process. Each timed call is one replay of a CUDA graph of
one call, after an L2 flush (--flush read, default: 256 MiB written, then
256 MiB read, which leaves clean lines; --flush write: the write alone, which
leaves L2 dirty), between CUDA events; median of --reps, the configurations
timed in turn within each repetition. A timed call runs faster when the
call before it (before the flush) ran the same kernel: 1.0-1.4 us for
samebits' GEMM at 384, 1152 and 1280 x 4096 x 4096, 0.2-0.5 us for cuBLAS
(bench/predecessor_probe.py, thirty-second session). In this order the
first configuration follows cuBLAS and cuBLAS follows the last
configuration; two configurations that launch the same kernel, listed one
after the other, read the second one faster. --lead captures and times a copy
of the first configuration ahead of the others, under the name 'lead'
(the thirty-first session's default, dropped: the first configuration then
follows its own kernel while cuBLAS does not). Every samebits output is
compared bitwise with the first configuration's.

    SAMEBITS_LIBRARY=lib.so PYTHONPATH=python python bench/gemm_cluster_probe.py --out probe.json
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F

from samebits import dense as D

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--reps", type=int, default=15)
ap.add_argument("--shapes", default="512x4096x14336,640x4096x14336,192x4096x4096,384x4096x4096,1024x4096x4096")
ap.add_argument("--configs", default="", help="comma list of configuration names to run (default: all)")
ap.add_argument("--captures", type=int, default=1,
                help="graphs captured per configuration (each with its own output buffer), timed in turn; the "
                     "time reported is the median over all of them (the output's placement moves a call's time)")
ap.add_argument("--tiles", default="", help="comma list of entries to force (SAMEBITS_GEMM_TILE), run after --configs")
ap.add_argument("--trace", default="", help="a folder: after the timing, each configuration once more, eagerly, with "
                "SAMEBITS_GEMM_TRACE=<folder>/<shape>_<configuration>.txt (a -DSAMEBITS_GEMM_PROBE library, "
                "branch gemm-probe)")
ap.add_argument("--lead", action="store_true",
                help="capture and time a copy of the first configuration ahead of the others, under the name 'lead' "
                     "(the first configuration then follows a call of its own kernel; see above)")
ap.add_argument("--flush", choices=("read", "write"), default="read",
                help="read: 256 MiB written then 256 MiB read (clean L2); write: the 256 MiB write alone (dirty L2)")
ap.add_argument("--issue6", action="store_true",
                help="the 76 points of issue 6 (M = 1 .. 16384 at N x K = 4096x4096, 14336x4096, 4096x14336, "
                     "128256x4096) instead of --shapes, and a summary of the first configuration against cuBLAS")
args = ap.parse_args()
if args.issue6:
    ISSUE6_M = (1, 16, 64, 128, 192, 256, 384, 512, 640, 768, 896, 1024, 1152, 1280, 1536, 1792, 2048, 4096, 16384)
    args.shapes = ",".join(f"{m}x{nk}" for nk in ("4096x4096", "14336x4096", "4096x14336", "128256x4096")
                           for m in ISSUE6_M)

CONFIGS = [
    ("default", {}),
    ("generic", {"SAMEBITS_GEMM_LEAN": "0"}),  # the staged entries' generic kernel (the lean one by default)
    ("128x128", {"SAMEBITS_GEMM_TILE": "128x128"}),
    ("128x128 fake-cluster", {"SAMEBITS_GEMM_TILE": "128x128", "SAMEBITS_GEMM_FAKE_CLUSTER": "2"}),
    ("128x128 direct", {"SAMEBITS_GEMM_TILE": "128x128", "SAMEBITS_GEMM_EPILOGUE": "direct"}),
    ("128x128m2", {"SAMEBITS_GEMM_TILE": "128x128m2"}),
    ("128x128m2 spread", {"SAMEBITS_GEMM_TILE": "128x128m2", "SAMEBITS_GEMM_CLUSTER_POLICY": "spread"}),
    ("128x128m2 balance", {"SAMEBITS_GEMM_TILE": "128x128m2", "SAMEBITS_GEMM_CLUSTER_POLICY": "balance"}),
    ("128x256", {"SAMEBITS_GEMM_TILE": "128x256"}),
    ("128x256m2", {"SAMEBITS_GEMM_TILE": "128x256m2"}),
    ("128x256 direct", {"SAMEBITS_GEMM_TILE": "128x256", "SAMEBITS_GEMM_EPILOGUE": "direct"}),
    ("128x256m2 direct", {"SAMEBITS_GEMM_TILE": "128x256m2", "SAMEBITS_GEMM_EPILOGUE": "direct"}),
    ("128x256m2 spread", {"SAMEBITS_GEMM_TILE": "128x256m2", "SAMEBITS_GEMM_CLUSTER_POLICY": "spread"}),
    ("64x128", {"SAMEBITS_GEMM_TILE": "64x128"}),
    ("64x128 fake-cluster", {"SAMEBITS_GEMM_TILE": "64x128", "SAMEBITS_GEMM_FAKE_CLUSTER": "2"}),
]
if args.configs:
    CONFIGS = [c for c in CONFIGS if c[0] in args.configs.split(",")]


def tile_config(t):
    """'<entry>[@direct|@rem-direct][~][%P][^G]': the entry forced ('rule':
    the default pick); @direct without its staged epilogue; @rem-direct
    staged, the columns past the last whole 64-column block stored
    directly; ~ launched as fake 2-CTA clusters; %P with
    SAMEBITS_GEMM_CLUSTER_PROBE=P (a library built with -DSAMEBITS_GEMM_PROBE
    from branch gemm-probe: the knobs live there, not in main); ^G with
    SAMEBITS_GEMM_GROUP_M=G."""
    name = t.split("@")[0].split("~")[0].split("%")[0].split("^")[0]
    env = {} if name == "rule" else {"SAMEBITS_GEMM_TILE": name}
    if "^" in t:
        env["SAMEBITS_GEMM_GROUP_M"] = t.split("^")[1].split("%")[0].split("~")[0]
    if "@direct" in t:
        env["SAMEBITS_GEMM_EPILOGUE"] = "direct"
    if "@rem-direct" in t:
        env["SAMEBITS_GEMM_EPILOGUE"] = "staged-rem-direct"
    if "~" in t:
        env["SAMEBITS_GEMM_FAKE_CLUSTER"] = "2"
    if "%" in t:
        env["SAMEBITS_GEMM_CLUSTER_PROBE"] = t.split("%")[1].split("^")[0].split("~")[0]
    return env


CONFIGS += [(t, tile_config(t)) for t in args.tiles.split(",") if t and t not in dict(CONFIGS)]
if args.lead and CONFIGS:
    CONFIGS.insert(0, ("lead", CONFIGS[0][1]))
KNOBS = ("SAMEBITS_GEMM_TILE", "SAMEBITS_GEMM_FAKE_CLUSTER", "SAMEBITS_GEMM_CLUSTER_POLICY", "SAMEBITS_GEMM_EPILOGUE",
         "SAMEBITS_GEMM_CLUSTER_PROBE", "SAMEBITS_GEMM_TRACE", "SAMEBITS_GEMM_GROUP_M", "SAMEBITS_GEMM_LEAN")


def set_env(env):
    for k in KNOBS:
        os.environ.pop(k, None)
    os.environ.update(env)


def graphed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


flush_w = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
flush_r = torch.ones(64 << 20, dtype=torch.float32, device="cuda")
rows, fails = [], []
for sh in args.shapes.split(","):
    M, N, K = (int(x) for x in sh.split("x"))
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    runs = {}  # (configuration, capture) -> graph
    ref = None
    for name, env in CONFIGS:
        set_env(env)
        try:
            for cap in range(args.captures):
                gr, out = graphed(lambda: D.linear(x, w))
                gr.replay()
                torch.cuda.synchronize()
                if ref is None:
                    ref = out.clone()
                elif not torch.equal(out, ref):
                    fails.append((sh, name, "bits differ from the default"))
                runs[(name, cap)] = gr
        except Exception as e:  # noqa: BLE001 - an entry that cannot run this shape
            fails.append((sh, name, f"{type(e).__name__}: {str(e)[:100]}"))
            continue
    set_env({})
    for cap in range(args.captures):
        runs[("cuBLAS", cap)] = graphed(lambda: F.linear(x, w))[0]
    ts = {k[0]: [] for k in runs}
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(args.reps):
        for (name, _cap), gr in runs.items():
            flush_w.zero_()
            if args.flush == "read":
                flush_r.sum()
            e0.record()
            gr.replay()
            e1.record()
            e1.synchronize()
            ts[name].append(e0.elapsed_time(e1) * 1e3)
    med = {k: sorted(v)[len(v) // 2] for k, v in ts.items()}
    row = {"M": M, "N": N, "K": K, "flush": args.flush, "us": med}
    rows.append(row)
    if args.trace:
        os.makedirs(args.trace, exist_ok=True)
        for name, env in CONFIGS:
            if (name, 0) not in runs:
                continue
            set_env({**env, "SAMEBITS_GEMM_TRACE": os.path.join(args.trace, f"{sh}_{name.replace('%', 'p')}.txt")})
            for _ in range(2):  # the second call's trace is the warm one
                flush_w.zero_()
                if args.flush == "read":
                    flush_r.sum()
                D.linear(x, w)
                torch.cuda.synchronize()
        set_env({})
    cb = med["cuBLAS"]
    print(f"{sh}: " + "  ".join(f"{k} {v:.1f} ({cb / v:.2f})" for k, v in med.items()), flush=True)
    del x, w, runs
json.dump({"device": torch.cuda.get_device_name(), "rows": rows, "fails": fails}, open(args.out, "w"), indent=1)
print("FAILS:", fails)
if args.issue6 and rows:
    first = next(k for k in rows[0]["us"] if k != "cuBLAS")
    r = sorted((round(x["us"]["cuBLAS"] / x["us"][first], 3), f'{x["M"]}x{x["N"]}x{x["K"]}') for x in rows)
    print(f"issue 6 ({first} against cuBLAS): points {len(r)}, below 0.95: {[x for x in r if x[0] < 0.95]}, "
          f"lowest {r[:6]}")
