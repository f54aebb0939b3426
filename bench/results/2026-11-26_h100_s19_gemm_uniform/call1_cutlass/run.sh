#!/usr/bin/env bash
# One device call: CUTLASS probe GEMMs beside samebits and cuBLAS
# (bench/cutlass_probe/probe.py). CARRY holds libsamebits.so.xz and
# libsbcutlass.so.
CARRY=${CARRY:-.carry/cutl}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout ${T:-400} python3 bench/cutlass_probe/probe.py \
  --lib "$C/libsbcutlass.so" --out "$OUT/probe.json" ${ARGS:-} > "$OUT/probe.log" 2>&1
echo "probe rc=$?"; cat "$OUT/probe.log"
