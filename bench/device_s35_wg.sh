#!/usr/bin/env bash
# One device call (thirty-fifth session): the wgmma consumer's schedule 0
# (tiles of more than 16 packed rows: speculative verify, chunked prefill)
# with SAMEBITS_DECODE_WG_EARLY=n stages requested before Q's copies
# (.carry/s35w). Bits (suite with n = 1 and all, variants), then
# bench_decode --graph --q-len Q for n = 0 (Q first, main's order), 1, 2,
# all, rotated, ROUNDS rounds. Everything packed into $OUT/all.tgz.
set -uo pipefail
C=$PWD/.carry/s35w
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x $C/test_attention_decode_sm90
cnt() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
for n in 1 all; do
  SAMEBITS_DECODE_WG_EARLY=$n LD_LIBRARY_PATH=$C timeout 120 $C/test_attention_decode_sm90 > $OUT/full_$n.log 2>&1; echo "suite wg_early=$n rc=$? $(cnt $OUT/full_$n.log)"
done
SAMEBITS_DECODE_WG_EARLY=1 LD_LIBRARY_PATH=$C timeout 80 $C/test_attention_decode_sm90 --quick --variants auto,0,4,0f,4c > $OUT/var.log 2>&1; echo "variants wg_early=1 rc=$? $(cnt $OUT/var.log)"
SAMEBITS_DECODE_WG_EARLY=1 LD_LIBRARY_PATH=$C timeout 60 compute-sanitizer --tool racecheck $C/test_attention_decode_sm90 --small > $OUT/san_racecheck.log 2>&1; echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_racecheck.log)"
grep -h '^\[FAIL\]' $OUT/full_*.log $OUT/var.log | head -3
gzip $OUT/*.log
SETS=(0 1 2 all)
for r in $(seq 1 "${ROUNDS:-2}"); do
  for i in 0 1 2 3; do
    n=${SETS[$(( (i + r - 1) % 4 ))]}
    for Q in ${QS:-4}; do
      SAMEBITS_DECODE_WG_EARLY=$n PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$C/libsamebits.so timeout 100 python3 bench/bench_decode.py \
        --out "$OUT/q${Q}_n${n}_r$r" --graph --captures 2 --reps 15 --no-flex --q-len $Q \
        --shapes ${SHAPES:-1x4096,2x2048,4x1024,1x8192,1x16384,8x2048,16x4096} > "$OUT/q${Q}_n${n}_r$r.log" 2>&1
      echo "== q $Q wg_early $n round $r rc=$?"; grep -E '^\| [0-9]' "$OUT/q${Q}_n${n}_r$r.log"
    done
  done
done
cd "$OUT" && tar czf /tmp/all.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
