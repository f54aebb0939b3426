#!/usr/bin/env bash
# device: final library of the session (preprocess heads fastest): checks + backward beside the peers
set -uo pipefail
sum=()
N=$PWD/.carry/s11g
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz; chmod +x $N/test_attention_*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
export LD_LIBRARY_PATH=$N
timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
timeout 150 compute-sanitizer --tool racecheck $N/test_attention_bwd_sm90 --small > $R/bwd_race.log 2>&1; sum+=("bwd racecheck rc=$? $(grep 'RACECHECK SUMMARY' $R/bwd_race.log)")
timeout 120 compute-sanitizer --tool memcheck $N/test_attention_bwd_sm90 --small > $R/bwd_mem.log 2>&1; sum+=("bwd memcheck rc=$? $(grep 'ERROR SUMMARY' $R/bwd_mem.log)")
timeout 100 $N/test_attention_fwd_sm90 --quick > $R/fwd_quick.log 2>&1; sum+=("fwd quick rc=$? $(count $R/fwd_quick.log)")
timeout 90 $N/test_attention_decode_sm90 --quick > $R/decode_quick.log 2>&1; sum+=("decode quick rc=$? $(count $R/decode_quick.log)")
timeout 60 $N/test_attention_bwd_sm90 --bench-only > $R/cb_bwd.log 2>&1; sum+=("cb bwd rc=$?")
export SAMEBITS_LIBRARY=$N/libsamebits.so
PY=(env PYTHONPATH=$PWD/python:$PWD/tests/python:$PWD/bench)
"${PY[@]}" timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > $R/pytest_cuda.log 2>&1; sum+=("pytest test_cuda rc=$? $(tail -1 $R/pytest_cuda.log)")
"${PY[@]}" timeout 60 python3 -m samebits.cli verify --device cuda --json $R/verify.json > $R/verify.log 2>&1; sum+=("verify rc=$? $(tail -1 $R/verify.log)")
mkdir -p $R/prof $R/bwd $R/warm
"${PY[@]}" timeout 100 python3 bench/profile_kernels.py --only bwd --eager --reps 5 --out $R/prof > $R/prof.log 2>&1; sum+=("prof rc=$?")
"${PY[@]}" timeout 60 python3 bench/bench_attention_backward.py --dims 128 --lengths 1024 --no-flex --reps 5 --out $R/warm > /dev/null 2>&1
"${PY[@]}" timeout 280 python3 bench/bench_attention_backward.py --dims 128,64,256 --lengths 1000,1024,2048,4096,8192,16384 --no-flex --reps 15 --out $R/bwd > $R/bwd_bench.log 2>&1; sum+=("bench bwd rc=$?")
printf '%s\n' "${sum[@]}"
grep "preprocess" $R/prof.log | awk '{print $2}' | tr '\n' ' '
