#!/usr/bin/env bash
# device: GEMM entries 192x192, 256x160, 128x96, 64x96 and the cost rule (branch gemm-widths): bits, then a sweep
set -uo pipefail
sum=()
C=$PWD/.carry/gw3
FINAL=$OUT; OUT=$(mktemp -d); trap 'tar czf $FINAL/all.tgz -C $OUT . ; printf "%s\n" "${sum[@]}" > $FINAL/summary.txt' EXIT
xz -d -k -f $C/libsamebits.so.xz; xz -d -k -f $C/old/libsamebits.so.xz
PYENV=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
sha256sum $C/libsamebits.so $C/old/libsamebits.so > $OUT/lib_sha256.txt
source bench/gemm_device_checks.sh
gemm_python_checks
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$C/old/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/gemm_bits_$v.json" > "$OUT/gemm_bits_$v.log" 2>&1
done
python3 bench/gemm_bits_dump.py compare "$OUT/gemm_bits_old.json" "$OUT/gemm_bits_new.json" > "$OUT/gemm_bits_compare.log" 2>&1
sum+=("gemm bits vs old library rc=$? $(tail -1 "$OUT/gemm_bits_compare.log")")
MS=${MS:-128,192,256,384,512,640,768,896,1024,1152,1280,1536,1792,2048,4096}
SH=${SH:-4096x4096,14336x4096,4096x14336}
mkdir -p $OUT/new $OUT/old
"${PYENV[@]}" timeout 300 python3 bench/profile_kernels.py --only gemm --reps 5 --out $OUT/new --gemm-tiles "${TILES:-192x192,256x160,128x96,64x96,128x256,128x224,128x192,128x160,128x128,64x128,128x128m2,128x256m2}" --gemm-ms "$MS" --gemm-shapes "$SH" > $OUT/new/log 2>&1
sum+=("sweep new rc=$?")
SAMEBITS_LIBRARY=$C/old/libsamebits.so PYTHONPATH=$PWD/python timeout 120 python3 bench/profile_kernels.py --only gemm --reps 5 --out $OUT/old --gemm-ms "$MS" --gemm-shapes "$SH" > $OUT/old/log 2>&1
sum+=("sweep old rc=$?")
printf '%s\n' "${sum[@]}"
