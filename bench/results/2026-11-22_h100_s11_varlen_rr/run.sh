#!/usr/bin/env bash
# device: varlen backward back on round-robin (dense keeps the zigzag walk): bwd tests, ragged probe vs s11g and s11d
set -uo pipefail
sum=()
N=$PWD/.carry/s11k; Z=$PWD/.carry/s11g; O=$PWD/.carry/s11d
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
for d in $N $Z $O; do xz -d -k -f $d/libsamebits.so.xz; done; chmod +x $N/test_attention_*
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
LD_LIBRARY_PATH=$N timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python:$PWD/tests/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "backward or training" > $R/pytest.log 2>&1; sum+=("pytest bwd rc=$? $(tail -1 $R/pytest.log)")
for r in 1 2; do for L in new zig old; do D=$N; [ $L = zig ] && D=$Z; [ $L = old ] && D=$O
  SAMEBITS_LIBRARY=$D/libsamebits.so PYTHONPATH=$PWD/python timeout 90 python3 .carry/s11j/ragged_probe.py $L >> $R/ragged_probe.jsonl 2>>$R/ragged_probe.err; sum+=("ragged probe $L rc=$?")
done; done
printf '%s\n' "${sum[@]}"; grep varlen $R/ragged_probe.jsonl; grep -h hash $R/bwd.log | head -7
