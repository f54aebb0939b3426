#!/usr/bin/env bash
# One device call: the fused backward (CARRY) with the head-major walk
# (SAMEBITS_BWD_FUSED_BLOCK_MAJOR=0) against the block-major default of
# unmasked batches, each as built (DIAG 0), without the ordering and the
# reductions (3) and without any dQ step (63); beside the default build
# (DEFAULT). d 128 bf16 C bench, ROUNDS rounds (default 1).
CARRY=${CARRY:-.carry/s22f}
source bench/device_common.sh
D=$PWD/${DEFAULT:-.carry/s22d}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$D/libsamebits.so.xz" "$D/libsamebits.so"
cp "$0" "$OUT/run.sh"
for r in $(seq 1 "${ROUNDS:-1}"); do
  BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$D timeout 90 "$D/test_attention_bwd_sm90" --bench-only > "$OUT/def_$r.log" 2>&1
  for bm in 0 1; do
    for d in ${DIAGS:-0 3 63}; do
      SAMEBITS_BWD_FUSED_BLOCK_MAJOR=$bm SAMEBITS_BWD_FUSED_DIAG=$d BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$C timeout 90 \
        "$C/test_attention_bwd_sm90" --bench-only > "$OUT/bm${bm}_diag${d}_$r.log" 2>&1
    done
  done
done
for f in "$OUT"/def_*.log "$OUT"/bm*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
tar czf /tmp/fw_logs.tgz -C "$OUT" . && mv /tmp/fw_logs.tgz "$OUT/logs.tgz" && rm -f "$OUT"/def_*.log "$OUT"/bm*.log
