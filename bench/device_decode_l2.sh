#!/usr/bin/env bash
# One device call (thirtieth session): decode with the K, V boxes of the
# block SAMEBITS_DECODE_L2_AHEAD blocks ahead of each request prefetched
# into the L2 (cp.async.bulk.prefetch.tensor; loads only, FREE). Checks:
# the decode suite and --quick under each setting (every row bitwise equal
# to the forward's), memcheck --small; then bench_decode.py --graph with
# 0 (none), 1 and 2 blocks ahead, alternated, ROUNDS rounds.
# CARRY: libsamebits.so.xz; TEST: a folder with test_attention_decode_sm90.
set -uo pipefail
CARRY=${CARRY:-.carry/l2}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$OUT/table.md" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$PWD/${TEST:-.carry/rev29}/test_attention_decode_sm90
chmod +x "$T"
if [ "${CHECKS:-1}" = 1 ]; then
  SAMEBITS_DECODE_L2_AHEAD=2 LD_LIBRARY_PATH=$C timeout 150 "$T" > "$OUT/l2_full.log" 2>&1
  sum+=("decode full suite, L2 ahead 2 rc=$? $(count "$OUT/l2_full.log")")
  grep '^\[FAIL\]' "$OUT/l2_full.log" | head -5
  for a in 1 2; do
    SAMEBITS_DECODE_L2_AHEAD=$a LD_LIBRARY_PATH=$C timeout 150 "$T" --quick --variants auto,0,4,0f,4c > "$OUT/l2_quick_$a.log" 2>&1
    sum+=("decode --quick auto,0,4,0f,4c, L2 ahead $a rc=$? $(count "$OUT/l2_quick_$a.log")")
  done
  SAMEBITS_DECODE_WALK=force SAMEBITS_DECODE_L2_AHEAD=1 LD_LIBRARY_PATH=$C timeout 150 "$T" --quick --variants auto,0,4 > "$OUT/l2_walk_quick.log" 2>&1
  sum+=("decode --quick, walk forced, L2 ahead 1 rc=$? $(count "$OUT/l2_walk_quick.log")")
  SAMEBITS_DECODE_L2_AHEAD=2 LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool memcheck "$T" --small > "$OUT/l2_memcheck.log" 2>&1
  sum+=("L2 ahead 2 memcheck --small rc=$? $(count "$OUT/l2_memcheck.log") $(grep -E 'ERROR SUMMARY' "$OUT/l2_memcheck.log" | tr '\n' ' ')")
  printf '%s\n' "${sum[@]}"
fi
SH=${SHAPES:-64x4096,256x4096,16x16384,64x16384,1x131072,4x32768,1x32768,1x4096,4x4096,16x4096,8x8192}
for r in $(seq 1 ${ROUNDS:-2}); do
  for a in ${AHEADS:-0 1 2}; do
    mkdir -p "$OUT/r$r/a$a"
    SAMEBITS_DECODE_L2_AHEAD=$a SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench timeout 200 \
      python3 bench/bench_decode.py --out "$OUT/r$r/a$a" --graph --captures 2 --reps 15 --no-flex \
      --shapes "$SH" > "$OUT/r$r/a$a.log" 2>&1
    sum+=("bench round $r L2 ahead $a rc=$?")
  done
done
python3 bench/decode_rounds_table.py "$OUT" "aN = SAMEBITS_DECODE_L2_AHEAD=N" 'a*' | tee "$OUT/table.md"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
