#!/usr/bin/env bash
# One device call (thirty-eighth session), meant for an H200: main's library
# (.carry/s37fin: the lean twins of the split and fold kernels and the GEMM's
# lean mma.sync kernels) where an H200 last ran decode in the thirtieth
# session and the GEMM table never: 1) the decode C suite --quick (bits);
# 2) issue 6's 76 GEMM points against cuBLAS; 3) bench_decode --graph at
# issue 5's shapes, d 128, then d 64; 4) the rule's large-shape choices
# checked on this GPU: the walk off (SAMEBITS_DECODE_WALK=0) and variant 0
# forced beside the rule. ~7 min. carry [".carry/s37fin"] (or CARRY=<dir>
# and that carry); packs $OUT/all.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/out}
K=${CARRY:-.carry/s37fin}  # one library for every step (CARRY=<dir> to measure another)
C=$PWD/$K
L=$C/libsamebits.so
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$L.xz" "$L"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee "$OUT/gpu.txt"
chmod +x "$C/test_attention_decode_sm90"
LD_LIBRARY_PATH=$C timeout 90 "$C/test_attention_decode_sm90" --quick > "$OUT/decode_quick.log" 2>&1
echo "== decode --quick rc=$? pass=$(grep -c '^\[PASS\]' "$OUT/decode_quick.log") fail=$(grep -c '^\[FAIL\]' "$OUT/decode_quick.log")"
export PYTHONPATH=$PWD/python:$PWD/bench
SAMEBITS_LIBRARY=$L timeout 170 python3 bench/gemm_cluster_probe.py --configs default --issue6 \
  --reps 11 --captures 2 --out "$OUT/table.json" > "$OUT/table.log" 2>&1
echo "== GEMM table rc=$? $(tail -1 "$OUT/table.log")"
LIBS="main=$K" ROUNDS=1 CARRY=$K OUT=$OUT/dec \
  SHAPES=1x1024,1x2048,1x4096,2x2048,4x1024,1x8192,1x16384,8x2048,1x32768,16x4096,64x4096,1x131072 \
  timeout 120 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
LIBS="main=$K" ROUNDS=1 CARRY=$K OUT=$OUT/dec_d64 BD_ARGS="--head-dim 64" \
  SHAPES=1x1024,1x4096,2x2048,4x1024,8x2048,1x16384 timeout 60 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
LIBS="rule=$K nowalk=$K:SAMEBITS_DECODE_WALK=0 v0=$K:SAMEBITS_DECODE_VARIANT=0" \
  ROUNDS=1 CARRY=$K OUT=$OUT/dec_rule SHAPES=16x4096,64x4096,256x4096,4x32768 \
  timeout 100 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
