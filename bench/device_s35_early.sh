#!/usr/bin/env bash
# One device call (thirty-fifth session): pass 1's first stage alone
# (decode_early_stages, attention_decode_sm90.cu) in .carry/s35e: bits
# (suite with the rule and with the whole ring first, variants, sanitizers,
# pytest), then bench_decode --graph beside main's library (.carry/base)
# at d 128 with 32 .. 512 pass-1 CTAs, then the settings at d 64 and
# d 256 (with --big, d 64 at 512 .. 2048 CTAs instead). Everything is
# packed into $OUT/all.tgz (a call brings back only a few files).
set -uo pipefail
C=$PWD/.carry/s35e
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x $C/test_attention_decode_sm90
cnt() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
LD_LIBRARY_PATH=$C timeout 120 $C/test_attention_decode_sm90 > $OUT/full.log 2>&1; echo "suite rc=$? $(cnt $OUT/full.log)"
SAMEBITS_DECODE_EARLY_STAGES=all LD_LIBRARY_PATH=$C timeout 120 $C/test_attention_decode_sm90 > $OUT/full_eall.log 2>&1; echo "suite early=all rc=$? $(cnt $OUT/full_eall.log)"
LD_LIBRARY_PATH=$C timeout 80 $C/test_attention_decode_sm90 --quick --variants auto,0,4,0f,4c > $OUT/var.log 2>&1; echo "variants rc=$? $(cnt $OUT/var.log)"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck synccheck; do LD_LIBRARY_PATH=$C timeout 60 $CS --tool $tool $C/test_attention_decode_sm90 --small > $OUT/san_$tool.log 2>&1; echo "$tool rc=$? $(cnt $OUT/san_$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log)"; done
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache" 2>&1 | tail -1
grep -h '^\[FAIL\]' $OUT/full.log $OUT/full_eall.log $OUT/var.log | head -3
gzip $OUT/*.log
CHECK_CARRY=.carry/s35e LIBS="base=.carry/base new=.carry/s35e all=.carry/s35e:SAMEBITS_DECODE_EARLY_STAGES=all" ROUNDS=3 \
  SHAPES=1x4096,2x2048,4x1024,1x8192,2x4096,3x4096,1x12288,6x2048,1x16384,8x2048,1x32768,16x4096 OUT=$OUT/ab bash bench/device_s34_ab.sh 2>&1 | tail -3
DS="64 256"; SH=1x4096,2x2048,4x1024,1x8192,1x16384,8x2048
[ "${1:-}" = --big ] && DS=64 && SH=16x4096,32x2048,64x4096
for d in $DS; do
  for e in 1 all; do
    for r in 1 2; do
      SAMEBITS_DECODE_EARLY_STAGES=$e PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$C/libsamebits.so timeout 100 python3 bench/bench_decode.py \
        --out "$OUT/d${d}_e${e}_r$r" --graph --captures 2 --reps 15 --no-flex --head-dim $d \
        --shapes $SH > "$OUT/d${d}_e${e}_r$r.log" 2>&1
      echo "== d $d early $e round $r rc=$?"; grep -E '^\| [0-9]' "$OUT/d${d}_e${e}_r$r.log"
    done
  done
done
cd "$OUT" && tar czf /tmp/all.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
