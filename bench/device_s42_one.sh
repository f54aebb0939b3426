#!/usr/bin/env bash
# One device call (forty-second session): the first GPU run of a5fb9ff (the
# one- and two-slice dw folds as one template, the streaming store a flag of
# store_pack): rows_bits_dump of main's library (.carry/main) against
# f604458's (.carry/s41land), default and fused path forced; then
# bench/device_next_h200.sh (pytest -k "... or rms", the decode suite, issue
# 6's GEMM table twice, the small-M entries, rows_dw_probe) and, if time is
# left, a second round of the 112-column GEMM entries (.carry/s41w112, the
# library of main at f4975ef + gemm_w112.patch). carry [".carry/main",
# ".carry/s41land", ".carry/s41w112"].
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/bits" "$OUT/next" "$OUT/w112"
unxz() { python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$1.xz" "$1"; }
for c in main s41land s41w112; do unxz "$PWD/.carry/$c/libsamebits.so"; done
export PYTHONPATH=$PWD/python:$PWD/bench
for v in main s41land; do
  for f in default fused; do
    if [ $f = fused ]; then E=SAMEBITS_RMSNORM_DW_PATH=fused; else E=SAMEBITS_RMSNORM_DW_PATH=; fi
    env $E SAMEBITS_LIBRARY=$PWD/.carry/$v/libsamebits.so timeout 60 python3 bench/rows_bits_dump.py dump \
      "$OUT/bits/rows_bits_${v}_$f.json" > "$OUT/bits/rows_bits_${v}_$f.log" 2>&1
  done
done
for f in default fused; do
  python3 bench/rows_bits_dump.py compare "$OUT/bits/rows_bits_s41land_$f.json" "$OUT/bits/rows_bits_main_$f.json" \
    2>&1 | tail -1 | sed "s/^/== rows bits $f (f604458 vs main): /"
done
echo "== elapsed $SECONDS s"
CARRY=.carry/main OUT=$OUT/next bash bench/device_next_h200.sh
echo "== elapsed $SECONDS s"
if [ $SECONDS -lt 420 ]; then
  L=$PWD/.carry/s41w112/libsamebits.so
  S=48x14336x4096,64x14336x4096,96x14336x4096,128x14336x4096,160x14336x4096,192x14336x4096,64x14336x14336,192x4096x14336
  for r in 1 2; do
    SAMEBITS_LIBRARY=$L timeout 60 python3 bench/gemm_cluster_probe.py --configs default \
      --tiles 64x128,64x112,128x128,128x112,192x128w3,192x112w3 --shapes $S --reps 11 --captures 2 \
      --out "$OUT/w112/w112_$r.json" 2>&1 | sed "s/^/== r$r /"
  done
fi
echo "== elapsed $SECONDS s"
