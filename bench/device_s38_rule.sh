#!/usr/bin/env bash
# One device call (thirty-eighth session): the decode rule's two-CTAs-an-SM
# threshold at 64 pass-1 CTAs with the mma consumer at d <= 128 (was 160);
# library .carry/s38rule (main + that change) against main's (.carry/s37fin).
# Bits: the decode suite under the new rule, --quick with every variant,
# pytest's decode tests; then bench_decode --graph at the shapes the rule
# moves (64-159 CTAs) and at controls it leaves (32-56 and >= 160 CTAs),
# d 128 and d 64, two rounds rotated. then the spread forced at 24 CTAs. ~5 min. carry [".carry/s38rule", ".carry/s37fin"].
set -uo pipefail
export CARRY=.carry/s38rule
source bench/device_common.sh
T="$C/test_attention_decode_sm90"
chmod +x "$T"
LD_LIBRARY_PATH=$C timeout 150 "$T" > "$OUT/suite.log" 2>&1
echo "== decode suite (new rule) rc=$? $(count "$OUT/suite.log")"
LD_LIBRARY_PATH=$C timeout 120 "$T" --quick --variants auto,0,4,0f,4f,8,9 > "$OUT/quick_variants.log" 2>&1
echo "== --quick --variants auto,0,4,0f,4f,8,9 rc=$? $(count "$OUT/quick_variants.log")"
grep -h '^\[FAIL\]' "$OUT"/*.log | head -5
gzip "$OUT"/suite.log "$OUT"/quick_variants.log
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache" > "$OUT/pytest_decode.log" 2>&1
echo "== pytest decode rc=$? $(tail -1 "$OUT/pytest_decode.log")"
LIBS="main=.carry/s37fin new=.carry/s38rule" ROUNDS=2 CARRY=.carry/s38rule OUT=$OUT/d128 \
  SHAPES=1x8192,1x12288,1x16384,2x8192,4x4096,4x2048,8x1024,16x1024,8x2048,1x6144,1x4096,1x32768 \
  timeout 200 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
LIBS="main=.carry/s37fin new=.carry/s38rule" ROUNDS=2 CARRY=.carry/s38rule OUT=$OUT/d64 BD_ARGS="--head-dim 64" \
  SHAPES=1x8192,1x16384,2x8192,4x4096,16x1024,2x2048 timeout 120 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
# the spread's bound (16 CTAs): at 24 CTAs (1 x 3k, 3 x 1k) its 24 clusters of 8 are all resident
LIBS="new=.carry/s38rule v8=.carry/s38rule:SAMEBITS_DECODE_VARIANT=8" ROUNDS=2 CARRY=.carry/s38rule OUT=$OUT/spread24 \
  SHAPES=1x3072,3x1024,1x2048 timeout 60 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
