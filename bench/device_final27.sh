#!/usr/bin/env bash
# One device call: the session's final library (CARRY) on an H100: the whole
# backward test (counts, the six recorded hashes), racecheck --small,
# tests/python/test_cuda.py and test_backward_workspace.py, verify.
CARRY=${CARRY:-.carry/final}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$C/test_attention_bwd_sm90
chmod +x "$T"
HASHES="095ab3ce908393b1 a34b04d384a85ba9 96f88718f444baf8 7fcb7c2cf59f3c98 b06c70128a2a960f 55665f6d9eb3b414"
SAMEBITS_BWD_TMA_STRICT=1 LD_LIBRARY_PATH=$C timeout 240 $T > /tmp/bwd.log 2>&1
rc=$?; missing=""
for h in $HASHES; do grep -q "hash $h" /tmp/bwd.log || missing="$missing $h"; done
sum+=("bwd test rc=$rc $(count /tmp/bwd.log) recorded hashes missing:${missing:- none}")
grep -v '^\[PASS\]' /tmp/bwd.log | tail -20 > "$OUT/bwd_tail.log"
LD_LIBRARY_PATH=$C timeout 120 compute-sanitizer --tool racecheck $T --small > /tmp/race.log 2>&1
sum+=("racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' /tmp/race.log)")
export PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$C/libsamebits.so
timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
sum+=("pytest rc=$? $(tail -1 "$OUT/pytest.log")")
timeout 120 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
