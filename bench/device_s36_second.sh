#!/usr/bin/env bash
# Second device call (thirty-sixth session): 1) decode with its split
# kernels' unused forms compiled out (a measurement build,
# bench/results/2026-12-07_h100_s36_lean/decode_lean_probe.patch: the hand
# loads and the softcap branch removed, valid for TMA calls without softcap
# only; .carry/s36dprobe) beside main's library (.carry/s35e),
# bench_decode --graph, 2 rounds rotated; 2) a second round of issue 6's 76
# GEMM points with the lean kernels (.carry/s36lean). Packed into $OUT/all.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/out}
LIBS="main=.carry/s35e probe=.carry/s36dprobe" ROUNDS=2 CARRY=.carry/s36dprobe \
  SHAPES=1x4096,2x2048,4x1024,1x8192,1x16384,8x2048 OUT=$OUT/dec bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
export PYTHONPATH=$PWD/python:$PWD/bench
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" .carry/s36lean/libsamebits.so.xz .carry/s36lean/libsamebits.so
MS="1 16 64 128 192 256 384 512 640 768 896 1024 1152 1280 1536 1792 2048 4096 16384"
SH=""
for nk in 4096x4096 14336x4096 4096x14336 128256x4096; do for m in $MS; do SH="$SH${SH:+,}${m}x$nk"; done; done
SAMEBITS_LIBRARY=$PWD/.carry/s36lean/libsamebits.so timeout 300 python3 bench/gemm_cluster_probe.py --configs default --shapes "$SH" \
  --reps 11 --captures 2 --out "$OUT/table_2.json" > "$OUT/table_2.log" 2>&1
echo "== table rc=$?"
python3 - "$OUT/table_2.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
r = sorted((x["us"]["cuBLAS"] / x["us"]["default"], f'{x["M"]}x{x["N"]}x{x["K"]}') for x in rows)
print("points", len(r), "below 0.95:", [x for x in r if x[0] < 0.95], "lowest", r[:4])
PY
cd "$OUT" && tar czf /tmp/all.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
