#!/usr/bin/env bash
# One device call, the session's final library (CARRY, default
# .carry/s24f: the default build of HEAD and its test binaries): the whole
# backward C test (hashes) and --seqused, compute-sanitizer memcheck and
# racecheck on its --small cases, the forward C test, the Python CUDA tests
# (test_cuda, test_backward_workspace, test_dense, test_flash_interface),
# `samebits verify --device cuda`, then the backward through PyTorch beside
# cuDNN and flash (deterministic) at head dims PY_DIMS (default 64,128),
# and the library before the session (BEFORE) alone in the same call.
# SLIM=1: only the backward C test, memcheck, the Python backward tests
# (test_cuda, test_backward_workspace) and the PyTorch comparison.
CARRY=${CARRY:-.carry/s24f}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
B=$PWD/${BEFORE:-.carry/s23ad}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$B/libsamebits.so.xz" "$B/libsamebits.so"
T=$C/test_attention_bwd_sm90
LD_LIBRARY_PATH=$C timeout 300 $T > /tmp/bwd_test.log 2>&1
sum+=("bwd test rc=$? $(count /tmp/bwd_test.log) $(hashes /tmp/bwd_test.log)")
SLIM=${SLIM:-0}
if [ "$SLIM" != 1 ]; then
LD_LIBRARY_PATH=$C timeout 200 $T --seqused > /tmp/seqused.log 2>&1
sum+=("bwd seqused rc=$? $(count /tmp/seqused.log)")
fi
tools="memcheck racecheck"; [ "$SLIM" = 1 ] && tools=memcheck
for tool in $tools; do
  LD_LIBRARY_PATH=$C timeout 200 compute-sanitizer --tool $tool $T --small > /tmp/$tool.log 2>&1
  sum+=("bwd $tool rc=$? $(count /tmp/$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/$tool.log | tr '\n' ' ')")
done
PY=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
if [ "$SLIM" != 1 ]; then
LD_LIBRARY_PATH=$C timeout 300 "$C/test_attention_fwd_sm90" > /tmp/fwd_test.log 2>&1
sum+=("fwd test rc=$? $(count /tmp/fwd_test.log) $(hashes /tmp/fwd_test.log)")
"${PY[@]}" timeout 400 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py \
  tests/python/test_dense.py tests/python/test_flash_interface.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
sum+=("pytest rc=$? $(tail -1 "$OUT/pytest.log")")
"${PY[@]}" timeout 300 python3 -m samebits.cli verify --device cuda > /tmp/verify.log 2>&1
sum+=("verify rc=$? $(tail -2 /tmp/verify.log | tr '\n' ' ')")
else
"${PY[@]}" timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py \
  -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
sum+=("pytest rc=$? $(tail -1 "$OUT/pytest.log")")
fi
"${PY[@]}" timeout 300 python3 bench/bench_attention_backward.py --out "$OUT/peers" --reps 10 \
  --dims ${PY_DIMS:-64,128} --no-flex --impls samebits,cudnn,flash_det > /tmp/peers.log 2>&1
sum+=("peers rc=$?")
SAMEBITS_LIBRARY=$B/libsamebits.so PYTHONPATH=$PWD/python timeout 200 python3 bench/bench_attention_backward.py \
  --out "$OUT/before" --reps 10 --dims ${PY_DIMS:-64,128} --no-flex --impls samebits > /tmp/before.log 2>&1
sum+=("before rc=$?")
[ -f "$OUT/peers/bench_attention_backward.md" ] && cp "$OUT/peers/bench_attention_backward.md" "$OUT/peers.md"
for v in peers before; do [ -f "$OUT/$v/bench_attention_backward.json" ] && cp "$OUT/$v/bench_attention_backward.json" "$OUT/$v.json"; done
rm -rf "$OUT/peers" "$OUT/before"
sum+=("$(tail -2 /tmp/peers.log /tmp/before.log | tr "\n" " ")")
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
exit 0
