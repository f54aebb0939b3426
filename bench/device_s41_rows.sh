#!/usr/bin/env bash
# One device call (forty-first session): the fused RMSNorm dx + dw kernel
# with its dw terms added before the row sum and, at the last step, the
# chunk partial stored and the grid barrier arrived at before that step's
# row sums and dx (barrier_arrive / barrier_wait), so the barrier's latency
# runs under them (CARRY, default .carry/s41rows; SAMEBITS_RMSNORM_DW_EARLY=0
# gives the old order in the same library), against OLD (main's library,
# default .carry/s41w112). Timing first (the probe checks every launch
# bitwise against the default but the diag ones), then the checks: row-op bits of both (rows_bits_dump,
# default and fused path forced), pytest -k rms, racecheck / synccheck /
# memcheck of the inline-fold test. Speed: rows_dw_probe.py at N = 8192 and
# 4096 with the old order and the measurement knobs (SAMEBITS_RMSNORM_DIAG:
# 1 no fold, 2 no grid barrier and no fold, 4 no dx stores, 8 no dw terms;
# wrong results, timing only) beside the default, ROUNDS times, the
# libraries alternated. ~6 min. carry [CARRY, OLD].
set -uo pipefail
CARRY=${CARRY:-.carry/s41rows}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/s41w112}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
sha256sum "$C/libsamebits.so" "$O/libsamebits.so" > "$OUT/lib_sha256.txt"
cp "$0" "$OUT/run.sh"
NEW=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench)
X=late:SAMEBITS_RMSNORM_DW_EARLY=0,diag1:SAMEBITS_RMSNORM_DIAG=1,diag2:SAMEBITS_RMSNORM_DIAG=2,diag4:SAMEBITS_RMSNORM_DIAG=4,diag8:SAMEBITS_RMSNORM_DIAG=8,diag6:SAMEBITS_RMSNORM_DIAG=6
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in old new; do
    L=$C/libsamebits.so; E=(--extra "$X"); [ $v = old ] && L=$O/libsamebits.so && E=()
    SAMEBITS_LIBRARY=$L PYTHONPATH=$PWD/python:$PWD/bench timeout 200 python3 bench/rows_dw_probe.py \
      --out "$OUT/dw_${v}_$r.json" --ms ${MS:-4096,8192} --ns 8192,4096 "${E[@]}" > "$OUT/dw_${v}_$r.log" 2>&1
    sum+=("rows_dw_probe $v round $r rc=$?")
    echo "== $v round $r"; cat "$OUT/dw_${v}_$r.log"
  done
done
if [ "${CHECKS:-1}" = 1 ]; then
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
  printf '%s\n' "${sum[@]: -4}"
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
tar czf /tmp/rows_logs.tgz -C "$OUT" . && mv /tmp/rows_logs.tgz "$OUT/logs.tgz" &&
  find "$OUT" -type f ! -name logs.tgz ! -name summary.txt ! -name 'pytest_cuda.log' -delete
