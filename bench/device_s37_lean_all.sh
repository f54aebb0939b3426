#!/usr/bin/env bash
# One device call (thirty-seventh session): the lean twin (DecodeConfig::kLean)
# for every pass-1 kernel (split, fold, walk, spread), library $CARRY
# (default .carry/s37all). Bits: the decode suite (the rule's schedules, lean),
# --quick under every schedule forced (auto, 0, 4, the fold forced, the two
# spreads, the walk forced), the same with SAMEBITS_DECODE_LEAN=0, racecheck
# --small under the spreads and the fold; pytest's decode tests; then
# bench_decode --graph beside $OLD (default .carry/s37both: the split kernel's
# lean twin only), ROUNDS rounds rotated. Everything packed into $OUT/all.tgz.
# Run from the repository root: bash bench/device_s37_lean_all.sh
set -uo pipefail
export CARRY=${CARRY:-.carry/s37all}
source bench/device_common.sh
T="$C/test_attention_decode_sm90"
chmod +x "$T"
B=$OUT/bits
mkdir -p "$B"
run() {  # name, timeout, env..., -- args...
  local name=$1 to=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" LD_LIBRARY_PATH=$C timeout "$to" "$T" "$@" > "$B/$name.log" 2>&1
  echo "== $name rc=$? $(count "$B/$name.log") $(grep -h 'RACECHECK SUMMARY' "$B/$name.log")"
}
run suite 150 -- 
run quick_all 150 -- --quick --variants auto,0,4,0f,4f,8,9
run quick_walk 100 SAMEBITS_DECODE_WALK=force -- --quick --variants auto,0,4
run quick_all_off 150 SAMEBITS_DECODE_LEAN=0 -- --quick --variants auto,0f,8,9
run quick_walk_off 100 SAMEBITS_DECODE_LEAN=0 SAMEBITS_DECODE_WALK=force -- --quick --variants auto
LD_LIBRARY_PATH=$C timeout 120 compute-sanitizer --tool racecheck "$T" --small --variants 8,9,0f > "$B/racecheck.log" 2>&1
echo "== racecheck rc=$? $(count "$B/racecheck.log") $(grep -h 'RACECHECK SUMMARY' "$B/racecheck.log")"
grep -h '^\[FAIL\]' "$B"/*.log | head -5
gzip "$B"/*.log
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache" > "$OUT/pytest_decode.log" 2>&1
echo "== pytest decode rc=$? $(tail -1 "$OUT/pytest_decode.log")"
LIBS="old=${OLD:-.carry/s37both} all=$CARRY" ROUNDS=${ROUNDS:-2} \
  SHAPES=${SHAPES:-1x1024,1x2048,1x4096,2x2048,8x2048,4x4096,16x4096,64x4096,1x32768} OUT=$OUT/dec bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
cd "$OUT" && tar czf /tmp/all.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
