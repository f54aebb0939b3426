#!/usr/bin/env bash
# One device call: the row ops' warp-row kernels (CARRY, default .carry/rows)
# against the CTA kernels and main's library (OLD, default .carry/pipe):
# test_cuda.py, verify, row-op bits against the old library, the A/B probe
# (bench/rows_warp_probe.py) and bench_dense --rows-only for both libraries.
CARRY=${CARRY:-.carry/rows}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/pipe}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
sha256sum "$C/libsamebits.so" "$O/libsamebits.so" > "$OUT/lib_sha256.txt"
cp "$0" "$OUT/run.sh"
NEW=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench)
"${NEW[@]}" timeout 300 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest_cuda.log" 2>&1
sum+=("pytest test_cuda rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
"${NEW[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json "$OUT/verify.json" > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 150 python3 bench/rows_bits_dump.py dump "$OUT/rows_bits_$v.json" > "$OUT/rows_bits_$v.log" 2>&1
  sum+=("rows dump $v rc=$? $(tail -1 "$OUT/rows_bits_$v.log")")
done
python3 bench/rows_bits_dump.py compare "$OUT/rows_bits_old.json" "$OUT/rows_bits_new.json" > "$OUT/rows_bits_compare.log" 2>&1
sum+=("rows bits vs old library rc=$? $(tail -1 "$OUT/rows_bits_compare.log")")
"${NEW[@]}" timeout 240 python3 bench/rows_warp_probe.py ${PROBE_ARGS:-} --out "$OUT/probe.json" > "$OUT/probe.log" 2>&1
sum+=("probe rc=$? $(tail -1 "$OUT/probe.log")")
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 150 python3 bench/bench_dense.py --rows-only --out "$OUT/dense_rows_$v.json" > "$OUT/dense_rows_$v.log" 2>&1
  sum+=("bench_dense --rows-only $v rc=$? $(grep -E 'FAILS' "$OUT/dense_rows_$v.log" | tail -1)")
done
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
