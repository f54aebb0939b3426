#!/usr/bin/env bash
# One device call (forty-first session): main's library with the three
# forced-only 112-column wgmma entries (gemm_w112.patch of
# bench/results/2026-12-07_s40_next/; the rule never picks them, so every
# default launch is main's). Checks: the memory clock the decode rule reads,
# the decode suite --quick (variants auto, 0, 4, 8), pytest's decode, GEMM,
# linear and batch-invariance tests (the new entries forced among the
# others). Speed: the 112-column entries beside the 128-column ones of the
# same height at N = 14336 (two rounds), then issue 6's 76 GEMM points
# (TABLES times, default 2). ~5 min. carry [CARRY (default .carry/s41w112),
# ".carry/tools"]; packs $OUT/all.tgz.
export CARRY=${CARRY:-.carry/s41w112}
source bench/device_common.sh  # $C, $OUT, the library decompressed, gpu.txt, count()
L=$C/libsamebits.so
nvidia-smi --query-gpu=clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/gpu.txt"
python3 -c "import torch; print('memory_clock_rate (kHz):', torch.cuda.get_device_properties(0).memory_clock_rate)"
.carry/tools/cluster_occupancy 160 $((112 * 1024)) > "$OUT/cluster_occupancy.txt" 2>&1
grep -E "cluster +(8|16):" "$OUT/cluster_occupancy.txt" | sed "s/^/== /"
chmod +x "$C/test_attention_decode_sm90"
LD_LIBRARY_PATH=$C timeout 100 "$C/test_attention_decode_sm90" --quick --variants auto,0,4,8 > "$OUT/decode_quick.log" 2>&1
echo "== decode --quick --variants auto,0,4,8 rc=$? $(count "$OUT/decode_quick.log")"
export PYTHONPATH=$PWD/python:$PWD/bench
SAMEBITS_LIBRARY=$L timeout 200 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py \
  tests/python/test_invariance.py -q -p no:cacheprovider -k "decode or gemm or linear or batch_invariant" \
  > "$OUT/pytest.log" 2>&1
echo "== pytest rc=$? $(tail -1 "$OUT/pytest.log")"
S=48x14336x4096,64x14336x4096,96x14336x4096,128x14336x4096,160x14336x4096,192x14336x4096,64x14336x14336,192x4096x14336
for r in 1 2; do
  SAMEBITS_LIBRARY=$L timeout 120 python3 bench/gemm_cluster_probe.py --configs default \
    --tiles 64x128,64x112,128x128,128x112,192x128w3,192x112w3 --shapes $S --reps 11 --captures 2 \
    --out "$OUT/w112_$r.json" > "$OUT/w112_$r.log" 2>&1
  echo "== w112 round $r rc=$?"; grep -v "^#" "$OUT/w112_$r.log" | tail -12
done
for r in $(seq 1 "${TABLES:-2}"); do
  SAMEBITS_LIBRARY=$L timeout 170 python3 bench/gemm_cluster_probe.py --configs default --issue6 \
    --reps 11 --captures 2 --out "$OUT/table$r.json" > "$OUT/table$r.log" 2>&1
  echo "== GEMM table $r rc=$? $(tail -2 "$OUT/table$r.log" | tr "\n" " ")"
done
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
