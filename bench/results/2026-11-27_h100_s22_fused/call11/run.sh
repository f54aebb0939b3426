#!/usr/bin/env bash
# One device call: the fused backward with its own tile order (F, the
# 14th session's: both score products waited for before the element loop)
# against the same kernel calling the three passes' DkdvKernel::tile_raw
# (V, -DSAMEBITS_BWD_FUSED_V2_TILE=1), each as built and with every dQ
# step off (SAMEBITS_BWD_FUSED_DIAG=63), beside the default build (D). The
# V build's backward test first (the fused d128 hashes should be F's).
# d 128 bf16 C bench, ROUNDS rounds (default 2).
CARRY=${CARRY:-.carry/s22d}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
declare -A L=([d]=$PWD/.carry/s22d [f]=$PWD/.carry/s22f [v]=$PWD/.carry/s22v)
for k in d f v; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "${L[$k]}/libsamebits.so.xz" "${L[$k]}/libsamebits.so"
done
LD_LIBRARY_PATH=${L[v]} timeout 300 "${L[v]}/test_attention_bwd_sm90" > "$OUT/v_test.log" 2>&1
sum+=("V test rc=$? $(count "$OUT/v_test.log") $(hashes "$OUT/v_test.log")")
for r in $(seq 1 "${ROUNDS:-2}"); do
  BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[d]} timeout 90 "${L[d]}/test_attention_bwd_sm90" --bench-only > "$OUT/d_$r.log" 2>&1
  for k in f v; do
    for dg in 0 63; do
      SAMEBITS_BWD_FUSED_DIAG=$dg BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[$k]} timeout 90 \
        "${L[$k]}/test_attention_bwd_sm90" --bench-only > "$OUT/${k}_diag${dg}_$r.log" 2>&1
    done
  done
done
for f in "$OUT"/d_*.log "$OUT"/f_*.log "$OUT"/v_diag*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
tar czf /tmp/ft_logs.tgz -C "$OUT" . && mv /tmp/ft_logs.tgz "$OUT/logs.tgz" && rm -f "$OUT"/d_*.log "$OUT"/f_*.log "$OUT"/v_diag*.log
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
