#!/usr/bin/env bash
# One device call, the session's final library (CARRY, default
# .carry/s23ad: the default build of HEAD and its test binaries): the
# forward C test (hashes), the Python CUDA tests (test_cuda,
# test_backward_workspace, test_dense, test_flash_interface), `samebits
# verify --device cuda`, then the backward through PyTorch beside cuDNN and
# flash (deterministic) at head dims PY_DIMS (default 64,128,256), and the
# library before the session's producer change (BEFORE) alone in the same
# call.
CARRY=${CARRY:-.carry/s23ad}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
B=$PWD/${BEFORE:-.carry/s23d}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$B/libsamebits.so.xz" "$B/libsamebits.so"
LD_LIBRARY_PATH=$C timeout 300 "$C/test_attention_fwd_sm90" > "$OUT/fwd_test.log" 2>&1
sum+=("fwd test rc=$? $(count "$OUT/fwd_test.log") $(hashes "$OUT/fwd_test.log")")
PY=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
"${PY[@]}" timeout 400 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py \
  tests/python/test_dense.py tests/python/test_flash_interface.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
sum+=("pytest rc=$? $(tail -1 "$OUT/pytest.log")")
"${PY[@]}" timeout 300 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -2 "$OUT/verify.log" | tr '\n' ' ')")
"${PY[@]}" timeout 300 python3 bench/bench_attention_backward.py --out "$OUT/peers" --reps 10 \
  --dims ${PY_DIMS:-64,128,256} --no-flex --impls samebits,cudnn,flash_det > "$OUT/peers.log" 2>&1
sum+=("peers rc=$?")
SAMEBITS_LIBRARY=$B/libsamebits.so PYTHONPATH=$PWD/python timeout 200 python3 bench/bench_attention_backward.py \
  --out "$OUT/before" --reps 10 --dims ${PY_DIMS:-64,128,256} --no-flex --impls samebits > "$OUT/before.log" 2>&1
sum+=("before rc=$?")
for v in peers before; do [ -f "$OUT/$v/bench_attention_backward.md" ] && cp "$OUT/$v/bench_attention_backward.md" "$OUT/$v.md"; done
for v in peers before; do [ -f "$OUT/$v/bench_attention_backward.json" ] && cp "$OUT/$v/bench_attention_backward.json" "$OUT/$v.json"; done
rm -rf "$OUT/peers" "$OUT/before"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
exit 0
