#!/usr/bin/env bash
# One device call (second of the twenty-ninth session's GEMM probe): the
# probe library (-DSAMEBITS_GEMM_PROBE (branch gemm-probe), research entries) at issue 6's
# points below 0.95x cuBLAS. Configurations (gemm_cluster_probe.py --tiles
# syntax): the rule's pick plain, as fake 2-CTA clusters (~: consecutive CTAs
# placed on one TPC), with the scheduler's group of m tiles set (^G), and
# the cluster entries multicasting B whole, the two CTAs taking k tiles in
# turn (%16). Every output bitwise equal to the default's (FAILS: []).
set -uo pipefail
CARRY=${CARRY:-.carry/probe}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.md" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench
SH=${SHAPES:-192x4096x4096,384x4096x4096,640x4096x4096,1280x4096x4096,384x14336x4096,512x4096x14336,1152x14336x4096}
TL=${TILES:-rule~,rule~^1,rule~^2,rule^2,128x128,128x128~,128x128m2,128x128m2%16,128x256m2%16}
for r in $(seq 1 ${ROUNDS:-1}); do
  timeout ${LIMIT:-500} python3 bench/gemm_cluster_probe.py --out "$OUT/probe_r$r.json" --configs default --tiles "$TL" \
    --shapes "$SH" --reps ${REPS:-15} --captures ${CAPTURES:-1} ${TRACE:+--trace "$OUT/trace"} > "$OUT/probe_r$r.log" 2>&1
  echo "probe round $r rc=$?" | tee -a "$OUT/summary.md"
  cat "$OUT/probe_r$r.log" | tee -a "$OUT/summary.md"
done
if [ -n "${TRACE:-}" ]; then python3 bench/gemm_trace_summary.py "$OUT/trace" | tee -a "$OUT/summary.md"; fi
