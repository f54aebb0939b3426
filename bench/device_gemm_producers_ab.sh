#!/usr/bin/env bash
# One device call (thirtieth session): three libraries alternated in rounds
# at a few GEMM shapes (gemm_cluster_probe.py, clean L2, one process per
# library and round): main's (OLD), the first two-producer build (PROD, its
# two-producer path by SAMEBITS_GEMM_PRODUCERS=2, its default one producer
# with the role branch in the k loop) and the templated one (CARRY, two
# producers by default, 'rule!' one).
# Needs a library built with bench/results/2026-11-27_h100_s30_gemm_producers/
# two_producers.patch (SAMEBITS_GEMM_PRODUCERS and the probe's '!'): the
# change was measured and not kept.
set -uo pipefail
CARRY=${CARRY:-.carry/prod2}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
unxz() { python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$1/libsamebits.so.xz" "$2"; }
unxz "${OLD:-.carry/rev29}" /tmp/old.so
unxz "${PROD:-.carry/prod}" /tmp/prod.so
export PYTHONPATH=$PWD/python:$PWD/bench
# the probe clears its knobs before each configuration: a copy that keeps
# SAMEBITS_GEMM_PRODUCERS from the environment
sed 's/, "SAMEBITS_GEMM_PRODUCERS")/)/' bench/gemm_cluster_probe.py > /tmp/probe_keep.py
grep -c PRODUCERS /tmp/probe_keep.py
SH=${SHAPES:-192x4096x4096,384x4096x4096,640x4096x4096,1280x4096x4096}
for r in $(seq 1 ${ROUNDS:-3}); do
  SAMEBITS_LIBRARY=/tmp/old.so python3 bench/gemm_cluster_probe.py --out "$OUT/old_$r.json" --configs default --shapes "$SH" --reps 11 --captures 2 > "$OUT/old_$r.log" 2>&1
  SAMEBITS_GEMM_PRODUCERS=2 SAMEBITS_LIBRARY=/tmp/prod.so python3 /tmp/probe_keep.py --out "$OUT/prod_$r.json" --configs default --shapes "$SH" --reps 11 --captures 2 > "$OUT/prod_$r.log" 2>&1
  SAMEBITS_LIBRARY=$C/libsamebits.so python3 bench/gemm_cluster_probe.py --out "$OUT/new_$r.json" --configs default --tiles 'rule!' --shapes "$SH" --reps 11 --captures 2 > "$OUT/new_$r.log" 2>&1
  for v in old prod new; do echo "== $v round $r"; grep -v FAILS "$OUT/${v}_$r.log"; done
done
