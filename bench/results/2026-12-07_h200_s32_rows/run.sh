#!/usr/bin/env bash
# One device call (thirty-second session): the fused RMSNorm dx + dw kernel
# with one barrier a row (two alternating buffers of warp totals), its copies
# addressed by running pointers and shared-space offsets, and the weight held
# as floats (CARRY), against the library before (OLD): row-op bits of both
# (rows_bits_dump, also with the fused path forced at every M), test_cuda.py
# + test_dense.py, racecheck and synccheck of the dw launches test, then
# rows_dw_probe.py (--lead) alternated ROUNDS times.
set -uo pipefail
CARRY=${CARRY:-.carry/s32rows}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/s32new}
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
printf '%s\n' "${sum[@]}"
if [ "${TESTS:-1}" = 1 ]; then
  "${NEW[@]}" timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py -q -p no:cacheprovider > "$OUT/pytest_cuda.log" 2>&1
  sum+=("pytest test_cuda + test_dense rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
  tail -1 "$OUT/pytest_cuda.log"
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in racecheck synccheck memcheck; do
    "${NEW[@]}" timeout 200 "$CS" --tool $tool --target-processes all python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider \
      -k "inline_fold and 4096" > "$OUT/sanitizer_$tool.log" 2>&1
    sum+=("$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$OUT/sanitizer_$tool.log" | tr '\n' ' ')")
  done
fi
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in old new; do
    L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
    SAMEBITS_LIBRARY=$L PYTHONPATH=$PWD/python:$PWD/bench timeout 200 python3 bench/rows_dw_probe.py --lead \
      --out "$OUT/dw_${v}_$r.json" --ms ${MS:-4096,8192,16384,32768} > "$OUT/dw_${v}_$r.log" 2>&1
    sum+=("rows_dw_probe $v round $r rc=$?")
    echo "== $v round $r"; cat "$OUT/dw_${v}_$r.log"
  done
done
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
tar czf /tmp/rows_logs.tgz -C "$OUT" . && mv /tmp/rows_logs.tgz "$OUT/logs.tgz" &&
  find "$OUT" -type f ! -name logs.tgz ! -name summary.txt ! -name 'pytest_cuda.log' -delete
