#!/usr/bin/env bash
# One device call over a merged library (about 7 minutes on an H100): the
# backward's GPU test with its six hashes, racecheck and memcheck; the decode
# suite under the default schedule and under v4 forced; the row kernels
# against the previous library (bits, speed, N sweep); the GEMM checks and
# timings beside cuBLAS; the Python CUDA tests and `samebits verify`; decode
# beside cuDNN / flash SDPA under CUDA-graph replay; the decode C bench and
# the kernel timelines of bench/profile_kernels.py. Logs packed into
# $OUT/merged_check.tgz, the summary in $OUT/summary.txt and printed last.
# The carried folder (CARRY, default .carry/final3) holds libsamebits.so,
# test_attention_bwd_sm90, test_attention_decode_sm90 and old/libsamebits.so
# (the library the row kernels are compared with). Run from the repository
# root: bash bench/device_merged_check.sh
set -uo pipefail
sum=()
C=$PWD/${CARRY:-.carry/final3}
FINAL_OUT=${OUT:-/tmp/out}
# Everything is written under a work folder and packed into one archive at
# the end: the device tool brings back only a few files of a call.
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/merged_check.tgz" -C "$OUT" . && printf "%s\n" "${sum[@]}" > "$FINAL_OUT/summary.txt"' EXIT
mkdir -p "$FINAL_OUT"
export SAMEBITS_BWD_TMA_STRICT=1
PYENV=(env SAMEBITS_LIBRARY="$C/libsamebits.so" PYTHONPATH="$PWD/python")
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$C/libsamebits.so" | tee "$OUT/lib_sha256.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }

LD_LIBRARY_PATH=$C timeout 100 "$C/test_attention_bwd_sm90" > "$OUT/bwd.log" 2>&1
sum+=("bwd test rc=$? $(count "$OUT/bwd.log") $(grep -o 'hash [0-9a-f]\{16\}' "$OUT/bwd.log" | sort | tr '\n' ' ')")
LD_LIBRARY_PATH=$C timeout 90 compute-sanitizer --tool racecheck "$C/test_attention_bwd_sm90" --small > "$OUT/bwd_race.log" 2>&1
sum+=("bwd racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/bwd_race.log")")
LD_LIBRARY_PATH=$C timeout 60 compute-sanitizer --tool memcheck "$C/test_attention_bwd_sm90" --small > "$OUT/bwd_mem.log" 2>&1
sum+=("bwd memcheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/bwd_mem.log")")

LD_LIBRARY_PATH=$C timeout 60 "$C/test_attention_decode_sm90" > "$OUT/decode_default.log" 2>&1
sum+=("decode default schedule rc=$? $(count "$OUT/decode_default.log")")
SAMEBITS_DECODE_VARIANT=4 LD_LIBRARY_PATH=$C timeout 60 "$C/test_attention_decode_sm90" > "$OUT/decode_v4.log" 2>&1
sum+=("decode v4 forced rc=$? $(count "$OUT/decode_v4.log")")

ROWS_CARRY=$C ROWS_NEW_LIB=$C/libsamebits.so ROWS_OLD_LIB=$C/old/libsamebits.so timeout 200 \
  bash bench/rows_device_check.sh > "$OUT/rows.log" 2>&1
sum+=("rows rc=$? $(grep -E 'rows_device_check: rc' "$OUT/rows.log")")

"${PYENV[@]}" timeout 120 python3 bench/bench_dense.py --gemm-only --out "$OUT/dense_gemm.json" > "$OUT/dense_gemm.log" 2>&1
sum+=("gemm rc=$? $(grep -E 'FAILS' "$OUT/dense_gemm.log" | tail -1)")

"${PYENV[@]}" timeout 120 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest_cuda.log" 2>&1
sum+=("pytest test_cuda rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
"${PYENV[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json "$OUT/verify.json" > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")

"${PYENV[@]}" timeout 90 python3 bench/bench_decode.py --graph --reps 15 --no-flex --out "$OUT" > "$OUT/decode_peers_graph.log" 2>&1
sum+=("bench_decode --graph rc=$?")

LD_LIBRARY_PATH=$C timeout 60 "$C/test_attention_decode_sm90" --bench --graph --variants auto > "$OUT/decode_bench_graph.md" 2>&1
sum+=("decode C bench --graph rc=$?")
"${PYENV[@]}" timeout 120 python3 bench/profile_kernels.py --out "$OUT" --reps 5 > "$OUT/profile_kernels.log" 2>&1
sum+=("profile_kernels rc=$?")
# a carried experiment program, if any (EXTRA: a command line run as is)
if [ -n "${EXTRA:-}" ]; then
  timeout 60 bash -c "$EXTRA" > "$OUT/extra.log" 2>&1
  sum+=("extra rc=$?")
fi

printf '%s\n' "${sum[@]}"
echo "== decode C bench (graph)"; grep -E "^\| (1|4|16|64|256) \|" "$OUT/decode_bench_graph.md" | head -30
echo "== extra"; tail -20 "$OUT/extra.log" 2>/dev/null
echo "== rows"; grep -E "^(rms|soft|log|add|sum)" "$OUT/rows_dense_new.log" 2>/dev/null | head -30
echo "== gemm"; grep -E "^gemm M" "$OUT/dense_gemm.log" | head -80
echo "== decode peers (graph)"; cat "$OUT/bench_decode_graph.md" 2>/dev/null
