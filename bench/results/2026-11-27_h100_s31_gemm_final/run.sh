#!/usr/bin/env bash
# One device call (thirty-first session): the session's GEMM library
# (CARRY: the staged epilogue's last WN % 64 columns through a TMA store of
# their own) against main's before it (OLD).
# 1. In one process, the default against its old epilogue path
#    (rule@rem-direct) with a copy of each captured later (^8: the default
#    group, nothing changed), without and with --spare 2 (is the first
#    configuration's penalty the place of its output?).
# 2. bench/gemm_uniform_device.sh (FULL=1): bits against OLD, every CUDA test
#    of the Python layer, verify, the entry checks, the 76-point table
#    (--spare 2).
set -uo pipefail
CARRY=${CARRY:-.carry/final31}
OLD=${OLD:-.carry/parts2}
export CARRY OLD
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench
SH=${SHAPES:-384x4096x4096,576x4096x4096,640x4096x4096,1280x4096x4096,384x14336x4096,448x11008x4096}
for spare in 0 2; do
  SAMEBITS_LIBRARY=$C/libsamebits.so python3 bench/gemm_cluster_probe.py --out "$OUT/ab_spare$spare.json" --configs default \
    --tiles 'rule@rem-direct,rule^8,rule@rem-direct^8' --spare $spare --shapes "$SH" --reps 15 --captures 2 > "$OUT/ab_spare$spare.log" 2>&1
  echo "== in-process, --spare $spare"; cat "$OUT/ab_spare$spare.log"
done
mkdir -p "$OUT/u"
OUT=$OUT/u FULL=1 ROUNDS=${ROUNDS:-1} CAPTURES=${CAPTURES:-2} PROBE_ARGS="--spare 2" bash bench/gemm_uniform_device.sh > "$OUT/u/stdout.txt" 2>&1
grep -E "bits|pytest|FAILS|below|rc=" "$OUT/u/stdout.txt"
grep -E "^ +(192|256|320|384|512|576|640|1152|1216|1280) x" "$OUT/u/table.txt"
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
echo "stack: $("$CUOBJ" --dump-resource-usage $C/libsamebits.so 2>/dev/null | grep -A1 gemm_tma_wgmma | grep -o 'STACK:[0-9]*' | sort | uniq -c | tr '\n' ' ')"
cd "$OUT" && tar czf u.tgz u && rm -rf u
