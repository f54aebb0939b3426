#!/usr/bin/env bash
# One device call, after device_fused_diag.sh: (1) the backward test's
# seqused_k cases (--seqused) on the default library, with per-sequence
# counts of differing elements; (2) the fused build (CARRY) with every dQ
# step off (SAMEBITS_BWD_FUSED_DIAG=15), also without the G buffers' named
# barriers (31), without the G^T stores (47), without both (63), beside the
# default three-pass build (DEFAULT), d 128 bf16 C bench, ROUNDS rounds;
# (3) the default build's kernel times at 4k and 16k (profile_kernels.py).
CARRY=${CARRY:-.carry/s22f}
source bench/device_common.sh
D=$PWD/${DEFAULT:-.carry/s22d}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$D/libsamebits.so.xz" "$D/libsamebits.so"
cp "$0" "$OUT/run.sh"
LD_LIBRARY_PATH=$D timeout 200 "$D/test_attention_bwd_sm90" --seqused > "$OUT/seqused_default.log" 2>&1
sum+=("seqused default rc=$? $(count "$OUT/seqused_default.log")")
for r in $(seq 1 "${ROUNDS:-2}"); do
  BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$D timeout 90 "$D/test_attention_bwd_sm90" --bench-only > "$OUT/def_$r.log" 2>&1
  for d in ${DIAGS:-15 31 47 63}; do
    SAMEBITS_BWD_FUSED_DIAG=$d BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$C timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/diag${d}_$r.log" 2>&1
  done
done
for f in "$OUT"/def_*.log "$OUT"/diag*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
mkdir -p "$OUT/profile"
SAMEBITS_LIBRARY=$D/libsamebits.so PYTHONPATH=python:bench timeout 240 python3 bench/profile_kernels.py --only bwd \
  --bwd-lengths 4096,16384 --out "$OUT/profile" > "$OUT/profile/profile.log" 2>&1
sum+=("profile rc=$?")
grep -E "^bwd|^\s+\[" "$OUT/profile/profile.log" | cut -c1-130 >> "$OUT/bench.txt"
tar czf /tmp/fd2_logs.tgz -C "$OUT" . && mv /tmp/fd2_logs.tgz "$OUT/logs.tgz" && rm -rf "$OUT"/def_*.log "$OUT"/diag*.log "$OUT/profile"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
