#!/usr/bin/env bash
# One device call (thirty-fourth session): pass 1's mma consumer runs one
# turn of its block loop dry before Q and the first K block land
# (p.pass1_warm; CARRY = the new library with the decode test binary, BASE
# = main's library before it). Checks: the decode suite under the rule,
# --quick with the warm-up off (SAMEBITS_DECODE_PASS1_WARM=0), --quick
# under the rule's variants, memcheck / racecheck / synccheck --small, the
# Python decode tests. Timing: bench/predecessor_probe.py with the warm-up
# off (nowarm1) beside the default, then bench_decode.py --graph with each
# library (after the other implementation's call), ROUNDS rounds.
set -uo pipefail
CARRY=${CARRY:-.carry/s34warm}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
B=$PWD/${BASE:-.carry/s33final}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$B/libsamebits.so.xz" "$B/libsamebits.so"
T=$C/test_attention_decode_sm90
SHAPES=${SHAPES:-b1x2048,b1x4096,b2x2048,b1x8192,b2x4096,b1x16384,b1x32768,b8x2048,b1x131072,b16x4096,b4x1024}
probe() {
  r=$1
  PYTHONPATH=$PWD/python:$PWD/bench SAMEBITS_LIBRARY=$C/libsamebits.so timeout 170 python3 bench/predecessor_probe.py --out "$OUT/warm_r$r.json" --reps 11 \
    --variants "nowarm1:SAMEBITS_DECODE_PASS1_WARM=0" --shapes "$SHAPES" > "$OUT/warm_r$r.log" 2>&1
  echo "== probe round $r rc=$?"; grep -E "^b|samebits|nowarm1" "$OUT/warm_r$r.log" | head -60
}
bd() {  # library tag round
  PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$1/libsamebits.so timeout 120 python3 bench/bench_decode.py --out "$OUT/bd_$2_r$3" \
    --graph --captures 2 --reps 15 --no-flex --shapes 1x2048,1x4096,2x2048,1x8192,1x16384,1x32768,1x131072,8x2048,16x4096 \
    > "$OUT/bd_$2_r$3.log" 2>&1
  echo "== bench_decode $2 round $3 rc=$?"; tail -14 "$OUT/bd_$2_r$3.log"
}
chmod +x "$T"
if [ "${CHECKS:-1}" = 1 ]; then
  LD_LIBRARY_PATH=$C timeout 120 "$T" > "$OUT/rule_full.log" 2>&1
  sum+=("decode suite, rule rc=$? $(count "$OUT/rule_full.log")")
  SAMEBITS_DECODE_PASS1_WARM=0 LD_LIBRARY_PATH=$C timeout 60 "$T" --quick > "$OUT/nowarm_quick.log" 2>&1
  sum+=("decode --quick, pass-1 warm-up off rc=$? $(count "$OUT/nowarm_quick.log")")
  LD_LIBRARY_PATH=$C timeout 80 "$T" --quick --variants auto,0,4,0f,4c > "$OUT/rule_quick.log" 2>&1
  sum+=("decode --quick auto,0,4,0f,4c rc=$? $(count "$OUT/rule_quick.log")")
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in memcheck racecheck synccheck; do
    LD_LIBRARY_PATH=$C timeout 60 "$CS" --tool $tool "$T" --small > "$OUT/san_$tool.log" 2>&1
    sum+=("$tool --small rc=$? $(count "$OUT/san_$tool.log") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_$tool.log" | tr '\n' ' ')")
  done
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q \
    -p no:cacheprovider -k "decode or kvcache" > "$OUT/pytest.log" 2>&1
  sum+=("pytest test_cuda -k decode or kvcache rc=$? $(tail -1 "$OUT/pytest.log")")
  printf '%s\n' "${sum[@]}"
  grep -h '^\[FAIL\]' "$OUT"/*.log | head -5
fi
probe 1
for r in $(seq 1 "${ROUNDS:-1}"); do bd "$B" base "$r"; bd "$C" new "$r"; done
[ "$SECONDS" -lt 380 ] && probe 2
printf '%s\n' "${sum[@]}" > "$OUT/summary.txt"
cd "$OUT" && tar czf logs.tgz --exclude logs.tgz --exclude summary.txt --exclude 'warm_r*.json' . 
find "$OUT" -maxdepth 1 -type f -name '*.log' -delete
find "$OUT" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
