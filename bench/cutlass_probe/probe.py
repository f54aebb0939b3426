"""CUTLASS 3 sm90 GEMMs (bench/cutlass_probe/probe.cu, fixed tiles and
clusters, no split-K or stream-K) beside samebits' default entry and cuBLAS
(F.linear), bf16, x @ w.T. Times as bench/gemm_cluster_probe.py does: one
CUDA-graph replay per timed call after an L2 flush that leaves clean lines,
median of --reps, configurations in turn. Each CUTLASS output is compared
bitwise with samebits' (the count of differing elements is recorded).

    SAMEBITS_LIBRARY=lib.so PYTHONPATH=python python bench/cutlass_probe/probe.py --lib libsbcutlass.so --out p.json
"""
import argparse
import ctypes
import json
import os

import torch
import torch.nn.functional as F

from samebits import dense as D

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--reps", type=int, default=15)
ap.add_argument("--shapes", default="128x4096x4096,192x4096x4096,256x4096x4096,384x4096x4096,512x4096x4096,"
                "640x4096x4096,1152x4096x4096,1280x4096x4096,128x4096x14336,512x4096x14336,640x4096x14336,"
                "384x14336x4096,2048x4096x4096,4096x14336x4096")
ap.add_argument("--cfgs", default="0,1,2,3,4,5")
ap.add_argument("--cublas-extra", type=int, default=0, help="cuBLAS captured and timed this many more times")
ap.add_argument("--sb", default="default",
                help="samebits variants: TILE[@EPI], TILE forced through SAMEBITS_GEMM_TILE (default: none), "
                     "EPI (direct / staged) through SAMEBITS_GEMM_EPILOGUE")
args = ap.parse_args()
NAMES = {0: "c128x128 2x1", 1: "c128x128 1x2", 2: "c128x128 1x1", 3: "p64x128 2x1", 4: "c128x256 2x1", 5: "c256x128 1x2", 6: "c128x96 1x2",
         7: "c128x160 2x1", 8: "c128x96 1x1", 9: "c128x160 1x1"}

lib = ctypes.CDLL(args.lib)
lib.sbc_workspace.restype = ctypes.c_size_t
lib.sbc_workspace.argtypes = [ctypes.c_int] * 4
lib.sbc_gemm.restype = ctypes.c_int
lib.sbc_gemm.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                         ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]


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


def cutlass_fn(cfg, x, w, out, ws):
    M, K = x.shape
    N = w.shape[0]

    def fn():
        rc = lib.sbc_gemm(cfg, x.data_ptr(), w.data_ptr(), out.data_ptr(), M, N, K, ws.data_ptr() if ws is not None
                          else None, torch.cuda.current_stream().cuda_stream)
        if rc:
            raise RuntimeError(f"cutlass cfg {cfg}: status {rc}")
        return out
    return fn


flush_w = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
flush_r = torch.ones(64 << 20, dtype=torch.float32, device="cuda")
rows, notes = [], []
for sh in args.shapes.split(","):
    M, N, K = (int(v) for v in sh.split("x"))
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    runs = {}
    ref = None
    for v in args.sb.split(","):
        tile, _, promo = v.partition("@")
        for k_, val in (("SAMEBITS_GEMM_TILE", tile), ("SAMEBITS_GEMM_EPILOGUE", promo)):
            os.environ.pop(k_, None)
            if val and val != "default":
                os.environ[k_] = val
        gr, o = graphed(lambda: D.linear(x, w))
        gr.replay()
        torch.cuda.synchronize()
        if ref is None:
            ref = o.clone()
        elif not torch.equal(o, ref):
            notes.append((sh, "sb " + v, "bits differ from the first samebits variant"))
        name = "sb " + v
        while name in runs:  # a variant listed twice: timed twice (placement checks)
            name += "'"
        runs[name] = gr
    os.environ.pop("SAMEBITS_GEMM_TILE", None)
    os.environ.pop("SAMEBITS_GEMM_EPILOGUE", None)
    diffs = {}
    for c in (int(v) for v in args.cfgs.split(",")):
        out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        nws = lib.sbc_workspace(c, M, N, K)
        ws = torch.empty(max(nws, 1), dtype=torch.uint8, device="cuda")
        try:
            gr, o = graphed(cutlass_fn(c, x, w, out, ws))
            out.zero_()
            gr.replay()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            notes.append((sh, NAMES[c], f"{type(e).__name__}: {str(e)[:100]}"))
            continue
        diffs[NAMES[c]] = int((out.view(torch.int16) != ref.view(torch.int16)).sum())
        runs[NAMES[c]] = gr
    runs["cuBLAS"] = graphed(lambda: F.linear(x, w))[0]
    for i in range(args.cublas_extra):
        runs["cuBLAS" + "'" * (i + 1)] = graphed(lambda: F.linear(x, w))[0]
    ts = {k: [] for k in runs}
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(args.reps):
        for name, gr in runs.items():
            flush_w.zero_()
            flush_r.sum()
            e0.record()
            gr.replay()
            e1.record()
            e1.synchronize()
            ts[name].append(e0.elapsed_time(e1) * 1e3)
    med = {k: sorted(v)[len(v) // 2] for k, v in ts.items()}
    rows.append({"M": M, "N": N, "K": K, "us": med, "differing_elements": diffs})
    cb = med["cuBLAS"]
    print(f"{sh}: " + "  ".join(f"{k} {v:.1f} ({cb / v:.2f})" for k, v in med.items()), flush=True)
    print(f"   differing elements vs samebits: {diffs}", flush=True)
    del x, w, runs
json.dump({"device": torch.cuda.get_device_name(), "rows": rows, "notes": notes}, open(args.out, "w"), indent=1)
print("NOTES:", notes)
