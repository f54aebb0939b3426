#!/usr/bin/env bash
# One device call (thirty-first session): the staged epilogue with a CTA's
# last tile staged in the ring's A stages and a fragment's last WN % 64
# columns through their own TMA store (CARRY), in one process against its
# own measurement forms (rule@double: every tile through the two buffers;
# rule@rem-direct: that with those columns from the accumulators, main's
# epilogue before the change) at issue 6's low points, two rounds; then
# bench/gemm_uniform_device.sh against main's library (OLD): bits, the GEMM
# checks and the 76-point table.
set -uo pipefail
CARRY=${CARRY:-.carry/ring}
OLD=${OLD:-.carry/parts2}
export CARRY OLD
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench
SH=${SHAPES:-320x4096x4096,384x4096x4096,576x4096x4096,640x4096x4096,1216x4096x4096,1280x4096x4096,384x14336x4096,448x11008x4096,1152x4096x4096,1280x12288x4096,2048x4096x4096,4096x4096x4096}
for r in 1 2; do
  SAMEBITS_LIBRARY=$C/libsamebits.so python3 bench/gemm_cluster_probe.py --out "$OUT/ab_$r.json" --configs default \
    --tiles 'rule@double,rule@rem-direct' --shapes "$SH" --reps 15 --captures 2 > "$OUT/ab_$r.log" 2>&1
  echo "== in-process round $r"; cat "$OUT/ab_$r.log"
done
mkdir -p "$OUT/u"
OUT=$OUT/u ROUNDS=${ROUNDS:-1} CAPTURES=${CAPTURES:-2} bash bench/gemm_uniform_device.sh > "$OUT/u/stdout.txt" 2>&1
grep -E "bits|pytest|FAILS|below|rc=" "$OUT/u/stdout.txt"
grep -E "^ +(192|256|320|384|576|640|1152|1216|1280) x" "$OUT/u/table.txt"; tail -4 "$OUT/u/table.txt"
cd "$OUT" && tar czf u.tgz u && rm -rf u
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
echo "stack: $("$CUOBJ" --dump-resource-usage $C/libsamebits.so 2>/dev/null | grep -A1 gemm_tma_wgmma | grep -o 'STACK:[0-9]*' | sort | uniq -c | tr '\n' ' ')"
