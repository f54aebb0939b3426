#!/usr/bin/env bash
# The forty-first session's first device call (devices were scarce: one
# call for all the session's prepared work), the
# library .carry/s41all (main + the decode spread fold of two splits + the
# 112-column GEMM entries + the RMSNorm measurement build) beside
# .carry/s41w112 (main + the GEMM entries only: main's decode and rows).
# In order of need: the decode suite --quick (variants auto, 0, 4, 8); the
# decode fold against no fold (SAMEBITS_DECODE_FOLD=0) and main, two rounds;
# pytest (decode, GEMM, linear, batch invariance, rms); rows_dw_probe, each
# library once (the new one with the old order and the DIAG knobs); the
# 112-column entries once; the row-op bits of both libraries. Every step
# under its own timeout. carry [".carry/s41all", ".carry/s41w112", ".carry/tools"].
export CARRY=${CARRY:-.carry/s41all}
source bench/device_common.sh
L=$C/libsamebits.so
O=$PWD/.carry/s41w112
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$O/libsamebits.so.xz" "$O/libsamebits.so"
python3 -c "import torch; print('memory_clock_rate (kHz):', torch.cuda.get_device_properties(0).memory_clock_rate)"
.carry/tools/cluster_occupancy 128 $((112 * 1024)) > "$OUT/cluster_occupancy.txt" 2>&1
grep -E "cluster +(8|16):" "$OUT/cluster_occupancy.txt" | sed "s/^/== /"
chmod +x "$C/test_attention_decode_sm90"
LD_LIBRARY_PATH=$C timeout 120 "$C/test_attention_decode_sm90" --quick --variants auto,0,4,8 > "$OUT/decode_quick.log" 2>&1
echo "== decode --quick --variants auto,0,4,8 rc=$? $(count "$OUT/decode_quick.log")"
grep "^\[FAIL\]" "$OUT/decode_quick.log" | head -5 | cut -c1-300
LIBS="fold=.carry/s41all nofold=.carry/s41all:SAMEBITS_DECODE_FOLD=0 main=.carry/s41w112" ROUNDS=2 CARRY=.carry/s41all \
  OUT=$OUT/dec SHAPES=1x2048,1x1536,2x1024 timeout 130 bash bench/device_s34_ab.sh 2>&1 | grep -E "^== ab|rc=|^\| 1 |^\| 2 "
export PYTHONPATH=$PWD/python:$PWD/bench
SAMEBITS_LIBRARY=$L timeout 150 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py \
  tests/python/test_invariance.py -q -p no:cacheprovider -k "decode or gemm or linear or batch_invariant or rms" \
  > "$OUT/pytest.log" 2>&1
echo "== pytest rc=$? $(tail -1 "$OUT/pytest.log")"
X=late:SAMEBITS_RMSNORM_DW_EARLY=0,diag1:SAMEBITS_RMSNORM_DIAG=1,diag2:SAMEBITS_RMSNORM_DIAG=2,diag4:SAMEBITS_RMSNORM_DIAG=4,diag6:SAMEBITS_RMSNORM_DIAG=6
for v in new old; do
  LL=$L; E=(--extra "$X"); [ $v = old ] && LL=$O/libsamebits.so && E=()
  SAMEBITS_LIBRARY=$LL timeout 90 python3 bench/rows_dw_probe.py --out "$OUT/dw_$v.json" --ms 4096,8192 --ns 8192 \
    --reps 11 "${E[@]}" > "$OUT/dw_$v.log" 2>&1
  echo "== rows $v rc=$?"; cat "$OUT/dw_$v.log"
done
S=64x14336x4096,128x14336x4096,192x14336x4096,64x14336x14336
SAMEBITS_LIBRARY=$L timeout 60 python3 bench/gemm_cluster_probe.py --configs default \
  --tiles 64x128,64x112,128x128,128x112,192x128w3,192x112w3 --shapes $S --reps 11 --captures 2 \
  --out "$OUT/w112.json" > "$OUT/w112.log" 2>&1
echo "== w112 rc=$?"; grep -v "^#" "$OUT/w112.log" | tail -6
for v in new old; do
  LL=$L; [ $v = old ] && LL=$O/libsamebits.so
  SAMEBITS_LIBRARY=$LL PYTHONPATH=python timeout 60 python3 bench/rows_bits_dump.py dump "$OUT/rows_bits_$v.json" > "$OUT/rows_bits_$v.log" 2>&1
done
python3 bench/rows_bits_dump.py compare "$OUT/rows_bits_old.json" "$OUT/rows_bits_new.json" 2>&1 | tail -2 | sed "s/^/== rows bits /"
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
