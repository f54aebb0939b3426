#!/usr/bin/env bash
# One device call (thirty-first session): issue 6's 76-point table again,
# main's library before the session (OLD) against the session's (CARRY),
# with the probe's new lead configuration (a copy of the default captured
# and timed first, so the reported default no longer takes the first
# place), ROUNDS rounds alternated; first a check that the lead takes the
# bias (default against an unchanged copy, rule^8, listed after it).
# Since the thirty-second session the probe's lead is opt-in (PROBE_ARGS=--lead
# and --lead below for this call's form): what it took away was not a
# first-place bias but the predecessor effect of bench/predecessor_probe.py.
set -uo pipefail
CARRY=${CARRY:-.carry/final31}
OLD=${OLD:-.carry/parts2}
export CARRY OLD
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench
SAMEBITS_LIBRARY=$C/libsamebits.so python3 bench/gemm_cluster_probe.py --out "$OUT/lead_check.json" --configs default --lead \
  --tiles 'rule^8,rule@rem-direct' --shapes 384x4096x4096,576x4096x4096,1280x4096x4096,384x14336x4096 --reps 15 \
  --captures 2 > "$OUT/lead_check.log" 2>&1
echo "== lead check"; cat "$OUT/lead_check.log"
mkdir -p "$OUT/u"
OUT=$OUT/u ROUNDS=${ROUNDS:-2} CAPTURES=${CAPTURES:-2} bash bench/gemm_uniform_device.sh > "$OUT/u/stdout.txt" 2>&1
grep -E "bits|pytest|FAILS|below|rc=" "$OUT/u/stdout.txt"
python3 - "$OUT/u/table.txt" <<'PY'
import sys
for line in open(sys.argv[1]):
    if " old " in line and " new " in line:
        parts = line.split()
        o = [float(x) for x in parts[parts.index("old") + 1:parts.index("new")]]
        n = [float(x) for x in parts[parts.index("new") + 1:]]
        if min(o) < 0.95 or min(n) < 0.95:
            print(line.rstrip())
PY
tail -1 "$OUT/u/table.txt"
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
"$CUOBJ" --dump-resource-usage $C/libsamebits.so 2>/dev/null | grep -A1 gemm_tma_wgmma | grep -B1 "STACK:[1-9]" | grep -o "Function [^:]*" | c++filt | cut -c1-160
cd "$OUT" && tar czf u.tgz u && rm -rf u
