#!/usr/bin/env bash
# One device call (thirty-third session): the decode combine runs its code
# once dry before griddepcontrol.wait (p.combine_warm; CARRY, with the
# decode test binary). Checks: the decode suite under the rule, --quick
# with the warm-up off (SAMEBITS_DECODE_COMBINE_WARM=0) and with 2 and 4
# column parts, --quick under the rule's variants, memcheck / racecheck /
# synccheck --small, the Python decode tests. Then
# bench/predecessor_probe.py (inputs kept alive) with the warm-up off
# (nowarm) and the fold forced (fold) beside the default, ROUNDS rounds.
set -uo pipefail
CARRY=${CARRY:-.carry/s33warm}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$C/test_attention_decode_sm90
probe() {
  r=$1
  PYTHONPATH=$PWD/python:$PWD/bench SAMEBITS_LIBRARY=$C/libsamebits.so timeout 150 python3 bench/predecessor_probe.py --out "$OUT/warm_r$r.json" --reps 11 \
    --variants "nowarm:SAMEBITS_DECODE_COMBINE_WARM=0,fold:SAMEBITS_DECODE_FOLD=force" \
    --shapes ${SHAPES:-b1x2048,b1x4096,b2x2048,b1x8192,b2x4096,b3x4096,b1x16384,b1x32768,b8x2048,b1x131072,b16x4096,b4x1024} \
    > "$OUT/warm_r$r.log" 2>&1
  echo "== round $r rc=$?"; cat "$OUT/warm_r$r.log"
}
probe 1
chmod +x "$T"
if [ "${CHECKS:-1}" = 1 ]; then
  LD_LIBRARY_PATH=$C timeout 120 "$T" > "$OUT/rule_full.log" 2>&1
  sum+=("decode suite, rule rc=$? $(count "$OUT/rule_full.log")")
  SAMEBITS_DECODE_COMBINE_WARM=0 LD_LIBRARY_PATH=$C timeout 60 "$T" --quick > "$OUT/nowarm_quick.log" 2>&1
  sum+=("decode --quick, warm-up off rc=$? $(count "$OUT/nowarm_quick.log")")
  for n in 4; do
    SAMEBITS_DECODE_COMBINE_PARTS=$n LD_LIBRARY_PATH=$C timeout 60 "$T" --quick > "$OUT/parts${n}_quick.log" 2>&1
    sum+=("decode --quick, $n parts forced rc=$? $(count "$OUT/parts${n}_quick.log")")
  done
  LD_LIBRARY_PATH=$C timeout 80 "$T" --quick --variants auto,0,4,0f,4c > "$OUT/rule_quick.log" 2>&1
  sum+=("decode --quick auto,0,4,0f,4c rc=$? $(count "$OUT/rule_quick.log")")
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in memcheck racecheck synccheck; do
    LD_LIBRARY_PATH=$C timeout 60 "$CS" --tool $tool "$T" --small > "$OUT/san_$tool.log" 2>&1
    sum+=("$tool --small rc=$? $(count "$OUT/san_$tool.log") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_$tool.log" | tr '\n' ' ')")
  done
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q \
    -p no:cacheprovider -k "decode or kvcache" > "$OUT/pytest.log" 2>&1
  sum+=("pytest test_cuda -k decode or kvcache rc=$? $(tail -1 "$OUT/pytest.log")")
  printf '%s\n' "${sum[@]}"
  grep -h '^\[FAIL\]' "$OUT"/*.log | head -5
fi
[ "$SECONDS" -lt 330 ] && probe 2
printf '%s\n' "${sum[@]}" > "$OUT/summary.txt"
cd "$OUT" && tar czf logs.tgz --exclude logs.tgz --exclude summary.txt --exclude 'warm_r*.json' . 
find "$OUT" -maxdepth 1 -type f -name '*.log' -delete
