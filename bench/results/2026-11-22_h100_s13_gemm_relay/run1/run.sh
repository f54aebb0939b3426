#!/usr/bin/env bash
# device: branch gemm-relay (cluster entries release stages through a relay warp; new m2 entries):
# every CUDA test, verify, bench_dense's GEMM checks, bits against main's library, then a sweep of the
# entries and their m2 twins (new library) and of the m2 entries before the relay (main's library)
set -uo pipefail
sum=()
C=$PWD/.carry/rl1
FINAL=$OUT; OUT=$(mktemp -d); trap 'tar czf $FINAL/all.tgz -C $OUT . ; printf "%s\n" "${sum[@]}" > $FINAL/summary.txt' EXIT
xz -d -k -f $C/libsamebits.so.xz; xz -d -k -f $C/old/libsamebits.so.xz
PYENV=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
sha256sum $C/libsamebits.so $C/old/libsamebits.so > $OUT/lib_sha256.txt
cp $0 $OUT/run.sh
FULL=1
source bench/gemm_device_checks.sh
gemm_python_checks
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$C/old/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/gemm_bits_$v.json" > "$OUT/gemm_bits_$v.log" 2>&1
done
python3 bench/gemm_bits_dump.py compare "$OUT/gemm_bits_old.json" "$OUT/gemm_bits_new.json" > "$OUT/gemm_bits_compare.log" 2>&1
sum+=("gemm bits vs old library rc=$? $(tail -1 "$OUT/gemm_bits_compare.log")")
MS=${MS:-128,192,256,384,512,640,768,1024,1152,1280,1536}
SH=${SH:-4096x4096,4096x14336,14336x4096}
mkdir -p $OUT/new $OUT/old
"${PYENV[@]}" timeout 330 python3 bench/profile_kernels.py --only gemm --reps 5 --out $OUT/new --gemm-tiles "${TILES:-128x128,128x128m2,128x256,128x256m2,128x192,128x192m2,128x160,128x160m2,128x96,128x96m2,192x192,256x160,128x224}" --gemm-ms "$MS" --gemm-shapes "$SH" > $OUT/new/log 2>&1
sum+=("sweep new rc=$?")
SAMEBITS_LIBRARY=$C/old/libsamebits.so PYTHONPATH=$PWD/python timeout 150 python3 bench/profile_kernels.py --only gemm --reps 5 --out $OUT/old --gemm-tiles 128x128m2,128x256m2 --gemm-ms "$MS" --gemm-shapes "$SH" > $OUT/old/log 2>&1
sum+=("sweep old rc=$?")
printf '%s\n' "${sum[@]}"
