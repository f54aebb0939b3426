#!/usr/bin/env bash
# One device call (forty-first session), the library .carry/s41all: main with
# 1) the decode spread schedule's two splits folded in one cluster of 16
#    (DecodeSpread<..., 2>::fold_split_pair; SAMEBITS_DECODE_FOLD=0 turns it
#    off in the same library),
# 2) the three forced-only 112-column wgmma entries (gemm_w112.patch),
# 3) the RMSNorm dx + dw measurement build (rmsnorm_early_diag.patch).
# Checks: the memory clock, clusters of 8 / 16 resident for the spread's
# shared memory, the decode suite --quick (variants auto, 0, 4, 8), pytest's
# decode, GEMM, linear, batch-invariance and RMSNorm tests. Speed: decode at
# one and two splits with the fold and without (and main's library,
# .carry/s41w112), two rounds; the 112-column entries at N = 14336; issue
# 6's 76 GEMM points once. ~5.5 min. carry [".carry/s41all", ".carry/s41w112",
# ".carry/tools"].
export CARRY=${CARRY:-.carry/s41all}
source bench/device_common.sh
L=$C/libsamebits.so
nvidia-smi --query-gpu=clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/gpu.txt"
python3 -c "import torch; print('memory_clock_rate (kHz):', torch.cuda.get_device_properties(0).memory_clock_rate)"
.carry/tools/cluster_occupancy 128 $((112 * 1024)) > "$OUT/cluster_occupancy.txt" 2>&1
grep -E "^[A-Z]|cluster +(8|16):" "$OUT/cluster_occupancy.txt" | sed "s/^/== /"
chmod +x "$C/test_attention_decode_sm90"
LD_LIBRARY_PATH=$C timeout 120 "$C/test_attention_decode_sm90" --quick --variants auto,0,4,8 > "$OUT/decode_quick.log" 2>&1
echo "== decode --quick --variants auto,0,4,8 rc=$? $(count "$OUT/decode_quick.log")"
grep "^\[FAIL\]" "$OUT/decode_quick.log" | head -5
LIBS="fold=.carry/s41all nofold=.carry/s41all:SAMEBITS_DECODE_FOLD=0 main=.carry/s41w112" ROUNDS=2 CARRY=.carry/s41all \
  OUT=$OUT/dec SHAPES=1x2048,1x1536,1x1024,2x1024 timeout 150 bash bench/device_s34_ab.sh 2>&1 | grep -E "^== ab|rc="
export PYTHONPATH=$PWD/python:$PWD/bench
SAMEBITS_LIBRARY=$L timeout 200 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py \
  tests/python/test_invariance.py -q -p no:cacheprovider -k "decode or gemm or linear or batch_invariant or rms" \
  > "$OUT/pytest.log" 2>&1
echo "== pytest rc=$? $(tail -1 "$OUT/pytest.log")"
S=48x14336x4096,64x14336x4096,96x14336x4096,128x14336x4096,160x14336x4096,192x14336x4096,64x14336x14336,192x4096x14336
SAMEBITS_LIBRARY=$L timeout 80 python3 bench/gemm_cluster_probe.py --configs default \
  --tiles 64x128,64x112,128x128,128x112,192x128w3,192x112w3 --shapes $S --reps 11 --captures 2 \
  --out "$OUT/w112.json" > "$OUT/w112.log" 2>&1
echo "== w112 rc=$?"; grep -v "^#" "$OUT/w112.log" | tail -10
SAMEBITS_LIBRARY=$L timeout 100 python3 bench/gemm_cluster_probe.py --configs default --issue6 \
  --reps 11 --captures 2 --out "$OUT/table1.json" > "$OUT/table1.log" 2>&1
echo "== GEMM table rc=$? $(tail -2 "$OUT/table1.log" | tr "\n" " ")"
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
