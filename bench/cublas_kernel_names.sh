#!/usr/bin/env bash
# ncu of cuBLAS's kernels for F.linear at SHAPES (bf16): name, grid, cluster,
# duration (caches flushed, clocks not locked). Writes $OUT/cublas_kernels.txt.
OUT=${OUT:-/tmp/out}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
SHAPES=${SHAPES:-192x4096x4096,384x4096x4096,640x4096x4096,1152x4096x4096,1280x4096x4096,384x14336x4096,1x14336x4096,16x4096x14336}
"$NCU" --clock-control none --cache-control all --nvtx --print-nvtx-rename kernel \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__cluster_dim_x,launch__cluster_dim_y,launch__block_size \
  --csv --page raw python3 bench/cublas_kernel_names.py "$SHAPES" > "$OUT/cublas_kernels.csv" 2> "$OUT/cublas_kernels.err"
echo "ncu rc=$?"
python3 - "$OUT/cublas_kernels.csv" "$SHAPES" <<'PY' | tee "$OUT/cublas_kernels.txt"
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
h = rows[0]
for r in rows[2:]:
    g = lambda k: r[h.index(k)] if k in h else "?"
    print(g("Kernel Name")[:90], "grid", g("launch__grid_size"), "cluster", g("launch__cluster_dim_x"), g("launch__cluster_dim_y"), "us", g("gpu__time_duration.sum"))
PY
