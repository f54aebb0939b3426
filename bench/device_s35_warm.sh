#!/usr/bin/env bash
# One device call (thirty-fifth session), .carry/s35w (main + the dry turn
# of pass 1's mma consumer behind SAMEBITS_DECODE_PASS1_WARM: 1 at once,
# 2 once the producer has requested the first stage; + the wgmma knob
# SAMEBITS_DECODE_WG_EARLY): bits, then bench_decode A/B of the dry-turn
# settings beside main before this session (.carry/base), then
# bench/device_s35_wg.sh. Everything packed into $OUT/all.tgz and
# $OUT/wg/all.tgz.
set -uo pipefail
C=$PWD/.carry/s35w
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/bits"
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x $C/test_attention_decode_sm90
cnt() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
B=$OUT/bits
SAMEBITS_DECODE_PASS1_WARM=2 LD_LIBRARY_PATH=$C timeout 120 $C/test_attention_decode_sm90 > $B/full_w2.log 2>&1; echo "suite warm=2 rc=$? $(cnt $B/full_w2.log)"
SAMEBITS_DECODE_PASS1_WARM=2 LD_LIBRARY_PATH=$C timeout 80 $C/test_attention_decode_sm90 --quick --variants auto,0,4,0f,4c > $B/var_w2.log 2>&1; echo "variants warm=2 rc=$? $(cnt $B/var_w2.log)"
SAMEBITS_DECODE_PASS1_WARM=1 LD_LIBRARY_PATH=$C timeout 60 $C/test_attention_decode_sm90 --quick > $B/quick_w1.log 2>&1; echo "quick warm=1 rc=$? $(cnt $B/quick_w1.log)"
for tool in racecheck synccheck; do SAMEBITS_DECODE_PASS1_WARM=2 LD_LIBRARY_PATH=$C timeout 60 compute-sanitizer --tool $tool $C/test_attention_decode_sm90 --small > $B/san_$tool.log 2>&1; echo "$tool warm=2 rc=$? $(cnt $B/san_$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $B/san_$tool.log)"; done
grep -h '^\[FAIL\]' $B/*.log | head -3
gzip $B/*.log
CHECK_CARRY=.carry/s35w LIBS="w0=.carry/s35w w1=.carry/s35w:SAMEBITS_DECODE_PASS1_WARM=1 w2=.carry/s35w:SAMEBITS_DECODE_PASS1_WARM=2 base=.carry/base" ROUNDS=${AB_ROUNDS:-3} \
  SHAPES=1x4096,2x2048,4x1024,1x8192,1x16384,8x2048,1x32768 OUT=$OUT/ab bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| 1 \| 4096|^\| 2 \| 2048"
(cd "$OUT" && tar czf /tmp/all.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz")
OUT=$OUT/wg bash bench/device_s35_wg.sh 2>&1 | grep -E "^suite|^variants|^racecheck|^== |^\| 1 \| 4096"
