#!/usr/bin/env bash
# device: async hand loads in decode (tail pages from the walk), forward and backward.
set -uo pipefail
sum=()
N=$PWD/.carry/t2; P=$PWD/.carry/tail; O=$PWD/.carry/dmma4
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
for d in $N $P $O; do [ -f $d/libsamebits.so ] || xz -d -k $d/libsamebits.so.xz; done
chmod +x $N/test_attention_*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
export LD_LIBRARY_PATH=$N
T=$N/test_attention_decode_sm90
timeout 90 $T > $R/decode_default.log 2>&1; sum+=("decode default rc=$? $(count $R/decode_default.log)")
SAMEBITS_DECODE_VARIANT=4 timeout 90 $T > $R/decode_v4.log 2>&1; sum+=("decode v4 rc=$? $(count $R/decode_v4.log)")
SAMEBITS_DECODE_MMA=0 timeout 60 $T --quick > $R/decode_nomma.log 2>&1; sum+=("decode mma0 quick rc=$? $(count $R/decode_nomma.log)")
timeout 100 compute-sanitizer --tool racecheck $T --small > $R/decode_race.log 2>&1; sum+=("decode racecheck rc=$? $(grep 'RACECHECK SUMMARY' $R/decode_race.log)")
timeout 80 compute-sanitizer --tool memcheck $T --small > $R/decode_mem.log 2>&1; sum+=("decode memcheck rc=$? $(grep 'ERROR SUMMARY' $R/decode_mem.log)")
timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
timeout 120 compute-sanitizer --tool memcheck $N/test_attention_bwd_sm90 --small > $R/bwd_mem.log 2>&1; sum+=("bwd memcheck rc=$? $(grep 'ERROR SUMMARY' $R/bwd_mem.log)")
timeout 150 compute-sanitizer --tool racecheck $N/test_attention_bwd_sm90 --small > $R/bwd_race.log 2>&1; sum+=("bwd racecheck rc=$? $(grep 'RACECHECK SUMMARY' $R/bwd_race.log)")
timeout 100 $N/test_attention_fwd_sm90 --quick > $R/fwd_quick.log 2>&1; sum+=("fwd quick rc=$? $(count $R/fwd_quick.log)")
for r in 1 2; do
  for L in new prev; do
    D=$N; [ $L = prev ] && D=$P
    LD_LIBRARY_PATH=$D timeout 40 $N/test_attention_decode_sm90 --bench --graph --variants auto --reps 15 --max-tokens 262144 --short 1 > $R/cb_${L}_s1_r$r.md 2>&1
    sum+=("C bench $L short=1 run $r rc=$?")
  done
done
for L in new old new old; do
  D=$N; [ $L = old ] && D=$O
  SAMEBITS_LIBRARY=$D/libsamebits.so PYTHONPATH=$PWD/python timeout 90 python3 .carry/t2/ragged_probe.py $L >> $R/ragged_probe.jsonl 2>>$R/ragged_probe.err
  sum+=("ragged probe $L rc=$?")
done
PY=(env SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python)
"${PY[@]}" timeout 110 python3 bench/bench_decode.py --graph --reps 10 --no-flex --short 1 --out $R > $R/peers_short1.log 2>&1; sum+=("bench_decode short1 rc=$?")
"${PY[@]}" timeout 110 python3 bench/bench_decode.py --graph --reps 10 --no-flex --out $R > $R/peers_short0.log 2>&1; sum+=("bench_decode short0 rc=$?")
"${PY[@]}" timeout 120 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > $R/pytest_cuda.log 2>&1; sum+=("pytest test_cuda rc=$? $(tail -1 $R/pytest_cuda.log)")
"${PY[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json $R/verify.json > $R/verify.log 2>&1; sum+=("verify rc=$? $(tail -1 $R/verify.log)")
printf '%s\n' "${sum[@]}"
cat $R/bench_decode_graph_short1.md $R/bench_decode_graph.md
