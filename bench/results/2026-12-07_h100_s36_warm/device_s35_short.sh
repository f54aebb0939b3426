#!/usr/bin/env bash
# Prepared in the thirty-fifth session, not run (no device machine could
# be started before its time ran out). .carry/s35w = main +
# bench/results/2026-12-07_s35_next/wg_early_qlen_dry_turn.patch (the
# knobs SAMEBITS_DECODE_PASS1_WARM=0/1/2 and SAMEBITS_DECODE_WG_EARLY=n,
# bench_decode.py --q-len), its libsamebits.so.xz and the decode test
# binary. One short device call:
# .carry/s35w's bits with SAMEBITS_DECODE_PASS1_WARM=2 and
# SAMEBITS_DECODE_WG_EARLY=1 (suite, racecheck), bench_decode A/B of the dry
# turn's settings (w0 none, w1 at once, w2 after the first request), then
# the wgmma schedule's early stages at --q-len 4 (one round). Packed into
# $OUT/all.tgz.
set -uo pipefail
C=$PWD/.carry/${CARRY_DIR:-s35w}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/bits"
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x $C/test_attention_decode_sm90
cnt() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
B=$OUT/bits
SAMEBITS_DECODE_PASS1_WARM=2 SAMEBITS_DECODE_WG_EARLY=1 LD_LIBRARY_PATH=$C timeout 120 $C/test_attention_decode_sm90 > $B/full.log 2>&1; echo "suite warm=2 wg_early=1 rc=$? $(cnt $B/full.log)"
SAMEBITS_DECODE_PASS1_WARM=2 SAMEBITS_DECODE_WG_EARLY=1 LD_LIBRARY_PATH=$C timeout 60 compute-sanitizer --tool racecheck $C/test_attention_decode_sm90 --small > $B/san_racecheck.log 2>&1; echo "racecheck rc=$? $(cnt $B/san_racecheck.log) $(grep -E 'RACECHECK SUMMARY' $B/san_racecheck.log)"
grep -h '^\[FAIL\]' $B/*.log | head -3
gzip $B/*.log
LIBS="main=.carry/s35e w0=.carry/${CARRY_DIR:-s35w} w1=.carry/${CARRY_DIR:-s35w}:SAMEBITS_DECODE_PASS1_WARM=1 w2=.carry/${CARRY_DIR:-s35w}:SAMEBITS_DECODE_PASS1_WARM=2" ROUNDS=2 CARRY=.carry/${CARRY_DIR:-s35w} \
  SHAPES=1x4096,2x2048,4x1024,1x8192,1x16384,8x2048 OUT=$OUT/ab bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
for n in 0 1 all; do
  SAMEBITS_DECODE_WG_EARLY=$n PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$C/libsamebits.so timeout 60 python3 bench/bench_decode.py \
    --out "$OUT/wg_q4_n$n" --graph --captures 2 --reps 15 --no-flex --q-len 4 \
    --shapes 1x4096,4x1024,1x16384,16x4096 > "$OUT/wg_q4_n$n.log" 2>&1
  echo "== q 4 wg_early $n rc=$?"; grep -E '^\| [0-9]' "$OUT/wg_q4_n$n.log"
done
cd "$OUT" && tar czf /tmp/all.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
