#!/usr/bin/env bash
# device: final check of branch gemm-widths: every CUDA test, verify, bench_dense's GEMM checks, bits against
# main's library, kernel times of the default choice (new and old library) beside cuBLAS
set -uo pipefail
sum=()
C=$PWD/.carry/gw6
FINAL=$OUT; OUT=$(mktemp -d); trap 'tar czf $FINAL/all.tgz -C $OUT . ; printf "%s\n" "${sum[@]}" > $FINAL/summary.txt' EXIT
xz -d -k -f $C/libsamebits.so.xz; xz -d -k -f $C/old/libsamebits.so.xz
PYENV=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
sha256sum $C/libsamebits.so $C/old/libsamebits.so > $OUT/lib_sha256.txt
FULL=1
source bench/gemm_device_checks.sh
gemm_python_checks
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$C/old/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/gemm_bits_$v.json" > "$OUT/gemm_bits_$v.log" 2>&1
done
python3 bench/gemm_bits_dump.py compare "$OUT/gemm_bits_old.json" "$OUT/gemm_bits_new.json" > "$OUT/gemm_bits_compare.log" 2>&1
sum+=("gemm bits vs old library rc=$? $(tail -1 "$OUT/gemm_bits_compare.log")")
MS=${MS:-640,1152,1280,1536,4096}
SH=${SH:-4096x4096,4096x14336}
mkdir -p $OUT/new $OUT/old
"${PYENV[@]}" timeout 240 python3 bench/profile_kernels.py --only gemm --reps 5 --out $OUT/new --gemm-ms "$MS" --gemm-shapes "$SH" > $OUT/new/log 2>&1
sum+=("profile new rc=$?")
SAMEBITS_LIBRARY=$C/old/libsamebits.so PYTHONPATH=$PWD/python timeout 200 python3 bench/profile_kernels.py --only gemm --reps 5 --out $OUT/old --gemm-ms "$MS" --gemm-shapes "$SH" > $OUT/old/log 2>&1
sum+=("profile old rc=$?")
printf '%s\n' "${sum[@]}"
