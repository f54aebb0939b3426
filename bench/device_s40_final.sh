#!/usr/bin/env bash
# One device call (fortieth session): the library of main with 1) the small-M
# GEMM entries' mma.sync consumer pipelined by one k tile, 2) the 16x112s
# entry and the rule's pick of it (M <= 16 where it makes one round and
# 16x64s does not: N = 14336), 3) the decode bound for two CTAs an SM read
# from the card's memory clock (64 pass-1 CTAs below 3 GHz, 96 above).
# Bits: the decode suite --quick with variants auto, 0, 4, 8; pytest's
# decode, GEMM and batch-invariance tests; the GEMM table's bitwise check.
# Speed: issue 6's 76 GEMM points against cuBLAS (two tables); the decode bound at 64-96
# CTAs beside the two fixed bounds (.carry/s38rule: 64, .carry/s39mma: 96).
# ~5 min. carry [CARRY (default .carry/s40fin), ".carry/s38rule",
# ".carry/s39mma"]; packs $OUT/all.tgz.
export CARRY=${CARRY:-.carry/s40fin}
source bench/device_common.sh  # $C, $OUT, the library decompressed, gpu.txt, count()
K=$CARRY
L=$C/libsamebits.so
nvidia-smi --query-gpu=clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/gpu.txt"
python3 -c "import torch; print('memory_clock_rate (kHz):', torch.cuda.get_device_properties(0).memory_clock_rate)"
chmod +x "$C/test_attention_decode_sm90"
LD_LIBRARY_PATH=$C timeout 100 "$C/test_attention_decode_sm90" --quick --variants auto,0,4,8 > "$OUT/decode_quick.log" 2>&1
echo "== decode --quick --variants auto,0,4,8 rc=$? $(count "$OUT/decode_quick.log")"
export PYTHONPATH=$PWD/python:$PWD/bench
SAMEBITS_LIBRARY=$L timeout 200 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py \
  tests/python/test_invariance.py -q -p no:cacheprovider -k "decode or gemm or linear or batch_invariant" \
  > "$OUT/pytest.log" 2>&1
echo "== pytest rc=$? $(tail -1 "$OUT/pytest.log")"
for r in 1 2; do
  SAMEBITS_LIBRARY=$L timeout 170 python3 bench/gemm_cluster_probe.py --configs default --issue6 \
    --reps 11 --captures 2 --out "$OUT/table$r.json" > "$OUT/table$r.log" 2>&1
  echo "== GEMM table $r rc=$? $(tail -2 "$OUT/table$r.log" | tr "\n" " ")"
done
LIBS="card=$K b64=.carry/s38rule b96=.carry/s39mma" ROUNDS=2 CARRY=$K OUT=$OUT/dec \
  SHAPES=1x8192,4x2048,8x1024,1x12288 timeout 150 bash bench/device_s34_ab.sh 2>&1 | grep -E "^== ab"
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
