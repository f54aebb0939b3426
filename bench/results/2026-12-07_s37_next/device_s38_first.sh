#!/usr/bin/env bash
# Prepared first device call for the next session (written in the
# thirty-seventh, not run): 1) on any GPU, issue 6's 76 GEMM points and
# bench_decode at issue 5's small and large shapes with main's library
# (.carry/s37fin) - on an H200
# these are the first numbers of the lean kernels there; then head dims 64
# and 256 and every sequence one key short of a block at six shapes;
# 2) the RMSNorm thread-pair experiment (device_s37_pair.sh; apply
# rmsnorm_dw_pair.patch to the tree first), cut at 380 s. ~8 min.
# carry [".carry/s37pair", ".carry/s37fin"]; everything packed into $OUT/all.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/out}
L=$PWD/.carry/s37fin/libsamebits.so
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$L.xz" "$L"
export PYTHONPATH=$PWD/python:$PWD/bench
SAMEBITS_LIBRARY=$L timeout 150 python3 bench/gemm_cluster_probe.py --configs default --issue6 \
  --reps 11 --captures 2 --out "$OUT/table.json" > "$OUT/table.log" 2>&1
echo "== GEMM table rc=$? $(tail -1 "$OUT/table.log")"
SAMEBITS_LIBRARY=$L timeout 100 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache" \
  > "$OUT/pytest_decode.log" 2>&1
echo "== pytest decode (the schedules test checks SAMEBITS_DECODE_LEAN=0 too) rc=$? $(tail -1 "$OUT/pytest_decode.log")"
LIBS="main=.carry/s37fin" ROUNDS=1 CARRY=.carry/s37fin OUT=$OUT/dec \
  SHAPES=1x1024,1x2048,1x4096,2x2048,4x1024,1x8192,1x16384,8x2048,1x32768,16x4096,64x4096,1x131072 \
  timeout 150 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
for a in "--head-dim 64" "--head-dim 256" "--short 1"; do
  tag=$(echo "$a" | tr -d ' -')
  LIBS="main=.carry/s37fin" ROUNDS=1 CARRY=.carry/s37fin OUT=$OUT/dec_$tag BD_ARGS="$a" \
    SHAPES=1x1024,1x4096,2x2048,4x1024,8x2048,1x16384 timeout 60 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
done
# the spread schedules at 1-2 x 1k-2k: clusters of 8 (the rule) against 4 (variant 9)
LIBS="s8=.carry/s37fin s4=.carry/s37fin:SAMEBITS_DECODE_VARIANT=9" ROUNDS=2 CARRY=.carry/s37fin OUT=$OUT/dec_spread \
  SHAPES=1x1024,1x2048,2x1024 timeout 60 bash bench/device_s34_ab.sh 2>&1 | grep -E "^==|^\| "
mkdir -p "$OUT/pair"  # last: the longest step, cut at the call's limit
OUT=$OUT/pair timeout 380 bash bench/results/2026-12-07_s37_next/device_s37_pair.sh 2>&1 | tail -40
cd "${OUT%/}" && tar czf /tmp/all.tgz . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
