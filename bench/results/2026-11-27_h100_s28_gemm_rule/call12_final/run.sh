#!/usr/bin/env bash
# One device call: the session's final library (CARRY: libsamebits.so.xz +
# test_attention_bwd_sm90) on an H100: the whole backward test (counts, the
# six recorded hashes; the dK/dV forms' dispatch changed), the Python CUDA
# tests (attention, backward workspace, dense), verify, then the GEMM rule's
# changed shapes against the library before the last rule change (OLD, via
# bench/device_gemm_rule.sh, ROUNDS rounds).
CARRY=${CARRY:-.carry/final28}
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
export PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$C/libsamebits.so
timeout 400 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py tests/python/test_dense.py \
  -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
sum+=("pytest rc=$? $(tail -1 "$OUT/pytest.log")")
timeout 120 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
printf '%s\n' "${sum[@]}" > "$OUT/summary_checks.txt"
unset PYTHONPATH SAMEBITS_LIBRARY
mkdir -p "$OUT/rule"
OUT=$OUT/rule ROUNDS=${ROUNDS:-1} bash bench/device_gemm_rule.sh > /dev/null 2>&1
cat "$OUT/summary_checks.txt" "$OUT/rule/summary.txt"; cat "$OUT/rule/table.txt"
cd "$OUT/rule" && tar czf ../rule.tgz . && cd .. && rm -rf rule
