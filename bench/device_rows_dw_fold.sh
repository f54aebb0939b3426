#!/usr/bin/env bash
# One device call: a library with a changed RMSNorm dx + dw (CARRY, default
# .carry/dwf) against an earlier one (OLD, default .carry/gemmc): row-op bits
# of both (rows_bits_dump, also with the fused path forced at every M),
# test_cuda.py / test_dense.py, memcheck, racecheck and synccheck of the dw
# launches test at 4096 columns, then bench_dense --rows-only alternated
# (ROUNDS, default 2; 0 skips it), the new library also with
# SAMEBITS_RMSNORM_DW_FOLD=kernel.
CARRY=${CARRY:-.carry/dwf}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/gemmc}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
sha256sum "$C/libsamebits.so" "$O/libsamebits.so" > "$OUT/lib_sha256.txt"
cp "$0" "$OUT/run.sh"
NEW=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench)
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  for f in default fused; do
    E=(); [ $f = fused ] && E=(SAMEBITS_RMSNORM_DW_PATH=fused)
    env "${E[@]}" SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 150 python3 bench/rows_bits_dump.py dump "$OUT/rows_bits_${v}_$f.json" > "$OUT/rows_bits_${v}_$f.log" 2>&1
    sum+=("rows dump $v $f rc=$? $(tail -1 "$OUT/rows_bits_${v}_$f.log")")
  done
done
for f in default fused; do
  python3 bench/rows_bits_dump.py compare "$OUT/rows_bits_old_$f.json" "$OUT/rows_bits_new_$f.json" > "$OUT/rows_bits_compare_$f.log" 2>&1
  sum+=("rows bits $f vs old library rc=$? $(tail -1 "$OUT/rows_bits_compare_$f.log")")
done
"${NEW[@]}" timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py -q -p no:cacheprovider > "$OUT/pytest_cuda.log" 2>&1
sum+=("pytest test_cuda + test_dense rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck synccheck; do
  "${NEW[@]}" timeout 240 "$CS" --tool $tool --target-processes all python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider \
    -k "inline_fold and 4096" > "$OUT/sanitizer_$tool.log" 2>&1
  sum+=("$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$OUT/sanitizer_$tool.log" | tr '\n' ' ')")
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in new kernelfold old; do
    L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
    E=(); [ $v = kernelfold ] && E=(SAMEBITS_RMSNORM_DW_FOLD=kernel)
    env "${E[@]}" SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 150 python3 bench/bench_dense.py --rows-only --skip-checks \
      --out "$OUT/dense_rows_${v}_$r.json" > "$OUT/dense_rows_${v}_$r.log" 2>&1
    sum+=("bench_dense --rows-only $v round $r rc=$? $(grep rms_norm_bwd_dw "$OUT/dense_rows_${v}_$r.log" | awk '{print $2, $5, $6}' | tr '\n' ' ')")
  done
done
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
tar czf /tmp/rows_dw_logs.tgz -C "$OUT" . && mv /tmp/rows_dw_logs.tgz "$OUT/logs.tgz" &&
  find "$OUT" -type f ! -name logs.tgz ! -name summary.txt ! -name 'pytest_cuda.log' -delete
