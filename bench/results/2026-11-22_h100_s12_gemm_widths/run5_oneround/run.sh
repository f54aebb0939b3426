#!/usr/bin/env bash
# device: one-round GEMM shapes, staged against direct epilogue and the cluster entries (library of e8bde48)
set -uo pipefail
C=$PWD/.carry/gw5
FINAL=$OUT; OUT=$(mktemp -d); trap 'tar czf $FINAL/all.tgz -C $OUT .' EXIT
xz -d -k -f $C/libsamebits.so.xz
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python
T="128x96,128x96@direct,128x128,128x128@direct,128x160,128x160@direct,128x192,128x192@direct,128x256m2,128x128m2,@direct"
for sh in "4096x4096 384,512,640,768" "4096x14336 512,640" "14336x4096 384"; do
  set -- $sh; mkdir -p $OUT/$1
  timeout 150 python3 bench/profile_kernels.py --only gemm --reps 7 --out $OUT/$1 --gemm-tiles "$T" --gemm-ms "$2" --gemm-shapes "$1" > $OUT/$1/log 2>&1
  echo "$1 rc=$?"
done
