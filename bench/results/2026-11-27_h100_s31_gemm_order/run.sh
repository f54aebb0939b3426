#!/usr/bin/env bash
# One device call (thirty-first session): does a configuration's place in
# gemm_cluster_probe.py's round (configurations timed in turn after the
# same flush) move its time? CARRY's library, configurations repeated under
# a second name that changes nothing (^8: SAMEBITS_GEMM_GROUP_M=8, the
# default group), in two orders, ROUNDS rounds.
set -uo pipefail
CARRY=${CARRY:-.carry/ring2}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench SAMEBITS_LIBRARY=$C/libsamebits.so
SH=${SHAPES:-384x4096x4096,576x4096x4096,640x4096x4096,1280x4096x4096,384x14336x4096,448x11008x4096}
for r in $(seq 1 ${ROUNDS:-2}); do
  for order in ${ORDERS:-"rule@double,rule@rem-direct,rule@double^8,rule^8,rule@rem-direct^8" "rule@rem-direct,rule@double,rule@rem-direct^8,rule^8,rule@double^8"}; do
    tag=$(echo "$order" | cut -c1-12 | tr '@^,' '___')
    python3 bench/gemm_cluster_probe.py --out "$OUT/o_${r}_$tag.json" --configs default --tiles "$order" \
      --shapes "$SH" --reps 15 --captures 2 > "$OUT/o_${r}_$tag.log" 2>&1
    echo "== round $r order default,$order"; cat "$OUT/o_${r}_$tag.log"
  done
done 2>&1 | tee "$OUT/order.txt"
