#!/usr/bin/env bash
# One device call: the dK/dV kernel's held K and V at head dim 64 (form 3,
# BwdConfig::kHeldKV; the rule runs it under a mask) on the carried build (CARRY: libsamebits.so.xz + test_attention_bwd_sm90)
# against main's library (OLD):
#   1. the full backward test on CARRY: pass counts and the six 50-run
#      hashes, which must be the recorded ones (HASHES);
#   2. the C bench at d 64 (BWD_BENCH_DIMS; BWD_BENCH_PACKED=1 adds a
#      packed causal batch) in three settings, ROUNDS rounds, the settings
#      rotated each round:
#        rule    the rule (held under a mask)
#        none    SAMEBITS_BWD_HELD=0 (the chained form everywhere, as before)
#        held    SAMEBITS_BWD_DKDV_FORM=3 (held everywhere)
#   3. racecheck and memcheck --small (SAN=0 skips);
#   4. bench_attention_backward.py (samebits, cuDNN; PY_DIMS) for CARRY
#      and OLD alternated, PY_ROUNDS rounds (0 skips).
# Logs and summary.txt under $OUT.
CARRY=${CARRY:-.carry/held}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$C/test_attention_bwd_sm90
chmod +x "$T"
O=$PWD/${OLD:-.carry/rev}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
HASHES="095ab3ce908393b1 a34b04d384a85ba9 96f88718f444baf8 7fcb7c2cf59f3c98 b06c70128a2a960f 55665f6d9eb3b414"
export SAMEBITS_BWD_TMA_STRICT=1
if [ "${SKIP_TEST:-0}" != 1 ]; then
  LD_LIBRARY_PATH=$C timeout ${TEST_TIMEOUT:-240} $T > /tmp/test.log 2>&1
  rc=$?
  missing=""
  for h in $HASHES; do grep -q "hash $h" /tmp/test.log || missing="$missing $h"; done
  sum+=("test rc=$rc $(count /tmp/test.log) recorded hashes missing:${missing:- none}")
  grep -v '^\[PASS\]' /tmp/test.log | head -60 > "$OUT/test_tail.log"
  grep -E '^\[(PASS|FAIL)\] forms' /tmp/test.log > "$OUT/test_forms.log"
fi
declare -A ENVS=([rule]="" [none]="SAMEBITS_BWD_HELD=0" [held]="SAMEBITS_BWD_DKDV_FORM=3")
order=(${SETS:-rule none held})
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in "${order[@]}"; do
    env ${ENVS[$v]} BWD_BENCH_DIMS=${DIMS:-64} BWD_BENCH_PACKED=${PACKED:-1} LD_LIBRARY_PATH=$C timeout 120 $T --bench-only > "/tmp/b_${v}_$r.log" 2>&1
    sum+=("bench $v $r rc=$?")
  done
  order=("${order[@]:1}" "${order[0]}")
done
for f in /tmp/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| (bf16|fp16)' "$f"; done > "$OUT/bench.txt"
python3 bench/bwd_bench_by_shape.py /tmp/b_*.log > "$OUT/bench_by_shape.txt"
if [ "${SAN:-1}" != 0 ]; then
  LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool racecheck $T --small > /tmp/race.log 2>&1
  sum+=("racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' /tmp/race.log)")
  LD_LIBRARY_PATH=$C timeout 100 compute-sanitizer --tool memcheck $T --small > /tmp/mem.log 2>&1
  sum+=("memcheck --small rc=$? $(grep 'ERROR SUMMARY' /tmp/mem.log)")
fi
for r in $(seq 1 "${PY_ROUNDS:-2}"); do
  for v in new old; do
    L=$C; [ $v = old ] && L=$O
    SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=$PWD/python timeout 150 python3 bench/bench_attention_backward.py \
      --out "/tmp/py_${v}_$r" --reps 10 --dims ${PY_DIMS:-64,128} --no-flex --impls ${PY_IMPLS:-samebits,cudnn,flash_det} > "/tmp/py_${v}_$r.log" 2>&1
    sum+=("py $v $r rc=$?")
  done
done
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
tar czf "$OUT/logs.tgz" -C /tmp test.log $(cd /tmp && ls -d b_*.log py_* race.log mem.log 2>/dev/null)
