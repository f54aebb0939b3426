#!/usr/bin/env bash
# device: the session's final library (main 7f35163): checks and decode benches.
set -uo pipefail
sum=()
N=$PWD/.carry/final
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz; chmod +x $N/test_attention_*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
sha256sum $N/libsamebits.so > $R/lib_sha256.txt
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
export LD_LIBRARY_PATH=$N
T=$N/test_attention_decode_sm90
timeout 90 $T > $R/decode_default.log 2>&1; sum+=("decode default rc=$? $(count $R/decode_default.log)")
SAMEBITS_DECODE_VARIANT=4 timeout 90 $T > $R/decode_v4.log 2>&1; sum+=("decode v4 rc=$? $(count $R/decode_v4.log)")
SAMEBITS_DECODE_MMA=0 timeout 60 $T --quick > $R/decode_nomma.log 2>&1; sum+=("decode mma0 quick rc=$? $(count $R/decode_nomma.log)")
timeout 100 compute-sanitizer --tool racecheck $T --small > $R/decode_race.log 2>&1; sum+=("decode racecheck rc=$? $(grep 'RACECHECK SUMMARY' $R/decode_race.log)")
timeout 80 compute-sanitizer --tool memcheck $T --small > $R/decode_mem.log 2>&1; sum+=("decode memcheck rc=$? $(grep 'ERROR SUMMARY' $R/decode_mem.log)")
timeout 150 $N/test_attention_fwd_sm90 > $R/fwd.log 2>&1; sum+=("fwd tests rc=$? $(count $R/fwd.log)")
timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
for s in 0 1; do
  timeout 90 $T --bench --graph --variants auto --reps 15 --max-tokens 8388608 --short $s > $R/cb_s$s.md 2>&1; sum+=("C bench short=$s rc=$?")
done
PY=(env SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python)
for s in 1 0; do
  "${PY[@]}" timeout 120 python3 bench/bench_decode.py --graph --reps 15 --no-flex --short $s --out $R > $R/peers_short$s.log 2>&1; sum+=("bench_decode short$s rc=$?")
done
"${PY[@]}" timeout 120 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > $R/pytest_cuda.log 2>&1; sum+=("pytest test_cuda rc=$? $(tail -1 $R/pytest_cuda.log)")
"${PY[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json $R/verify.json > $R/verify.log 2>&1; sum+=("verify rc=$? $(tail -1 $R/verify.log)")
printf '%s\n' "${sum[@]}"
cat $R/bench_decode_graph_short1.md $R/bench_decode_graph.md
