#!/usr/bin/env bash
# One device call (thirty-eighth session): decode at head dim 64, the small
# shapes where it is furthest behind cuDNN (0.81-0.92x), main's library
# (.carry/s37fin) under the rule and with each schedule knob forced:
# variant 4 (two CTAs an SM), the in-pass-1 fold forced / off, the spread
# (variant 8), and the generic kernels instead of the lean twins. Two rounds,
# the order rotated. ~4 min. carry [".carry/s37fin"].
set -uo pipefail
OUT=${OUT:-/tmp/out}
C=.carry/s37fin
LIBS="rule=$C v4=$C:SAMEBITS_DECODE_VARIANT=4 foldf=$C:SAMEBITS_DECODE_FOLD=force fold0=$C:SAMEBITS_DECODE_FOLD=0 \
v8=$C:SAMEBITS_DECODE_VARIANT=8 nolean=$C:SAMEBITS_DECODE_LEAN=0" ROUNDS=2 CARRY=$C OUT=$OUT/d64 BD_ARGS="--head-dim 64" \
  SHAPES=1x1024,1x2048,1x4096,2x2048,4x1024,1x8192,8x2048,1x16384 timeout 500 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
