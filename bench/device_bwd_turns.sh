#!/usr/bin/env bash
# One device call: the dK/dV kernel's turns form (form 4,
# DkdvTmaKernel::kRawTurns: the two consumer warpgroups take turns to issue
# their products) against the kRaw form it reorders (form 1), on the
# carried build (CARRY: libsamebits.so.xz + test_attention_bwd_sm90):
#   1. the C bench (BWD_BENCH_DIMS=$DIMS, a packed batch too) with
#      SAMEBITS_BWD_DKDV_FORM=1 and =4 (SETS), ROUNDS rounds, rotated;
#   2. the whole backward test with form 4 forced (FORCED=1): every case,
#      the six recorded 50-run hashes (HASHES), and forms_suite;
#   3. racecheck and synccheck --small with form 4 forced (SAN=1).
# Logs and summary.txt under $OUT. Form 4 was a measurement form of the
# twenty-eighth session, not kept (its patch is in
# bench/results/2026-11-27_h100_s28_turns/); with today's library the script
# times forms 1, 2 and the rule (SETS="raw chain rule").
CARRY=${CARRY:-.carry/turns}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$C/test_attention_bwd_sm90
chmod +x "$T"
HASHES="095ab3ce908393b1 a34b04d384a85ba9 96f88718f444baf8 7fcb7c2cf59f3c98 b06c70128a2a960f 55665f6d9eb3b414"
export SAMEBITS_BWD_TMA_STRICT=1
declare -A ENVS=([raw]="SAMEBITS_BWD_DKDV_FORM=1" [turns]="SAMEBITS_BWD_DKDV_FORM=4" [rule]="" [chain]="SAMEBITS_BWD_DKDV_FORM=2"
  [turnsS]="SAMEBITS_BWD_DKDV_FORM=4 SAMEBITS_BWD_TURNS_EXP=2" [turnsU]="SAMEBITS_BWD_DKDV_FORM=4 SAMEBITS_BWD_TURNS_EXP=1"
  [turns0]="SAMEBITS_BWD_DKDV_FORM=4 SAMEBITS_BWD_TURNS_EXP=3")
order=(${SETS:-raw turns})
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in "${order[@]}"; do
    env ${ENVS[$v]} BWD_BENCH_DIMS=${DIMS:-128} BWD_BENCH_PACKED=${PACKED:-1} LD_LIBRARY_PATH=$C timeout 120 $T --bench-only > "/tmp/b_${v}_$r.log" 2>&1
    sum+=("bench $v $r rc=$?")
  done
  order=("${order[@]:1}" "${order[0]}")
done
for f in /tmp/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| (bf16|fp16)' "$f"; done > "$OUT/bench.txt"
python3 bench/bwd_bench_by_shape.py /tmp/b_*.log > "$OUT/bench_by_shape.txt"
if [ "${FORCED:-1}" != 0 ]; then
  SAMEBITS_BWD_DKDV_FORM=4 LD_LIBRARY_PATH=$C timeout ${TEST_TIMEOUT:-240} $T ${TEST_ARGS:-} > /tmp/test.log 2>&1
  rc=$?
  missing=""
  for h in $HASHES; do grep -q "hash $h" /tmp/test.log || missing="$missing $h"; done
  sum+=("test (form 4 forced) rc=$rc $(count /tmp/test.log) recorded hashes missing:${missing:- none}")
  grep -v '^\[PASS\]' /tmp/test.log | head -60 > "$OUT/test_tail.log"
  grep -E '^\[(PASS|FAIL)\] forms' /tmp/test.log > "$OUT/test_forms.log"
fi
if [ "${SAN:-1}" != 0 ]; then
  for tool in racecheck synccheck; do
    SAMEBITS_BWD_DKDV_FORM=4 LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool $tool $T --small > /tmp/$tool.log 2>&1
    sum+=("$tool --small (form 4) rc=$? $(count /tmp/$tool.log) $(grep -E 'SUMMARY' /tmp/$tool.log | tr '\n' ' ')")
  done
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
tar czf "$OUT/logs.tgz" -C /tmp $(cd /tmp && ls test.log b_*.log racecheck.log synccheck.log 2>/dev/null)
