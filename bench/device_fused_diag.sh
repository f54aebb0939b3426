#!/usr/bin/env bash
# One device call: where the fused backward's time goes (d 128 bf16 C
# bench). The fused build (CARRY, -DSAMEBITS_BWD_FUSED=ON) with
# SAMEBITS_BWD_FUSED_DIAG = 0 (as built), 3 (no ordering wait, no bulk
# reduction), 7 (also no f32 partial stored to shared memory), 15 (also no
# dQ product), 8 (no dQ product only), beside the default three-pass build
# (DEFAULT), alternated ROUNDS times (default 2). The diagnostic forms give
# wrong dq: timing only.
CARRY=${CARRY:-.carry/s22f}
source bench/device_common.sh
D=$PWD/${DEFAULT:-.carry/s22d}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$D/libsamebits.so.xz" "$D/libsamebits.so"
cp "$0" "$OUT/run.sh"
for r in $(seq 1 "${ROUNDS:-2}"); do
  BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$D timeout 90 "$D/test_attention_bwd_sm90" --bench-only > "$OUT/def_$r.log" 2>&1
  for d in ${DIAGS:-0 3 7 15 8}; do
    SAMEBITS_BWD_FUSED_DIAG=$d BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$C timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/diag${d}_$r.log" 2>&1
  done
done
for f in "$OUT"/def_*.log "$OUT"/diag*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done | tee "$OUT/bench.txt"
tar czf /tmp/fd_logs.tgz -C "$OUT" . && mv /tmp/fd_logs.tgz "$OUT/logs.tgz" && rm -f "$OUT"/def_*.log "$OUT"/diag*.log
# The backward test (its new seqused_k case among them) on the default
# library (the test binary of this tree; the library of the default build).
LD_LIBRARY_PATH=$D timeout 300 "$D/test_attention_bwd_sm90" > "$OUT/def_test.log" 2>&1
sum+=("default test rc=$? $(count "$OUT/def_test.log") $(hashes "$OUT/def_test.log")")
grep -E "seqused|FAIL" "$OUT/def_test.log" | head -40 > "$OUT/def_test_seqused.txt"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
