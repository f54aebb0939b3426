#!/usr/bin/env bash
# One device call: the backward's C bench (test_attention_bwd_sm90
# --bench-only, BWD_BENCH_DIMS=$DIMS) over settings, each a carried library
# and an environment, ROUNDS rounds with the settings rotated each round.
# SETTINGS: space-separated name=dir[:VAR=val,VAR=val], dir under .carry
# holding libsamebits.so.xz (the test binary is CARRY's). TESTS: names
# whose whole backward test runs first (pass counts and hashes).
# Tables in $OUT/bench.txt, a summary in $OUT/summary.txt.
CARRY=${CARRY:-.carry/held}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$C/test_attention_bwd_sm90
chmod +x "$T"
export SAMEBITS_BWD_TMA_STRICT=1
declare -A DIR ENV
order=()
for s in $SETTINGS; do
  n=${s%%=*}; rest=${s#*=}; d=${rest%%:*}; e=""; [[ $rest == *:* ]] && e=${rest#*:}
  DIR[$n]=$PWD/.carry/$d; ENV[$n]=${e//,/ }; order+=("$n")
  [ -f "${DIR[$n]}/libsamebits.so" ] || python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "${DIR[$n]}/libsamebits.so.xz" "${DIR[$n]}/libsamebits.so"
done
for n in ${TESTS:-}; do
  env ${ENV[$n]} LD_LIBRARY_PATH=${DIR[$n]} timeout ${TEST_TIMEOUT:-240} $T ${TEST_ARGS:-} > /tmp/test_$n.log 2>&1
  sum+=("test $n rc=$? $(count /tmp/test_$n.log) $(hashes /tmp/test_$n.log)")
  grep -v '^\[PASS\]' /tmp/test_$n.log | head -40 > "$OUT/test_$n.tail"
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for n in "${order[@]}"; do
    env ${ENV[$n]} BWD_BENCH_DIMS=${DIMS:-64} LD_LIBRARY_PATH=${DIR[$n]} timeout 120 $T --bench-only > "/tmp/b_${n}_$r.log" 2>&1
    sum+=("bench $n $r rc=$?")
  done
  order=("${order[@]:1}" "${order[0]}")
done
for f in /tmp/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| (bf16|fp16)' "$f"; done > "$OUT/bench.txt"
python3 bench/bwd_bench_by_shape.py /tmp/b_*.log > "$OUT/bench_by_shape.txt"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
