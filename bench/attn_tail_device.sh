#!/usr/bin/env bash
# One device call: does a part-empty last tile cost the attention kernels
# what it cost the GEMM? Forward (bench_attention.py) and backward
# (bench_attention_backward.py) beside cuDNN at lengths that fill whole
# 128-row tiles and lengths one past them, d 128, bf16, 16k tokens.
CARRY=${CARRY:-.carry/tailp}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
L=${LENGTHS:-1024,1025,1152,2048,2049,4096,4097}
python3 bench/bench_attention.py --lib $C/libsamebits.so --out "$OUT/fwd" --dims 128 --lengths $L --no-flex --reps 20 > "$OUT/fwd.log" 2>&1
echo "fwd rc=$?"; grep -E "^\|" "$OUT/fwd.log" | head -30
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench timeout 300 python3 bench/bench_attention_backward.py --out "$OUT/bwd" --dims 128 \
  --lengths $L --no-flex --reps 10 > "$OUT/bwd.log" 2>&1
echo "bwd rc=$?"; grep -E "^\|" "$OUT/bwd.log" | head -30
