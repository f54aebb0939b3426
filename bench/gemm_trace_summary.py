"""Summary of GEMM traces (a library built with -DSAMEBITS_GEMM_PROBE (branch gemm-probe), files
written by gemm_cluster_probe.py --trace): per file, the last launch's CTAs.
Words per CTA (gemm_kernel_sm90_tma_wgmma.cuh): SM id | rank << 16 |
blockIdx.x << 32, then globaltimer (ns) at the start, the producer's last
load issued, consumer 1's first stage landed, its last mainloop done, its
end; consumer 1's and the producer's cycles spent waiting on the ring.

    python bench/gemm_trace_summary.py TRACE_DIR > summary.md
"""
import glob
import os
import statistics as st
import sys


def last_launch(path):
    blocks, cur = [], None
    for line in open(path):
        if line.startswith("#"):
            cur = {"head": line[2:].strip(), "ctas": []}
            blocks.append(cur)
        elif cur is not None and line.strip():
            cur["ctas"].append([int(v) for v in line.split()])
    return blocks[-1] if blocks else None


def q(v):
    v = sorted(v)
    return f"{v[0]:.1f} / {v[len(v) // 2]:.1f} / {v[-1]:.1f}" if v else "-"


print("times in us from the kernel's first CTA start (min / median / max over CTAs); waits in k cycles\n")
print("| file | CTAs | SMs | pairs on one TPC | start | first stage | producer done | mainloop done | end | "
      "consumer wait | producer wait |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.txt"))):
    b = last_launch(f)
    if not b or not b["ctas"]:
        continue
    c = b["ctas"]
    t0 = min(w[1] for w in c)
    sm = [w[0] & 0xFFFF for w in c]
    blk = {w[0] >> 32: w[0] & 0xFFFF for w in c}
    pairs = [(blk[i], blk.get(i + 1)) for i in sorted(blk) if i % 2 == 0 and i + 1 in blk]
    same_tpc = sum(1 for a, b2 in pairs if a // 2 == b2 // 2)
    us = lambda i: [(w[i] - t0) / 1e3 for w in c if w[i]]
    print(f"| {os.path.basename(f)[:-4]} | {len(c)} | {len(set(sm))} | {same_tpc}/{len(pairs)} | {q(us(1))} | "
          f"{q(us(3))} | {q(us(2))} | {q(us(4))} | {q(us(5))} | {q([w[6] / 1e3 for w in c])} | "
          f"{q([w[7] / 1e3 for w in c])} |")
