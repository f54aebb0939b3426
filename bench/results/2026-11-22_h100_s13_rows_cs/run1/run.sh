#!/usr/bin/env bash
# device: rms_norm forward cache-streaming x and y (branch rows-cs, SAMEBITS_RMSNORM_CS=0/1/2 in one library): bits + speed
set -uo pipefail
sum=()
C=$PWD/.carry/cs
FINAL=$OUT; OUT=$(mktemp -d); trap 'tar czf $FINAL/all.tgz -C $OUT . ; printf "%s\n" "${sum[@]}" > $FINAL/summary.txt' EXIT
xz -d -k -f $C/libsamebits.so.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
sha256sum $C/libsamebits.so > $OUT/lib_sha256.txt
cp $0 $OUT/run.sh
P=bench/results/2026-11-22_h100_s13_rows_cs/rows_cs_probe.py
for v in 1 2; do
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench timeout 200 python3 $P --variant $v --alternate 3 --out $OUT/probe_v$v.json > $OUT/probe_v$v.log 2>&1
  sum+=("probe cs=$v rc=$? $(tail -1 $OUT/probe_v$v.log)")
done
printf '%s\n' "${sum[@]}"
