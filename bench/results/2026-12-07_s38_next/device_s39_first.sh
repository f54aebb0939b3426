#!/usr/bin/env bash
# Prepared first device call for the next session (written in the
# thirty-eighth, not run): 1) bench/device_s38_rule.sh - the decode suite,
# --quick with every variant and pytest's decode tests with the library of
# the new rule (two CTAs an SM from 64 pass-1 CTAs with the mma consumer
# at d <= 128; .carry/s38rule = src of dc9acfa), its speed beside main's
# previous library (.carry/s37fin) at the shapes it moves and at controls,
# and the spread forced at 24 CTAs; 2) the same bound for the wgmma
# consumer (speculative verify of 4 rows at a head group of 8: 32 packed
# rows), rule (160) against schedule 4 forced at 32-159 CTAs. ~5 min.
# carry [".carry/s38rule", ".carry/s37fin"]; everything packed into $OUT/all.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/out}
OUT=$OUT/rule timeout 330 bash bench/device_s38_rule.sh
C=.carry/s38rule
LIBS="rule=$C v4=$C:SAMEBITS_DECODE_VARIANT=4" ROUNDS=2 CARRY=$C OUT=$OUT/verify4 BD_ARGS="--q-len 4" \
  SHAPES=1x4096,1x8192,1x12288,1x16384,2x8192,4x4096,16x1024 timeout 150 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
