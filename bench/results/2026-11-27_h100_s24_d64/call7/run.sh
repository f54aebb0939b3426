#!/usr/bin/env bash
# One device call: dK/dV tile-order variants (experiment builds, same bits)
# against the default build (CARRY). TEST="k l": the libraries whose whole
# backward test runs (hashes); LIBS="a j k l": the C bench, d 64 with the
# dK/dV form left to the rule and forced to kRaw (1) and kRawChained (2),
# and d 128 under the rule, the libraries rotated each round (ROUNDS).
# SAN="m": racecheck of those libraries on --small. Library x is
# .carry/s24x (a: CARRY).
CARRY=${CARRY:-.carry/s23ad}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$C/test_attention_bwd_sm90
lib() { [ "$1" = a ] && echo "$C" || echo "$PWD/.carry/s24$1"; }
for x in ${LIBS:-a j k l}; do
  [ "$x" = a ] && continue
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "$(lib $x)/libsamebits.so.xz" "$(lib $x)/libsamebits.so"
done
for x in ${TEST:-k l}; do
  LD_LIBRARY_PATH=$(lib $x) timeout 300 $T > "/tmp/${x}_test.log" 2>&1
  sum+=("$x test rc=$? $(count "/tmp/${x}_test.log") $(hashes "/tmp/${x}_test.log")")
  grep -v '^\[PASS\]' "/tmp/${x}_test.log" | head -40 > "$OUT/${x}_test_tail.log"
done
for x in ${SAN:-}; do  # compute-sanitizer racecheck on the --small cases
  LD_LIBRARY_PATH=$(lib $x) timeout 200 compute-sanitizer --tool racecheck $T --small > "/tmp/${x}_race.log" 2>&1
  sum+=("$x racecheck rc=$? $(count "/tmp/${x}_race.log") $(grep -E 'RACECHECK SUMMARY' "/tmp/${x}_race.log" | tr '\n' ' ')")
done
order=(${LIBS:-a j k l})
for r in $(seq 1 "${ROUNDS:-2}"); do
  for x in "${order[@]}"; do
    for f in rule 1 2; do
      e=(); [ $f != rule ] && e=(SAMEBITS_BWD_DKDV_FORM=$f)
      env "${e[@]}" BWD_BENCH_DIMS=64 LD_LIBRARY_PATH=$(lib $x) timeout 120 $T --bench-only > "/tmp/b_${x}_d64_${f}_$r.log" 2>&1
    done
    BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$(lib $x) timeout 120 $T --bench-only > "/tmp/b_${x}_d128_rule_$r.log" 2>&1
  done
  order=("${order[@]:1}" "${order[0]}")  # rotate
done
for f in /tmp/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
