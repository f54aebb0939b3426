#!/usr/bin/env bash
# One device call (forty-first session): the RMSNorm dx + dw measurement
# build .carry/s41rows2 (rmsnorm_early_diag.patch plus two same-bits knobs of
# SAMEBITS_RMSNORM_DIAG: 16 dx stored streaming, 32 the inline fold two
# slices at once), rows_dw_probe twice at 4096 x 8192, 4096 x 4096 and
# 8192 x 8192 with every launch checked bitwise against the default (the
# diag-named ones drop work and are not), then pytest -k rms with the
# two-slice fold forced. carry [".carry/s41rows2"].
export CARRY=${CARRY:-.carry/s41rows2}
source bench/device_common.sh
L=$C/libsamebits.so
X=late:SAMEBITS_RMSNORM_DW_EARLY=0,fold2:SAMEBITS_RMSNORM_DIAG=32,cs:SAMEBITS_RMSNORM_DIAG=16,csfold2:SAMEBITS_RMSNORM_DIAG=48,diag2:SAMEBITS_RMSNORM_DIAG=2,diag18:SAMEBITS_RMSNORM_DIAG=18
for r in 1 2; do
  SAMEBITS_LIBRARY=$L PYTHONPATH=$PWD/python:$PWD/bench timeout 110 python3 bench/rows_dw_probe.py --out "$OUT/dw_$r.json" \
    --ms 4096,8192 --ns 8192,4096 --reps 11 --extra "$X" > "$OUT/dw_$r.log" 2>&1
  echo "== rows round $r rc=$?"; cat "$OUT/dw_$r.log"
done
SAMEBITS_RMSNORM_DIAG=32 SAMEBITS_LIBRARY=$L PYTHONPATH=$PWD/python:$PWD/bench timeout 60 python3 -m pytest \
  tests/python/test_cuda.py -q -p no:cacheprovider -k "inline_fold" > "$OUT/pytest_fold2.log" 2>&1
echo "== pytest inline_fold, two-slice fold rc=$? $(tail -1 "$OUT/pytest_fold2.log")"
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
