#!/usr/bin/env bash
# One device call (thirty-first session): rows_dw_probe.py (RMSNorm dx + dw
# against the copy that sets the bar) without and with --lead (a second copy
# timed first, so the reference copy is no longer first in each round),
# alternated twice.
set -uo pipefail
CARRY=${CARRY:-.carry/final31}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench SAMEBITS_LIBRARY=$C/libsamebits.so
for r in 1 2; do
  for lead in "" "--lead"; do
    f="$OUT/rows_r$r${lead:+_lead}"
    timeout 200 python3 bench/rows_dw_probe.py --out "$f.json" --ms 4096,8192,16384 $lead > "$f.log" 2>&1
    echo "== round $r ${lead:-no lead}"; cat "$f.log"
  done
done
cd "$OUT" && tar czf rows.tgz rows_r* && rm -f rows_r*
