#!/usr/bin/env bash
# One device call (twenty-ninth session): the GEMM library (CARRY) against the one
# before its last change (OLD): issue 6's 76 points, bits and entry checks
# (bench/gemm_uniform_device.sh, ROUNDS rounds), the changed shapes
# (bench/device_gemm_rule.sh with NS / MS), then the Python CUDA tests and
# verify on CARRY. Everything packed into $OUT/all.tgz, summary in
# $OUT/summary.txt.
CARRY=${CARRY:-.carry/abox}
OLD=${OLD:-.carry/final28c}
export CARRY OLD
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
mkdir -p "$OUT/u" "$OUT/r"
OUT=$OUT/u ROUNDS=${ROUNDS:-1} ALIASES="${ALIASES:-}" bash bench/gemm_uniform_device.sh > "$OUT/u/stdout.txt" 2>&1
OUT=$OUT/r ROUNDS=${ROUNDS:-1} NS="${NS:-4096 14336}" MS="${MS:-192 384 640 1280}" bash bench/device_gemm_rule.sh > /dev/null 2>&1
export PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$C/libsamebits.so
timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
sum+=("pytest rc=$? $(tail -1 "$OUT/pytest.log")")
timeout 120 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
{ grep -E "bits|pytest|FAILS|below" "$OUT/u/stdout.txt"; cat "$OUT/r/summary.txt"; printf '%s\n' "${sum[@]}"; } > "$OUT/summary.txt"
cat "$OUT/summary.txt"; grep -E "^ +(192|384|640|1280) x" "$OUT/u/table.txt"; cat "$OUT/r/table.txt"
cd "$OUT" && tar czf all.tgz u r pytest.log verify.log && rm -rf u r
