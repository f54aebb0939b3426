#!/bin/bash
# Builds bench/cutlass_probe/libsbcutlass.so (CUTLASS headers from the
# nvidia-cutlass wheel in $CUTLASS_DIR/include). Bench only.
set -euo pipefail
cd "$(dirname "$0")"
INC=${CUTLASS_DIR:?set CUTLASS_DIR to .../cutlass_library/source}
F="-O3 -DNDEBUG -std=c++17 --expt-relaxed-constexpr -Xcompiler=-fPIC -gencode=arch=compute_90a,code=sm_90a -I$INC/include -I$INC/tools/util/include"
mkdir -p obj
pids=()
for c in ${CFGS:-0 1 2 3 4 5 6 7 8 9}; do
  nvcc $F -DSBC_CFG=$c -c probe.cu -o obj/cfg$c.o &
  pids+=($!)
  if [ ${#pids[@]} -ge ${JOBS:-2} ]; then wait ${pids[0]}; pids=("${pids[@]:1}"); fi
done
wait
nvcc $F -DSBC_DISPATCH -c probe.cu -o obj/dispatch.o
nvcc -shared -o libsbcutlass.so obj/*.o -lcuda
