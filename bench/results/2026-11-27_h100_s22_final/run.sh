#!/usr/bin/env bash
# One device call, the session's final library (CARRY, default
# .carry/s22d: the default build of HEAD and its forward / backward test
# binaries): both C tests in full (hashes), the Python CUDA tests
# (test_cuda, test_backward_workspace, test_dense, test_flash_interface)
# and `samebits verify --device cuda`.
CARRY=${CARRY:-.carry/s22d}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
for t in fwd bwd; do
  LD_LIBRARY_PATH=$C timeout 400 "$C/test_attention_${t}_sm90" > "$OUT/${t}_test.log" 2>&1
  sum+=("$t test rc=$? $(count "$OUT/${t}_test.log") $(hashes "$OUT/${t}_test.log")")
done
PY=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
"${PY[@]}" timeout 400 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py \
  tests/python/test_dense.py tests/python/test_flash_interface.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
sum+=("pytest rc=$? $(tail -1 "$OUT/pytest.log")")
"${PY[@]}" timeout 300 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -2 "$OUT/verify.log" | tr '\n' ' ')")
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
