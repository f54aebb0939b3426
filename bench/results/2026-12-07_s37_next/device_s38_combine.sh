#!/usr/bin/env bash
# Prepared device call (thirty-seventh session, not run): the combine with
# more chunk buffers where a few rows see many splits
# (decode_combine_stages.patch; library .carry/s37comb = main 0a31b49's src +
# the patch) against main's library (.carry/s37fin). Bits: the decode suite
# (its 128k case folds 8 chunks a row: 4 buffers by the rule), again with
# SAMEBITS_DECODE_COMBINE_STAGES=3 and =8, and --quick with =2 (main's
# buffering); pytest's decode tests; then bench_decode --graph at the shapes
# of many splits (and 1 x 32k, one chunk: the control), 2 rounds rotated.
# ~3 min. carry [".carry/s37comb", ".carry/s37fin"]:
#   bash bench/results/2026-12-07_s37_next/device_s38_combine.sh
set -uo pipefail
export CARRY=.carry/s37comb
source bench/device_common.sh
T="$C/test_attention_decode_sm90"
chmod +x "$T"
B=$OUT/bits
mkdir -p "$B"
for st in rule 3 8; do
  E=(); [ $st != rule ] && E=(SAMEBITS_DECODE_COMBINE_STAGES=$st)
  env "${E[@]}" LD_LIBRARY_PATH=$C timeout 150 "$T" > "$B/suite_$st.log" 2>&1
  echo "== suite, stages $st rc=$? $(count "$B/suite_$st.log")"
done
SAMEBITS_DECODE_COMBINE_STAGES=2 LD_LIBRARY_PATH=$C timeout 60 "$T" --quick > "$B/quick_2.log" 2>&1
echo "== --quick, stages 2 rc=$? $(count "$B/quick_2.log")"
grep -h '^\[FAIL\]' "$B"/*.log | head -5
gzip "$B"/*.log
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache" > "$OUT/pytest_decode.log" 2>&1
echo "== pytest decode rc=$? $(tail -1 "$OUT/pytest_decode.log")"
LIBS="main=.carry/s37fin comb=.carry/s37comb comb8=.carry/s37comb:SAMEBITS_DECODE_COMBINE_STAGES=8" ROUNDS=2 CARRY=.carry/s37comb \
  SHAPES=1x131072,1x65536,2x65536,4x32768,1x32768 OUT=$OUT/dec bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
cd "$OUT" && tar czf /tmp/all.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
