#!/usr/bin/env bash
# One device call (forty-second session): the fused RMSNorm dx + dw kernel
# with consecutive chunks per CTA above one wave (.carry/s42p) against
# main's library (.carry/main, a5fb9ff: its first GPU run) and f604458's
# (.carry/s41land). Bits: rows_bits_dump (default path; fused forced for
# main and s42p), pytest -k rms of both (main's with the CUDA
# documented-order tests, not yet run on a GPU). Speed: rows_dw_probe of
# s42p and main, N = 8192, M = 4096 (one chunk per CTA, unchanged), 8192,
# 16384. ~7-8 min. carry [".carry/s42p", ".carry/main", ".carry/s41land"].
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
unxz() { python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$1.xz" "$1"; }
for c in s42p main s41land; do unxz "$PWD/.carry/$c/libsamebits.so"; done
lib() { echo "$PWD/.carry/$1/libsamebits.so"; }
export PYTHONPATH=$PWD/python:$PWD/bench
dump() {  # lib path-mode
  local E=SAMEBITS_RMSNORM_DW_PATH=; [ "$2" = fused ] && E=SAMEBITS_RMSNORM_DW_PATH=fused
  env $E SAMEBITS_LIBRARY=$(lib $1) timeout 80 python3 bench/rows_bits_dump.py dump "$OUT/bits_$1_$2.json" > "$OUT/bits_$1_$2.log" 2>&1
}
dump s41land default; dump main default; dump s42p default; dump main fused; dump s42p fused
cmp() { python3 bench/rows_bits_dump.py compare "$OUT/bits_$1_$3.json" "$OUT/bits_$2_$3.json" 2>&1 | tail -1 | sed "s/^/== bits $1 vs $2 ($3): /"; }
cmp s41land main default; cmp main s42p default; cmp main s42p fused
echo "== elapsed $SECONDS s"
for c in main s42p; do
  K="rms"; [ $c = main ] && K="rms or documented"  # the documented-order tests once
  SAMEBITS_LIBRARY=$(lib $c) timeout 120 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py \
    -q -p no:cacheprovider -k "$K" > "$OUT/pytest_$c.log" 2>&1
  echo "== pytest -k \"$K\" $c rc=$? $(tail -1 "$OUT/pytest_$c.log")"
done
echo "== elapsed $SECONDS s"
for c in s42p main; do
  SAMEBITS_LIBRARY=$(lib $c) timeout 110 python3 bench/rows_dw_probe.py --out "$OUT/dw_$c.json" \
    --ms 4096,8192,16384 --ns 8192 --reps 11 > "$OUT/dw_$c.log" 2>&1
  echo "== rows_dw_probe $c rc=$?"; cat "$OUT/dw_$c.log"
  echo "== elapsed $SECONDS s"
done
