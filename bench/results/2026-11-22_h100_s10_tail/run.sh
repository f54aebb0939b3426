#!/usr/bin/env bash
# device: the async hand loads (decode tail block, forward tail block / Q).
# .carry/tail: libsamebits.so.xz (new), test_attention_decode_sm90,
# test_attention_fwd_sm90; .carry/dmma4: the previous library (af01052).
set -uo pipefail
sum=()
N=$PWD/.carry/tail; O=$PWD/.carry/dmma4
for d in $N $O; do [ -f $d/libsamebits.so ] || xz -d -k $d/libsamebits.so.xz; done
chmod +x $N/test_attention_decode_sm90 $N/test_attention_fwd_sm90 $O/test_attention_decode_sm90
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
export LD_LIBRARY_PATH=$N
T=$N/test_attention_decode_sm90
timeout 90 $T > $OUT/decode_default.log 2>&1; sum+=("decode default rc=$? $(count $OUT/decode_default.log)")
SAMEBITS_DECODE_VARIANT=4 timeout 90 $T > $OUT/decode_v4.log 2>&1; sum+=("decode v4 rc=$? $(count $OUT/decode_v4.log)")
SAMEBITS_DECODE_MMA=0 timeout 60 $T --quick > $OUT/decode_nomma.log 2>&1; sum+=("decode mma0 quick rc=$? $(count $OUT/decode_nomma.log)")
timeout 120 compute-sanitizer --tool racecheck $T --small > $OUT/decode_race.log 2>&1; sum+=("decode racecheck rc=$? $(grep 'RACECHECK SUMMARY' $OUT/decode_race.log)")
timeout 100 compute-sanitizer --tool memcheck $T --small > $OUT/decode_mem.log 2>&1; sum+=("decode memcheck rc=$? $(grep 'ERROR SUMMARY' $OUT/decode_mem.log)")
timeout 150 $N/test_attention_fwd_sm90 > $OUT/fwd.log 2>&1; sum+=("fwd tests rc=$? $(count $OUT/fwd.log)")
timeout 120 compute-sanitizer --tool memcheck $N/test_attention_fwd_sm90 --small > $OUT/fwd_mem.log 2>&1; sum+=("fwd memcheck rc=$? $(grep 'ERROR SUMMARY' $OUT/fwd_mem.log)")
timeout 120 compute-sanitizer --tool racecheck $N/test_attention_fwd_sm90 --small > $OUT/fwd_race.log 2>&1; sum+=("fwd racecheck rc=$? $(grep 'RACECHECK SUMMARY' $OUT/fwd_race.log)")
for r in 1 2; do
  for L in new old; do
    D=$N; [ $L = old ] && D=$O
    for s in 0 1; do
      LD_LIBRARY_PATH=$D timeout 60 $N/test_attention_decode_sm90 --bench --graph --variants auto --reps 15 --max-tokens 1048576 --short $s > $OUT/cb_${L}_s${s}_r$r.md 2>&1
      sum+=("C bench $L short=$s run $r rc=$?")
    done
  done
done
for L in new old new old; do
  D=$N; [ $L = old ] && D=$O
  SAMEBITS_LIBRARY=$D/libsamebits.so PYTHONPATH=$PWD/python timeout 60 python3 .carry/tail/fwd_probe.py $L >> $OUT/fwd_probe.jsonl 2>>$OUT/fwd_probe.err
  sum+=("fwd probe $L rc=$?")
done
PY=(env SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python)
"${PY[@]}" timeout 100 python3 bench/bench_decode.py --graph --reps 10 --no-flex --short 1 --out $OUT > $OUT/peers_short1.log 2>&1; sum+=("bench_decode short1 rc=$?")
"${PY[@]}" timeout 100 python3 bench/bench_decode.py --graph --reps 10 --no-flex --out $OUT > $OUT/peers_short0.log 2>&1; sum+=("bench_decode short0 rc=$?")
"${PY[@]}" timeout 120 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > $OUT/pytest_cuda.log 2>&1; sum+=("pytest test_cuda rc=$? $(tail -1 $OUT/pytest_cuda.log)")
"${PY[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json $OUT/verify.json > $OUT/verify.log 2>&1; sum+=("verify rc=$? $(tail -1 $OUT/verify.log)")
printf '%s\n' "${sum[@]}" | tee $OUT/summary.txt
