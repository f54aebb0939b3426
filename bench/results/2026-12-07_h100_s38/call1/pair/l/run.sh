#!/usr/bin/env bash
# One device call (thirty-third session): the fused RMSNorm dx + dw kernel
# with two rows a step also at NV = 4 (N = 8192 bf16 / 4096 fp32; two
# stages of two rows: the same 128 KiB) (CARRY) against main's library
# (OLD): row-op bits of both (rows_bits_dump, default and fused forced),
# test_cuda.py -k rms + test_dense.py, racecheck / synccheck / memcheck of
# the dw launches test at 3000 x 8192, then rows_dw_probe.py (no lead) at
# N = 8192 and 4096 (unchanged: the control), alternated ROUNDS times.
set -uo pipefail
CARRY=${CARRY:-.carry/s33rows4}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/s33base}
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
"${NEW[@]}" timeout 240 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py -q -p no:cacheprovider -k "rms" > "$OUT/pytest_cuda.log" 2>&1
sum+=("pytest test_cuda + test_dense -k rms rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in racecheck synccheck memcheck; do
  "${NEW[@]}" timeout 120 "$CS" --tool $tool --target-processes all python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider \
    -k "inline_fold and 3000-8192" > "$OUT/sanitizer_$tool.log" 2>&1
  sum+=("$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$OUT/sanitizer_$tool.log" | tr '\n' ' ')")
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in old new; do
    L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
    SAMEBITS_LIBRARY=$L PYTHONPATH=$PWD/python:$PWD/bench timeout 150 python3 bench/rows_dw_probe.py \
      --out "$OUT/dw_${v}_$r.json" --ms ${MS:-4096,16384,32768} --ns 8192,4096 > "$OUT/dw_${v}_$r.log" 2>&1
    sum+=("rows_dw_probe $v round $r rc=$?")
    echo "== $v round $r"; cat "$OUT/dw_${v}_$r.log"
  done
done
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
tar czf /tmp/rows_logs.tgz -C "$OUT" . && mv /tmp/rows_logs.tgz "$OUT/logs.tgz" &&
  find "$OUT" -type f ! -name logs.tgz ! -name summary.txt ! -name 'pytest_cuda.log' -delete
