#!/usr/bin/env bash
# One device call: does the stage count explain the fused kernel's slower
# base? The default build (D) against the same with 2 dK/dV stages at head
# dim 128 instead of 3 (E, -DSB_EXP_STAGES128=2, a measurement build), and
# the fused build with 2 stages (F, its default) against 3 stages and one
# dQ buffer (G, -DSAMEBITS_BWD_FUSED_STAGES=3), the fused ones as built and
# with every dQ step off (SAMEBITS_BWD_FUSED_DIAG=63). d 128 bf16 C bench,
# ROUNDS rounds (default 2).
CARRY=${CARRY:-.carry/s22d}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
declare -A L=([d]=$PWD/.carry/s22d [e]=$PWD/.carry/s22e [f]=$PWD/.carry/s22f [g]=$PWD/.carry/s22g)
for k in d e f g; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "${L[$k]}/libsamebits.so.xz" "${L[$k]}/libsamebits.so"
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for k in d e; do
    BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[$k]} timeout 90 "${L[$k]}/test_attention_bwd_sm90" --bench-only > "$OUT/${k}_$r.log" 2>&1
  done
  for k in f g; do
    for dg in 0 63; do
      SAMEBITS_BWD_FUSED_DIAG=$dg BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[$k]} timeout 90 \
        "${L[$k]}/test_attention_bwd_sm90" --bench-only > "$OUT/${k}_diag${dg}_$r.log" 2>&1
    done
  done
done
for f in "$OUT"/[defg]_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
rm -f "$OUT"/[defg]_*.log
