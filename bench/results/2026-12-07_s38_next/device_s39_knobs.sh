#!/usr/bin/env bash
# Prepared device call (thirty-eighth session, not run): the decode rule's
# other bounds measured again with the knobs on one library, as the
# thirty-eighth session measured the two-CTAs-an-SM bound (it moved from
# 160 to 64 CTAs): the in-pass-1 fold (kFoldMinClusters, set in the
# twenty-fifth session), the walk (>= 128 tiles, twenty-ninth) and the
# combine's column parts (thirtieth), each forced on and off beside the
# rule, at shapes on both sides of each bound. One round (~3 min); a
# setting that looks faster by more than 2 % gets a second call with two
# rounds before any rule moves. carry [".carry/s38rule"] (or main's
# library once it ran).
set -uo pipefail
OUT=${OUT:-/tmp/out}
C=${LIB:-.carry/s38rule}
LIBS="rule=$C fold0=$C:SAMEBITS_DECODE_FOLD=0 foldf=$C:SAMEBITS_DECODE_FOLD=force walk0=$C:SAMEBITS_DECODE_WALK=0 \
walkf=$C:SAMEBITS_DECODE_WALK=force parts1=$C:SAMEBITS_DECODE_COMBINE_PARTS=1 parts4=$C:SAMEBITS_DECODE_COMBINE_PARTS=4" \
  ROUNDS=1 CARRY=$C OUT=$OUT/knobs \
  SHAPES=2x2048,4x2048,8x2048,4x4096,16x2048,8x4096,16x4096,32x4096,64x2048,1x65536,2x32768,1x131072 \
  timeout 400 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
