#!/usr/bin/env bash
# One device call: the RMSNorm dx + dw launches timed by rows_dw_probe.py
# (clean L2 and back to back, every launch checked bitwise against the
# default); then test_cuda.py and test_dense.py, and memcheck / racecheck /
# synccheck of the dw launches test at 4096 x 4096, 4100 x 3000 and
# 5000 x 4096.
# MS, NS: the probe's shapes; SAN=0 skips the sanitizers; TESTS=0 the tests.
CARRY=${CARRY:-.carry/dwp}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
NEW=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench)
"${NEW[@]}" timeout 300 python3 bench/rows_dw_probe.py --out "$OUT/dw_probe.json" --ms ${MS:-4096,8192,16384,32768} \
  --ns ${NS:-4096} > "$OUT/dw_probe.log" 2>&1
sum+=("dw probe rc=$? $(tail -1 "$OUT/dw_probe.log")")
if [ "${TESTS:-1}" = 1 ]; then
  "${NEW[@]}" timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py -q -p no:cacheprovider \
    > "$OUT/pytest_cuda.log" 2>&1
  sum+=("pytest test_cuda + test_dense rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
fi
if [ "${SAN:-1}" = 1 ]; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in memcheck racecheck synccheck; do
    "${NEW[@]}" timeout 150 "$CS" --tool $tool --target-processes all python3 -m pytest tests/python/test_cuda.py -q \
      -p no:cacheprovider -k "inline_fold and (4096-4096 or 4100 or 5000)" > "$OUT/sanitizer_$tool.log" 2>&1
    sum+=("$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$OUT/sanitizer_$tool.log" | tr '\n' ' ')")
  done
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
