#!/usr/bin/env bash
# One device call: what makes the GEMM's 2-CTA cluster entries slower than
# their unclustered twins. A library built with -DSAMEBITS_GEMM_PROBE (branch gemm-probe)
# (and the research entries) takes SAMEBITS_GEMM_CLUSTER_PROBE bits that
# switch parts of the cluster protocol off (1 unicast B, 2 local stage
# release, 4 no cluster barrier, 8 B as one box) and writes a per-CTA trace
# (SM, start / first stage / mainloop / end times, ring waits).
# gemm_cluster_probe.py times every configuration beside cuBLAS (clean L2,
# CUDA-graph replays, outputs bitwise equal to the default's), then traces
# each once; gemm_trace_summary.py tabulates the traces.
set -uo pipefail
CARRY=${CARRY:-.carry/probe}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.md" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench
SH=${SHAPES:-192x4096x4096,384x4096x4096,512x4096x14336}
TL=${TILES:-128x128,128x128~,128x128m2,128x128m2%1,128x128m2%3,128x128m2%7,128x128m2%15,128x96}
timeout 400 python3 bench/gemm_cluster_probe.py --out "$OUT/probe.json" --configs default --tiles "$TL" \
  --shapes "$SH" --reps ${REPS:-15} --trace "$OUT/trace" > "$OUT/probe.log" 2>&1
echo "probe rc=$?" | tee -a "$OUT/summary.md"
cat "$OUT/probe.log" | tee -a "$OUT/summary.md"
python3 bench/gemm_trace_summary.py "$OUT/trace" | tee -a "$OUT/summary.md"
# Part 2 (DECODE=1): decode's pass-1 schedules at large shapes, main's
# library (DCARRY): the default rule (two CTAs an SM, one K and one V
# stage each, at >= 160 CTAs) against main's one-CTA deep ring forced
# (SAMEBITS_DECODE_VARIANT=0), beside cuDNN / flash.
if [ "${DECODE:-1}" = 1 ]; then
  D=$PWD/${DCARRY:-.carry/final28c}
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "$D/libsamebits.so.xz" "$D/libsamebits.so"
  for v in auto 0; do
    mkdir -p "$OUT/decode_v$v"
    SAMEBITS_DECODE_VARIANT=$v SAMEBITS_LIBRARY=$D/libsamebits.so timeout 200 python3 bench/bench_decode.py \
      --out "$OUT/decode_v$v" --graph --captures 2 --reps 15 --no-flex \
      --shapes ${DSHAPES:-1x131072,4x32768,16x16384,64x4096,256x4096,16x4096} > "$OUT/decode_v$v.log" 2>&1
    echo "decode variant $v rc=$?" | tee -a "$OUT/summary.md"
    cat "$OUT/decode_v$v"/*.md | tee -a "$OUT/summary.md"
  done
fi
