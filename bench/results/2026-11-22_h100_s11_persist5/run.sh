#!/usr/bin/env bash
# device: preprocess loads before stores; zigzag persistent walk; masked persistent (knob) vs default vs per-unit
set -uo pipefail
sum=()
N=$PWD/.carry/s11e
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz; chmod +x $N/test_attention_*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
export LD_LIBRARY_PATH=$N
timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
SAMEBITS_BWD_PERSISTENT=2 timeout 200 $N/test_attention_bwd_sm90 > $R/bwd_p2.log 2>&1; sum+=("bwd tests p2 rc=$? $(count $R/bwd_p2.log)")
SAMEBITS_BWD_PERSISTENT=2 timeout 150 compute-sanitizer --tool racecheck $N/test_attention_bwd_sm90 --small > $R/bwd_race.log 2>&1; sum+=("bwd racecheck p2 rc=$? $(grep 'RACECHECK SUMMARY' $R/bwd_race.log)")
SAMEBITS_BWD_PERSISTENT=2 timeout 120 compute-sanitizer --tool memcheck $N/test_attention_bwd_sm90 --small > $R/bwd_mem.log 2>&1; sum+=("bwd memcheck p2 rc=$? $(grep 'ERROR SUMMARY' $R/bwd_mem.log)")
for k in 1 2 0; do
  SAMEBITS_BWD_PERSISTENT=$k timeout 60 $N/test_attention_bwd_sm90 --bench-only > $R/cb_p$k.log 2>&1; sum+=("cb p$k rc=$?")
done
export SAMEBITS_LIBRARY=$N/libsamebits.so
PY=(env PYTHONPATH=$PWD/python:$PWD/tests/python:$PWD/bench)
for k in 1 2; do
  mkdir -p $R/prof_p$k
  SAMEBITS_BWD_PERSISTENT=$k "${PY[@]}" timeout 100 python3 bench/profile_kernels.py --only bwd --eager --reps 5 --out $R/prof_p$k > $R/prof_p$k.log 2>&1; sum+=("prof p$k rc=$?")
done
printf '%s\n' "${sum[@]}"
grep -h "hash" $R/bwd.log | head -8; grep -h "hash" $R/bwd_p2.log | head -8
paste <(grep "^| bf16" $R/cb_p1.log) <(grep "^| bf16" $R/cb_p2.log | awk -F'|' '{print $6,$7}') <(grep "^| bf16" $R/cb_p0.log | awk -F'|' '{print $6,$7}')
