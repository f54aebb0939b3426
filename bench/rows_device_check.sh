#!/usr/bin/env bash
# Row kernels on the GPU in one call (about 2.5 minutes):
#   1. bits: every row op of the new library == the old library, bitwise
#      (rows_device_check.py dump with each library, then compare), also
#      with the new library's fused RMSNorm dx + dw forced at every M;
#   2. row invariance, 50-run hashes and accuracy of the new library
#      (bench_dense.py --rows-only);
#   3. speed of the row ops beside torch and a device copy, new and old
#      library on the same GPU;
#   4. rows_sweep.py: RMSNorm forward / backward over N = 1k..16k, the new
#      launch shapes against SAMEBITS_ROWS_LEGACY=1 in one process (bits and
#      speed), and the fused dw's 50-run hash, forced-path equality and
#      accuracy against fp64. ROWS_SKIP_SWEEP=1 skips it.
# Run from the repository root, with the carried directory (default
# .carry/rows) holding libsamebits.so (new), old/libsamebits.so (old),
# python/ and bench/ (this script and the two Python scripts):
#   bash .carry/rows/bench/rows_device_check.sh
# Results: $OUT/rows_*.json and $OUT/rows_*.log. Exit status 0 iff every
# check passed. ROWS_SKIP_OLD_SPEED=1 skips timing the old library.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CARRY=${ROWS_CARRY:-$PWD/.carry/rows}
NEW=${ROWS_NEW_LIB:-$CARRY/libsamebits.so}
OLD=${ROWS_OLD_LIB:-$CARRY/old/libsamebits.so}
PY=$CARRY/python
[ -d "$PY" ] || PY=$PWD/python
OUT=${OUT:-$PWD/rows_out}
mkdir -p "$OUT"
PYTHON=${PYTHON:-python}
rc=0
step() {  # step NAME LIB ARGS...: one Python run, its log under $OUT
  local name=$1 lib=$2
  shift 2
  local t0=$SECONDS
  SAMEBITS_LIBRARY=$lib PYTHONPATH=$PY "$PYTHON" "$@" > "$OUT/rows_$name.log" 2>&1
  local r=$?
  echo "[$name] rc=$r $((SECONDS - t0)) s"
  tail -n 4 "$OUT/rows_$name.log"
  [ $r -eq 0 ] || rc=1
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/rows_gpu.txt" 2>&1
step bits_old "$OLD" "$HERE/rows_device_check.py" dump --out "$OUT/rows_bits_old.json"
step bits_new "$NEW" "$HERE/rows_device_check.py" dump --out "$OUT/rows_bits_new.json"
step bits_compare "$NEW" "$HERE/rows_device_check.py" compare "$OUT/rows_bits_old.json" "$OUT/rows_bits_new.json" \
  --out "$OUT/rows_bits_compare.json"
# the new library with RMSNorm backward's fused dx + dw forced at every M
# (by default it runs from 1024 rows): its bits must equal the old ones too
SAMEBITS_RMSNORM_DW_PATH=fused step bits_new_fused "$NEW" "$HERE/rows_device_check.py" dump \
  --out "$OUT/rows_bits_new_fused.json"
step bits_compare_fused "$NEW" "$HERE/rows_device_check.py" compare "$OUT/rows_bits_old.json" \
  "$OUT/rows_bits_new_fused.json" --out "$OUT/rows_bits_compare_fused.json"
step dense_new "$NEW" "$HERE/bench_dense.py" --rows-only --out "$OUT/rows_dense_new.json"
grep -E "^(rms|soft|log|add|sum)" "$OUT/rows_dense_new.log"
if [ "${ROWS_SKIP_OLD_SPEED:-0}" != 1 ]; then  # the old library's speed, same GPU (about 15 s)
  step dense_old "$OLD" "$HERE/bench_dense.py" --rows-only --skip-checks --out "$OUT/rows_dense_old.json"
  grep -E "^(rms|soft|log|add|sum)" "$OUT/rows_dense_old.log"
fi
if [ -f "$HERE/rows_sweep.py" ] && [ "${ROWS_SKIP_SWEEP:-0}" != 1 ]; then  # N sweep, new vs legacy shapes (about 40 s)
  step sweep "$NEW" "$HERE/rows_sweep.py" --out "$OUT/rows_sweep.json"
  grep -E "^(rms|add)|^\[dw\]" "$OUT/rows_sweep.log"
fi
echo "rows_device_check: rc=$rc"
exit $rc
