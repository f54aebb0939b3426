#!/usr/bin/env bash
# One device call: the RMSNorm dx + dw timing probe (bench/rows_dw_probe.py)
# on the carried library (CARRY, default .carry/dwo), which also times the
# experimental row orders (SAMEBITS_RMSNORM_DW_ORDER).
CARRY=${CARRY:-.carry/dwo}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench timeout 400 python3 bench/rows_dw_probe.py \
  --out "$OUT/probe.json" --ms "${MS:-4096,8192,16384}" > "$OUT/probe.log" 2>&1
echo "probe rc=$?" >> "$OUT/probe.log"
cat "$OUT/probe.log"
