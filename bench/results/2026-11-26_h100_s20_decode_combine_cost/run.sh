CARRY=.carry/dsk
source bench/device_common.sh
for r in 1 2; do
 for e in 0 1; do
  SAMEBITS_DECODE_SKIP_COMBINE=$e LD_LIBRARY_PATH=$C timeout 120 $C/test_attention_decode_sm90 --bench --graph --variants auto --reps 15 > $OUT/bench_skip${e}_r$r.txt 2>&1
  echo "skip=$e r=$r rc=$?"
 done
done
for e in 0 1; do grep -E "^\|" $OUT/bench_skip${e}_r1.txt | head -40; done
