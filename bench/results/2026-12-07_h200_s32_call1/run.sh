#!/usr/bin/env bash
# One device call (thirty-second session):
# 1. bench/first_place_probe.py: is the first-place slowness of the probes
#    (thirty-first session) a capture-order or a timing-order effect?
#    Separate graph pools, then one shared pool.
# 2. The decode combine's load loop with a shift and a mask instead of a
#    run-time division (CARRY, against OLD = the library before): the decode
#    suite under the rule and with 4 and 2 column parts forced (every row
#    bitwise the forward's), --quick under the rule's variants, the Python
#    decode tests; then bench_decode.py --graph, OLD and CARRY alternated.
# CARRY / OLD: folders with libsamebits.so.xz; TEST: a folder with
# test_attention_decode_sm90.
set -uo pipefail
CARRY=${CARRY:-.carry/s32new}
OLDC=$PWD/${OLD:-.carry/s32old}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$OUT/table.md" "$OUT"/fp_*.log "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$OLDC/libsamebits.so.xz" "$OLDC/libsamebits.so"
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench
for pool in "" "--shared-pool"; do
  f="fp${pool:+_shared}"
  SAMEBITS_LIBRARY=$C/libsamebits.so timeout 120 python3 bench/first_place_probe.py --out "$OUT/$f.json" $pool \
    > "$OUT/$f.log" 2>&1
  sum+=("first_place_probe $pool rc=$?")
  cat "$OUT/$f.log"
done
T=$PWD/${TEST:-.carry/s32test}/test_attention_decode_sm90
chmod +x "$T"
if [ "${CHECKS:-1}" = 1 ]; then
  LD_LIBRARY_PATH=$C timeout 150 "$T" > "$OUT/rule_full.log" 2>&1
  sum+=("decode suite, rule rc=$? $(count "$OUT/rule_full.log")")
  for n in 4 2; do
    SAMEBITS_DECODE_COMBINE_PARTS=$n LD_LIBRARY_PATH=$C timeout 150 "$T" --quick > "$OUT/parts${n}_quick.log" 2>&1
    sum+=("decode --quick, $n parts forced rc=$? $(count "$OUT/parts${n}_quick.log")")
    grep '^\[FAIL\]' "$OUT/parts${n}_quick.log" | head -5
  done
  LD_LIBRARY_PATH=$C timeout 150 "$T" --quick --variants auto,0,4,0f,4c > "$OUT/rule_quick.log" 2>&1
  sum+=("decode --quick auto,0,4,0f,4c, rule rc=$? $(count "$OUT/rule_quick.log")")
  SAMEBITS_LIBRARY=$C/libsamebits.so timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider \
    -k "decode or kvcache" > "$OUT/pytest.log" 2>&1
  sum+=("pytest test_cuda -k decode or kvcache rc=$? $(tail -1 "$OUT/pytest.log")")
  printf '%s\n' "${sum[@]}"
fi
SH=${SHAPES:-1x16384,1x32768,1x131072,2x32768,4x32768,1x4096,8x8192}
for r in $(seq 1 ${ROUNDS:-2}); do
  for lib in old new; do
    L=$C; [ $lib = old ] && L=$OLDC
    mkdir -p "$OUT/r$r/p$lib"
    SAMEBITS_LIBRARY=$L/libsamebits.so timeout 200 python3 bench/bench_decode.py --out "$OUT/r$r/p$lib" --graph \
      --captures 2 --reps 15 --no-flex --shapes "$SH" > "$OUT/r$r/p$lib.log" 2>&1
    sum+=("bench round $r $lib rc=$?")
  done
done
python3 bench/decode_rounds_table.py "$OUT" "pold = the library before, pnew = the combine's load loop by shift and mask" 'p*' \
  | tee "$OUT/table.md"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
