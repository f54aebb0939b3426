#!/usr/bin/env bash
# device: review commit (attention eager path through fast_op; backward opt-ins beside their launches)
set -uo pipefail
sum=()
N=$PWD/.carry/s11m
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz; chmod +x $N/test_attention_*
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
LD_LIBRARY_PATH=$N timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
export SAMEBITS_LIBRARY=$N/libsamebits.so
PYTHONPATH=$PWD/python:$PWD/tests/python timeout 200 python3 -m pytest tests/python/test_cuda.py tests/python/test_compile.py -q -p no:cacheprovider > $R/pytest.log 2>&1; sum+=("pytest cuda+compile rc=$? $(tail -1 $R/pytest.log)")
mkdir -p $R/bwd
PYTHONPATH=$PWD/python timeout 120 python3 bench/bench_attention_backward.py --dims 128 --lengths 1024,1000,2048 --no-flex --reps 15 --out $R/bwd > $R/bwd_bench.log 2>&1; sum+=("bench bwd rc=$?")
printf '%s\n' "${sum[@]}"; grep -h hash $R/bwd.log | head -7; cat $R/bwd/bench_attention_backward.md | tail -7
