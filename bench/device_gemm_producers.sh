#!/usr/bin/env bash
# One device call (thirtieth session): the wgmma GEMM entries with their TMA
# issue split between two producer threads (SAMEBITS_GEMM_PRODUCERS=2: lane
# 0 of warp 0 loads A, lane 0 of warp 1 loads B) against one producer, at
# issue 6's points and around them; every output bitwise equal to the
# default's (FAILS: []); then the dense tests with two producers.
# gemm_cluster_probe.py --tiles syntax: 'rule' the default pick, '!' two
# producers.
# Needs a library built with bench/results/2026-11-27_h100_s30_gemm_producers/
# two_producers.patch (SAMEBITS_GEMM_PRODUCERS and the probe's '!'): the
# change was measured and not kept. (Call 1 ran the first form, where '!'
# meant two producers; the patch is the later, templated form: '!' = one.)
set -uo pipefail
CARRY=${CARRY:-.carry/prod}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.md" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench
SH=${SHAPES:-192x4096x4096,256x4096x4096,384x4096x4096,640x4096x4096,1280x4096x4096,384x14336x4096,1152x14336x4096,512x4096x14336,4096x4096x4096}
TL=${TILES:-rule!,128x128,128x128!,128x96,128x96!,128x256,128x256!}
for r in $(seq 1 ${ROUNDS:-2}); do
  timeout ${LIMIT:-400} python3 bench/gemm_cluster_probe.py --out "$OUT/probe_r$r.json" --configs default --tiles "$TL" \
    --shapes "$SH" --reps ${REPS:-15} --captures ${CAPTURES:-2} > "$OUT/probe_r$r.log" 2>&1
  echo "probe round $r rc=$?" | tee -a "$OUT/summary.md"
  cat "$OUT/probe_r$r.log" | tee -a "$OUT/summary.md"
done
if [ -n "${OLD:-}" ]; then  # the default pick in an earlier library (the runtime branch's cost)
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$OLD/libsamebits.so.xz" /tmp/old.so
  SAMEBITS_LIBRARY=/tmp/old.so timeout ${LIMIT:-400} python3 bench/gemm_cluster_probe.py --out "$OUT/probe_old.json" \
    --configs default --shapes "$SH" --reps ${REPS:-15} --captures ${CAPTURES:-2} > "$OUT/probe_old.log" 2>&1
  echo "probe old library ($OLD) rc=$?" | tee -a "$OUT/summary.md"
  cat "$OUT/probe_old.log" | tee -a "$OUT/summary.md"
fi
if [ -n "${PYTESTS:-1}" ]; then
  pip list 2>/dev/null | grep -q pytest || true
  SAMEBITS_GEMM_PRODUCERS=2 timeout ${TLIMIT:-240} python3 -m pytest -q -x tests/python/test_dense.py > "$OUT/pytest_p2.log" 2>&1
  echo "pytest test_dense.py with two producers rc=$? $(tail -1 "$OUT/pytest_p2.log")" | tee -a "$OUT/summary.md"
fi
