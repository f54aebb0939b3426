#!/usr/bin/env bash
# One device call: the whole backward test on the fused build FUSED (its
# 50-run hashes), then the d 128 C bench of the default build (CARRY), the
# fused build as built and with every dQ step off (SAMEBITS_BWD_FUSED_DIAG
# = 63), and a reference fused build (REF, as built), ROUNDS rounds.
CARRY=${CARRY:-.carry/s23d}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
F=$PWD/${FUSED:-.carry/s23f} R=$PWD/${REF:-.carry/s22k}
for x in "$F" "$R"; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "$x/libsamebits.so.xz" "$x/libsamebits.so"
done
if [ "${TEST:-1}" = 1 ]; then
  LD_LIBRARY_PATH=$F timeout 300 "$C/test_attention_bwd_sm90" > "$OUT/fused_test.log" 2>&1
  sum+=("fused test rc=$? $(count "$OUT/fused_test.log") $(hashes "$OUT/fused_test.log")")
fi
export BWD_BENCH_DIMS=128
for r in $(seq 1 "${ROUNDS:-2}"); do
  LD_LIBRARY_PATH=$C timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/b_default_$r.log" 2>&1
  LD_LIBRARY_PATH=$F timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/b_fused_$r.log" 2>&1
  SAMEBITS_BWD_FUSED_DIAG=63 LD_LIBRARY_PATH=$F timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/b_fused63_$r.log" 2>&1
  LD_LIBRARY_PATH=$R timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/b_ref_$r.log" 2>&1
  [ -n "${EXTRA:-}" ] && eval "$EXTRA" > "$OUT/b_extra_$r.log" 2>&1
done
for f in "$OUT"/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
rm -f "$OUT"/b_*.log
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
