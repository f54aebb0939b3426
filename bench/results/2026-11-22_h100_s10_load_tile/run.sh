#!/usr/bin/env bash
# device: the hand loads of the forward and backward through the shared load_tile (refactor check)
set -uo pipefail
sum=()
N=$PWD/.carry/lt
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz; chmod +x $N/test_attention_*
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
export LD_LIBRARY_PATH=$N
timeout 150 $N/test_attention_fwd_sm90 > $R/fwd.log 2>&1; sum+=("fwd tests rc=$? $(count $R/fwd.log)")
timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
timeout 60 $N/test_attention_decode_sm90 --quick > $R/decode_quick.log 2>&1; sum+=("decode quick rc=$? $(count $R/decode_quick.log)")
timeout 100 compute-sanitizer --tool memcheck $N/test_attention_fwd_sm90 --small > $R/fwd_mem.log 2>&1; sum+=("fwd memcheck rc=$? $(grep 'ERROR SUMMARY' $R/fwd_mem.log)")
timeout 100 compute-sanitizer --tool racecheck $N/test_attention_bwd_sm90 --small > $R/bwd_race.log 2>&1; sum+=("bwd racecheck rc=$? $(grep 'RACECHECK SUMMARY' $R/bwd_race.log)")
mkdir -p $R/fwd $R/bwd
PYTHONPATH=python timeout 100 python3 bench/bench_attention.py --lib $N/libsamebits.so --out $R/fwd --dims 128 --lengths 1000,4095 --no-flex --reps 20 > $R/fwd_bench.log 2>&1; sum+=("fwd bench rc=$?")
SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=python timeout 120 python3 bench/bench_attention_backward.py --out $R/bwd --dims 128 --lengths 1000,4095 --no-flex --reps 10 > $R/bwd_bench.log 2>&1; sum+=("bwd bench rc=$?")
rm -f $R/*/*.png
printf '%s\n' "${sum[@]}"; cat $R/fwd/*.md $R/bwd/*.md
