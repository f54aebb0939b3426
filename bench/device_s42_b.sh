#!/usr/bin/env bash
# The forty-second session's second device call: compute-sanitizer
# racecheck / synccheck / memcheck of the RMSNorm dx + dw test where the
# fused kernel's CTAs take consecutive chunks (M = 5000, 8232; .carry/s42p),
# the strided-rows measurement (.carry/s42d: rmsnorm_strided_diag.patch,
# wrong dw; does the fused kernel lose back to back because its CTAs' rows
# are 32 rows apart?), a second round of rows_dw_probe (s42p, main; N =
# 8192, also timed after another kernel: --after), and a second round of the 112-column GEMM entries (.carry/s41w112). carry
# [".carry/s42p", ".carry/main", ".carry/s41w112", ".carry/s42d"].
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
unxz() { python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$1.xz" "$1"; }
for c in s42p main s41w112 s42d; do unxz "$PWD/.carry/$c/libsamebits.so"; done
lib() { echo "$PWD/.carry/$1/libsamebits.so"; }
export PYTHONPATH=$PWD/python:$PWD/bench
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in racecheck synccheck memcheck; do
  SAMEBITS_LIBRARY=$(lib s42p) timeout 100 "$CS" --tool $tool --target-processes all python3 -m pytest \
    tests/python/test_cuda.py -q -p no:cacheprovider -k "inline_fold and (5000-4096 or 8232-8192)" \
    > "$OUT/sanitizer_$tool.log" 2>&1
  echo "== $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$OUT/sanitizer_$tool.log" | tr '\n' ' ')"
done
echo "== elapsed $SECONDS s"
SAMEBITS_LIBRARY=$(lib s42d) timeout 60 python3 bench/rows_dw_probe.py --out "$OUT/dw_strided.json" --ms 4096 \
  --ns 8192,4096 --reps 11 --after --extra "diagstrided:SAMEBITS_RMSNORM_DIAG_STRIDED=1" > "$OUT/dw_strided.log" 2>&1
echo "== strided rows (diag) rc=$?"; cat "$OUT/dw_strided.log"
echo "== elapsed $SECONDS s"
for c in main s42p; do
  SAMEBITS_LIBRARY=$(lib $c) timeout 110 python3 bench/rows_dw_probe.py --out "$OUT/dw_$c.json" \
    --ms 4096,8192,16384 --ns 8192 --reps 11 --after > "$OUT/dw_$c.log" 2>&1
  echo "== rows_dw_probe $c rc=$?"; cat "$OUT/dw_$c.log"
  echo "== elapsed $SECONDS s"
done
if [ $SECONDS -lt 480 ]; then
  S=48x14336x4096,64x14336x4096,96x14336x4096,128x14336x4096,160x14336x4096,192x14336x4096,64x14336x14336,192x4096x14336
  for r in 1 2; do
    SAMEBITS_LIBRARY=$(lib s41w112) timeout 50 python3 bench/gemm_cluster_probe.py --configs default \
      --tiles 64x128,64x112,128x128,128x112,192x128w3,192x112w3 --shapes $S --reps 11 --captures 2 \
      --out "$OUT/w112_$r.json" 2>&1 | sed "s/^/== r$r /"
  done
fi
echo "== elapsed $SECONDS s"
