#!/usr/bin/env bash
# One device call (thirtieth session): the decode combine with each row's
# columns cut into 2 or 4 CTAs (SAMEBITS_DECODE_COMBINE_PARTS; the rule cuts
# rows of >= 16 splits where the parts' CTAs fit one an SM). Checks: the
# decode suite with 2 and 4 parts forced (every row bitwise equal to the
# forward's), --quick under the rule, memcheck and racecheck --small with 4
# parts, the Python decode tests (FULL=1: all of test_cuda.py and verify);
# then bench_decode.py --graph with one
# part (the library before, in effect), 2 and 4 forced and under the rule,
# alternated.
# CARRY: libsamebits.so.xz; TEST: a folder with test_attention_decode_sm90.
set -uo pipefail
CARRY=${CARRY:-.carry/parts}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$OUT/table.md" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$PWD/${TEST:-.carry/rev29}/test_attention_decode_sm90
chmod +x "$T"
if [ "${CHECKS:-1}" = 1 ]; then
  for n in 4 2; do
    SAMEBITS_DECODE_COMBINE_PARTS=$n LD_LIBRARY_PATH=$C timeout 150 "$T" > "$OUT/parts${n}_full.log" 2>&1
    sum+=("decode suite, $n parts forced rc=$? $(count "$OUT/parts${n}_full.log")")
    grep '^\[FAIL\]' "$OUT/parts${n}_full.log" | head -5
  done
  LD_LIBRARY_PATH=$C timeout 150 "$T" --quick --variants auto,0,4,0f,4c > "$OUT/rule_quick.log" 2>&1
  sum+=("decode --quick auto,0,4,0f,4c, rule rc=$? $(count "$OUT/rule_quick.log")")
  for tool in memcheck racecheck; do
    SAMEBITS_DECODE_COMBINE_PARTS=4 LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool $tool "$T" --small > "$OUT/parts4_$tool.log" 2>&1
    sum+=("4 parts $tool --small rc=$? $(count "$OUT/parts4_$tool.log") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/parts4_$tool.log" | tr '\n' ' ')")
  done
  K=(-k "decode or kvcache"); [ -n "${FULL:-}" ] && K=()
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider "${K[@]}" > "$OUT/pytest.log" 2>&1
  sum+=("pytest test_cuda ${K[*]} rc=$? $(tail -1 "$OUT/pytest.log")")
  if [ -n "${FULL:-}" ]; then
    SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 90 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
    sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
  fi
  printf '%s\n' "${sum[@]}"
fi
SH=${SHAPES:-1x16384,1x32768,1x131072,2x32768,2x16384,1x8192,4x32768}
for r in $(seq 1 ${ROUNDS:-2}); do
  for n in ${SETTINGS:-1 2 4 rule}; do
    mkdir -p "$OUT/r$r/p$n"
    E=""; [ $n != rule ] && E="SAMEBITS_DECODE_COMBINE_PARTS=$n"
    env $E SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench timeout 200 \
      python3 bench/bench_decode.py --out "$OUT/r$r/p$n" --graph --captures 2 --reps 15 --no-flex \
      --shapes "$SH" > "$OUT/r$r/p$n.log" 2>&1
    sum+=("bench round $r parts=$n rc=$?")
  done
done
python3 bench/decode_rounds_table.py "$OUT" "pN = N parts forced (SAMEBITS_DECODE_COMBINE_PARTS=N; p1: the library before, in effect), prule = the rule" 'p*' | tee "$OUT/table.md"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
