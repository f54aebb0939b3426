#!/usr/bin/env bash
# One device call: the RMSNorm dx + dw launches timed by rows_dw_probe.py
# (clean L2 and back to back, every launch checked bitwise against the
# default); then test_cuda.py and test_dense.py, and memcheck / racecheck /
# synccheck of the dw launches test at 4096 x 4096, 4100 x 3000 and
# 5000 x 4096.
# MS, NS: the probe's shapes; BEFORE, ROUNDS: see below; SAN=0 skips the
# sanitizers; TESTS=0 the tests.
CARRY=${CARRY:-.carry/dwpro}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
NEW=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench)
# BEFORE (a carried library folder): the probe also runs it, alternating
# with this library, ROUNDS times each
if [ -n "${BEFORE:-}" ]; then
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "$PWD/$BEFORE/libsamebits.so.xz" "$PWD/$BEFORE/libsamebits.so"
fi
for r in $(seq 1 ${ROUNDS:-1}); do
  for lib in new ${BEFORE:+before}; do
    L=$C/libsamebits.so; [ $lib = before ] && L=$PWD/$BEFORE/libsamebits.so
    env SAMEBITS_LIBRARY=$L PYTHONPATH=$PWD/python:$PWD/bench timeout 200 python3 bench/rows_dw_probe.py \
      --out "$OUT/dw_probe_${lib}_$r.json" --ms ${MS:-4096,8192,16384,32768} --ns ${NS:-4096} > "$OUT/dw_probe_${lib}_$r.log" 2>&1
    sum+=("dw probe $lib round $r rc=$? $(tail -1 "$OUT/dw_probe_${lib}_$r.log")")
  done
done
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
# the device returns at most 8 files: everything in one archive
(cd "$OUT" && tar czf results.tgz --exclude results.tgz --exclude summary.txt * && find . -type f ! -name results.tgz ! -name summary.txt -delete)
