#!/usr/bin/env bash
# One device call: the row kernels' paired output conversion (CARRY, default
# .carry/rows) against main's library (OLD, default .carry/pipe): row-op bits
# (rows_bits_dump), test_cuda.py, bench_dense --rows-only alternated
# (ROUNDS, default 2), then the backward beside its peers with both timings
# (bench_attention_backward.py; BWD_DIMS, default 64,128,256; SKIP_BWD=1 skips it).
CARRY=${CARRY:-.carry/rows}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/pipe}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
sha256sum "$C/libsamebits.so" "$O/libsamebits.so" > "$OUT/lib_sha256.txt"
cp "$0" "$OUT/run.sh"
NEW=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench)
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 150 python3 bench/rows_bits_dump.py dump "$OUT/rows_bits_$v.json" > "$OUT/rows_bits_$v.log" 2>&1
  sum+=("rows dump $v rc=$? $(tail -1 "$OUT/rows_bits_$v.log")")
done
python3 bench/rows_bits_dump.py compare "$OUT/rows_bits_old.json" "$OUT/rows_bits_new.json" > "$OUT/rows_bits_compare.log" 2>&1
sum+=("rows bits vs old library rc=$? $(tail -1 "$OUT/rows_bits_compare.log")")
"${NEW[@]}" timeout 300 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest_cuda.log" 2>&1
sum+=("pytest test_cuda rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in new old; do
    L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
    SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 150 python3 bench/bench_dense.py --rows-only --skip-checks \
      --out "$OUT/dense_rows_${v}_$r.json" > "$OUT/dense_rows_${v}_$r.log" 2>&1
    sum+=("bench_dense --rows-only $v round $r rc=$?")
  done
done
if [ "${SKIP_BWD:-0}" != 1 ]; then
  "${NEW[@]}" timeout 420 python3 bench/bench_attention_backward.py --dims "${BWD_DIMS:-64,128,256}" --out "$OUT/bwd" > "$OUT/bwd.log" 2>&1
  sum+=("bench_attention_backward rc=$?")
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
# few files come back from a call: the rest travel in one archive (written
# outside $OUT first, so that tar does not read its own output)
tar czf /tmp/rows_pack_logs.tgz -C "$OUT" . && mv /tmp/rows_pack_logs.tgz "$OUT/logs.tgz" &&
  find "$OUT" -type f ! -name logs.tgz ! -name summary.txt ! -name 'bwd.log' ! -name 'dense_rows_*.log' -delete
