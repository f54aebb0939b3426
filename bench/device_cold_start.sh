#!/usr/bin/env bash
# One device call (prepared in the thirty-second session, not yet run):
# which part of samebits' decode pays the cold start that
# bench/predecessor_probe.py found (1.6-3.0 us at 1 x 4k-32k and 2 x 2k when
# the call before the L2 flush was another implementation's)? The pairs of
# the probe with samebits' call also captured without programmatic
# dependent launch of the combine (nopdl), with pass 1's splits folded
# inside a cluster (fold: no combine kernel) and with every split walked in
# one CTA (walk: no combine kernel), at the shapes that pay it and two that
# do not. Then the same for the GEMM at 384 and 1280 x 4096 x 4096, with
# the direct epilogue forced (direct) and the staged one's last columns
# stored directly (remdirect). ROUNDS rounds.
set -uo pipefail
CARRY=${CARRY:-.carry/final32}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench SAMEBITS_LIBRARY=$C/libsamebits.so
V="nopdl:SAMEBITS_DECODE_PDL=0,fold:SAMEBITS_DECODE_FOLD=force,walk:SAMEBITS_DECODE_WALK=force"
for r in $(seq 1 "${ROUNDS:-2}"); do
  timeout 250 python3 bench/predecessor_probe.py --out "$OUT/cold_r$r.json" --reps 11 --variants "$V" \
    --shapes ${SHAPES:-b1x4096,b2x2048,b1x32768,b1x1024,b16x4096} > "$OUT/cold_r$r.log" 2>&1
  echo "== round $r rc=$?"; cat "$OUT/cold_r$r.log"
  timeout 200 python3 bench/predecessor_probe.py --out "$OUT/cold_gemm_r$r.json" --reps 11 \
    --variants "direct:SAMEBITS_GEMM_EPILOGUE=direct,remdirect:SAMEBITS_GEMM_EPILOGUE=staged-rem-direct" \
    --shapes ${GEMM_SHAPES:-384x4096x4096,1280x4096x4096} > "$OUT/cold_gemm_r$r.log" 2>&1
  echo "== GEMM round $r rc=$?"; cat "$OUT/cold_gemm_r$r.log"
done
