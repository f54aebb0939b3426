#!/usr/bin/env bash
# One device call: decode's walk of every split in one CTA
# (DecodeConfig::kWalk, SAMEBITS_DECODE_WALK). The decode suite with the
# walk forced wherever a tile has two or more splits (every decode row
# equal to the forward's, bitwise), --quick under the rule and each
# schedule, memcheck / racecheck --small with the walk forced, the Python
# CUDA tests; then bench_decode.py --graph with the walk off
# (SAMEBITS_DECODE_WALK=0: main's schedules) and under the rule, alternated,
# ROUNDS rounds. CARRY: libsamebits.so.xz + test_attention_decode_sm90.
set -uo pipefail
CARRY=${CARRY:-.carry/walk}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$C/test_attention_decode_sm90
chmod +x "$T"
if [ "${CHECKS:-1}" = 1 ]; then
  SAMEBITS_DECODE_WALK=force LD_LIBRARY_PATH=$C timeout 150 "$T" > "$OUT/walk_full.log" 2>&1
  sum+=("decode full suite, walk forced rc=$? $(count "$OUT/walk_full.log")")
  grep '^\[FAIL\]' "$OUT/walk_full.log" | head -5
  SAMEBITS_DECODE_WALK=force LD_LIBRARY_PATH=$C timeout 150 "$T" --quick --variants auto,0,4 > "$OUT/walk_quick.log" 2>&1
  sum+=("decode --quick auto,0,4, walk forced rc=$? $(count "$OUT/walk_quick.log")")
  LD_LIBRARY_PATH=$C timeout 150 "$T" --quick --variants auto,0,4,0f,4c > "$OUT/rule_quick.log" 2>&1
  sum+=("decode --quick auto,0,4,0f,4c, rule rc=$? $(count "$OUT/rule_quick.log")")
  for tool in memcheck racecheck; do
    SAMEBITS_DECODE_WALK=force LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool $tool "$T" --small > "$OUT/walk_$tool.log" 2>&1
    sum+=("walk forced $tool --small rc=$? $(count "$OUT/walk_$tool.log") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/walk_$tool.log" | tr '\n' ' ')")
  done
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
  sum+=("pytest test_cuda rc=$? $(tail -1 "$OUT/pytest.log")")
  printf '%s\n' "${sum[@]}"
fi
SH=${SHAPES:-64x4096,256x4096,64x16384,64x32768,256x16384,64x2048,128x2048}
for r in $(seq 1 ${ROUNDS:-2}); do
  for wk in 0 1; do
    mkdir -p "$OUT/r$r/walk$wk"
    SAMEBITS_DECODE_WALK=$wk SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench timeout 200 \
      python3 bench/bench_decode.py --out "$OUT/r$r/walk$wk" --graph --captures 2 --reps 15 --no-flex \
      --shapes "$SH" > "$OUT/r$r/walk$wk.log" 2>&1
    sum+=("bench round $r walk=$wk rc=$?")
  done
done
python3 bench/decode_rounds_table.py "$OUT" "walk0 = SAMEBITS_DECODE_WALK=0, walk1 = the rule" 'walk*' | tee "$OUT/table.md"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
