#!/usr/bin/env bash
# device: branch rows-wpf final library (rms_norm forward prefetches its weight into L1): every CUDA test,
# verify, bench_dense's row checks and speed, row-op bits against main's library
set -uo pipefail
sum=()
C=$PWD/.carry/wpf2
FINAL=$OUT; OUT=$(mktemp -d); trap 'tar czf $FINAL/all.tgz -C $OUT . ; printf "%s\n" "${sum[@]}" > $FINAL/summary.txt' EXIT
xz -d -k -f $C/libsamebits.so.xz; xz -d -k -f $C/old/libsamebits.so.xz
PYENV=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
sha256sum $C/libsamebits.so $C/old/libsamebits.so > $OUT/lib_sha256.txt
cp $0 $OUT/run.sh
"${PYENV[@]}" timeout 240 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest_cuda.log" 2>&1
sum+=("pytest test_cuda rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
"${PYENV[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json "$OUT/verify.json" > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$C/old/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 150 python3 bench/rows_bits_dump.py dump "$OUT/rows_bits_$v.json" > "$OUT/rows_bits_$v.log" 2>&1
  sum+=("rows dump $v rc=$? $(tail -1 "$OUT/rows_bits_$v.log")")
done
python3 bench/rows_bits_dump.py compare "$OUT/rows_bits_old.json" "$OUT/rows_bits_new.json" > "$OUT/rows_bits_compare.log" 2>&1
sum+=("rows bits vs old library rc=$? $(tail -1 "$OUT/rows_bits_compare.log")")
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$C/old/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 150 python3 bench/bench_dense.py --rows-only --out "$OUT/dense_rows_$v.json" > "$OUT/dense_rows_$v.log" 2>&1
  sum+=("bench_dense --rows-only $v rc=$? $(grep -E 'FAILS' "$OUT/dense_rows_$v.log" | tail -1)")
done
printf '%s\n' "${sum[@]}"
