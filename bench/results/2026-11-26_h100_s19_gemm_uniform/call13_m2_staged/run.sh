#!/usr/bin/env bash
# One device call: CUTLASS probe GEMMs beside samebits and cuBLAS
# (bench/cutlass_probe/probe.py, PROBE_ARGS), then ncu of one shape
# (ncu.sh, DARGS) unless NCU=0. CARRY holds libsamebits.so.xz and
# libsbcutlass.so.
CARRY=${CARRY:-.carry/cutl}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout ${T:-300} python3 bench/cutlass_probe/probe.py \
  --lib "$C/libsbcutlass.so" --out "$OUT/probe.json" ${PROBE_ARGS:-} > "$OUT/probe.log" 2>&1
echo "probe rc=$?"; cat "$OUT/probe.log"
[ "${NCU:-1}" = 0 ] || bash bench/cutlass_probe/ncu.sh
