#!/usr/bin/env bash
# device: branch dw-r2: RMSNorm backward fused dx + dw with 2 rows a step (SAMEBITS_DW_R2=1) against the default,
# one library: row-op bits (default, variant, variant with the fused path forced) and bench_dense --rows-only
set -uo pipefail
sum=()
C=$PWD/.carry/dwr2
FINAL=$OUT; OUT=$(mktemp -d); trap 'tar czf $FINAL/all.tgz -C $OUT . ; printf "%s\n" "${sum[@]}" > $FINAL/summary.txt' EXIT
xz -d -k -f $C/libsamebits.so.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
sha256sum $C/libsamebits.so > $OUT/lib_sha256.txt
cp $0 $OUT/run.sh
PY=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
"${PY[@]}" timeout 150 python3 bench/rows_bits_dump.py dump $OUT/bits_default.json > $OUT/bits_default.log 2>&1
"${PY[@]}" SAMEBITS_DW_R2=1 timeout 150 python3 bench/rows_bits_dump.py dump $OUT/bits_r2.json > $OUT/bits_r2.log 2>&1
"${PY[@]}" SAMEBITS_DW_R2=1 SAMEBITS_RMSNORM_DW_PATH=fused timeout 150 python3 bench/rows_bits_dump.py dump $OUT/bits_r2_fused.json > $OUT/bits_r2_fused.log 2>&1
python3 bench/rows_bits_dump.py compare $OUT/bits_default.json $OUT/bits_r2.json > $OUT/cmp_r2.log 2>&1
sum+=("bits default vs r2 rc=$? $(tail -1 $OUT/cmp_r2.log)")
python3 bench/rows_bits_dump.py compare $OUT/bits_default.json $OUT/bits_r2_fused.json > $OUT/cmp_r2_fused.log 2>&1
sum+=("bits default vs r2 fused forced rc=$? $(tail -1 $OUT/cmp_r2_fused.log)")
for round in 1 2; do
  for v in 0 1; do
    "${PY[@]}" SAMEBITS_DW_R2=$v timeout 100 python3 bench/bench_dense.py --rows-only --out $OUT/rows_r2_${v}_$round.json > $OUT/rows_r2_${v}_$round.log 2>&1
    sum+=("rows r2=$v round $round rc=$? $(grep -E 'rms_norm_bwd_dw' $OUT/rows_r2_${v}_$round.log | tr -s ' ' | cut -c1-90 | tr '\n' ';')")
  done
done
printf '%s\n' "${sum[@]}"
