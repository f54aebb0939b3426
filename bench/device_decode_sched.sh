#!/usr/bin/env bash
# One device call: decode's pass-1 schedules beside each other at the
# large shapes (no build: each setting chosen by env; all give the same
# bits, docs/decode_design.md "Variants"): the rule (schedule 4 with the
# walk at >= 128 tiles), schedule 4 with the combine (SAMEBITS_DECODE_WALK=0)
# and main's one-CTA deep ring (SAMEBITS_DECODE_VARIANT=0, walk off),
# alternated ROUNDS times. CARRY: libsamebits.so.xz.
set -uo pipefail
CARRY=${CARRY:-.carry/rev29}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/table.md" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
SH=${SHAPES:-16x4096,64x4096,256x4096,16x16384,64x16384,4x32768,1x131072}
declare -A ENVS=([rule]="" [v4_combine]="SAMEBITS_DECODE_WALK=0" [v0]="SAMEBITS_DECODE_VARIANT=0 SAMEBITS_DECODE_WALK=0")
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in rule v4_combine v0; do
    mkdir -p "$OUT/r$r/$v"
    env ${ENVS[$v]} SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench timeout 200 \
      python3 bench/bench_decode.py --out "$OUT/r$r/$v" --graph --captures 2 --reps 15 --no-flex \
      --shapes "$SH" > "$OUT/r$r/$v.log" 2>&1
    echo "round $r $v rc=$?"
  done
done
python3 bench/decode_rounds_table.py "$OUT" "rule = the rule, v4_combine = SAMEBITS_DECODE_WALK=0, v0 = SAMEBITS_DECODE_VARIANT=0 with the walk off" '*' | tee "$OUT/table.md"
