#!/usr/bin/env bash
# device: persistent masked backward with a grid that pairs rounds (2 x grid a multiple of T); default vs per-unit (knob 0)
set -uo pipefail
sum=()
N=$PWD/.carry/s11f
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz; chmod +x $N/test_attention_*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
export LD_LIBRARY_PATH=$N
timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
timeout 150 compute-sanitizer --tool racecheck $N/test_attention_bwd_sm90 --small > $R/bwd_race.log 2>&1; sum+=("bwd racecheck p2 rc=$? $(grep 'RACECHECK SUMMARY' $R/bwd_race.log)")
timeout 120 compute-sanitizer --tool memcheck $N/test_attention_bwd_sm90 --small > $R/bwd_mem.log 2>&1; sum+=("bwd memcheck p2 rc=$? $(grep 'ERROR SUMMARY' $R/bwd_mem.log)")
for k in 1 0; do
  SAMEBITS_BWD_PERSISTENT=$k timeout 60 $N/test_attention_bwd_sm90 --bench-only > $R/cb_p$k.log 2>&1; sum+=("cb p$k rc=$?")
done
export SAMEBITS_LIBRARY=$N/libsamebits.so
PY=(env PYTHONPATH=$PWD/python:$PWD/tests/python:$PWD/bench)
for k in 1 0; do
  mkdir -p $R/prof_p$k
  SAMEBITS_BWD_PERSISTENT=$k "${PY[@]}" timeout 100 python3 bench/profile_kernels.py --only bwd --eager --reps 5 --out $R/prof_p$k > $R/prof_p$k.log 2>&1; sum+=("prof p$k rc=$?")
done
"${PY[@]}" timeout 150 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "backward or training" > $R/pytest_cuda.log 2>&1; sum+=("pytest test_cuda bwd rc=$? $(tail -1 $R/pytest_cuda.log)")
mkdir -p $R/bwd
"${PY[@]}" timeout 240 python3 bench/bench_attention_backward.py --dims 128,64,256 --lengths 1000,1024,2048,4096,8192 --no-flex --reps 15 --out $R/bwd > $R/bwd_bench.log 2>&1; sum+=("bench bwd rc=$?")
printf '%s\n' "${sum[@]}"
grep -h "hash" $R/bwd.log | head -8
paste <(grep "^| bf16" $R/cb_p1.log) <(grep "^| bf16" $R/cb_p0.log | awk -F'|' '{print $6,$7}')
