#!/usr/bin/env bash
# Device check of a change to the backward, in two calls (PART=c, PART=py),
# over two carried builds of the same tree: $CARRY/default (the default
# build) and $CARRY/fused (-DSAMEBITS_BWD_FUSED=ON), each with an
# xz-compressed libsamebits.so and test_attention_bwd_sm90.
#   PART=c:  default: the full backward test with the C bench (its six
#            50-run hashes must be the previous ones); fused: the full test
#            with the d128 C bench, racecheck and memcheck --small.
#   PART=py: default: tests/python/test_cuda.py, test_backward_workspace.py,
#            samebits verify; fused: the same two test files; the peers'
#            backward benchmark (cuDNN, flash deterministic) beside the
#            fused build, then the default build alone.
# Logs and a summary under $OUT.
set -uo pipefail
C=$PWD/${CARRY:-.carry/final}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
sum=()
for v in default fused; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "$C/$v/libsamebits.so.xz" "$C/$v/libsamebits.so"
done
export SAMEBITS_BWD_TMA_STRICT=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
hashes() { grep -o 'hash [0-9a-f]\{16\}' "$1" | sort -u | tr '\n' ' '; }
if [ "${PART:-c}" = c ]; then
  LD_LIBRARY_PATH=$C/default timeout 200 "$C/default/test_attention_bwd_sm90" --bench > "$OUT/default_bwd.log" 2>&1
  sum+=("default bwd test rc=$? $(count "$OUT/default_bwd.log") $(hashes "$OUT/default_bwd.log")")
  BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$C/fused timeout 150 "$C/fused/test_attention_bwd_sm90" --bench > "$OUT/fused_bwd.log" 2>&1
  sum+=("fused bwd test rc=$? $(count "$OUT/fused_bwd.log") $(hashes "$OUT/fused_bwd.log")")
  LD_LIBRARY_PATH=$C/fused timeout 150 compute-sanitizer --tool racecheck "$C/fused/test_attention_bwd_sm90" --small > "$OUT/fused_race.log" 2>&1
  sum+=("fused racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/fused_race.log")")
  LD_LIBRARY_PATH=$C/fused timeout 90 compute-sanitizer --tool memcheck "$C/fused/test_attention_bwd_sm90" --small > "$OUT/fused_mem.log" 2>&1
  sum+=("fused memcheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/fused_mem.log")")
  echo "== default C bench"; grep -E '^\| bf16' "$OUT/default_bwd.log"
  echo "== fused C bench"; grep -E '^\| bf16' "$OUT/fused_bwd.log"
else
  for v in default fused; do
    SAMEBITS_LIBRARY=$C/$v/libsamebits.so PYTHONPATH=$PWD/python timeout 200 python3 -m pytest -q -p no:cacheprovider \
      tests/python/test_cuda.py tests/python/test_backward_workspace.py > "$OUT/${v}_pytest.log" 2>&1
    sum+=("$v pytest rc=$? $(tail -1 "$OUT/${v}_pytest.log")")
  done
  SAMEBITS_LIBRARY=$C/default/libsamebits.so PYTHONPATH=$PWD/python timeout 90 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
  sum+=("default verify rc=$? $(tail -1 "$OUT/verify.log")")
  SAMEBITS_LIBRARY=$C/fused/libsamebits.so PYTHONPATH=$PWD/python timeout 150 python3 bench/bench_attention_backward.py \
    --out "$OUT/peers_fused" --reps 10 --dims 128 --no-flex --impls samebits,cudnn,flash_det > "$OUT/peers_fused.log" 2>&1
  sum+=("peers fused rc=$?")
  SAMEBITS_LIBRARY=$C/default/libsamebits.so PYTHONPATH=$PWD/python timeout 90 python3 bench/bench_attention_backward.py \
    --out "$OUT/peers_default" --reps 10 --dims 128 --no-flex --impls samebits > "$OUT/peers_default.log" 2>&1
  sum+=("peers default rc=$?")
  for v in fused default; do [ -f "$OUT/peers_$v/bench_attention_backward.md" ] && cp "$OUT/peers_$v/bench_attention_backward.md" "$OUT/peers_$v.md" && cat "$OUT/peers_$v.md"; done
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
exit 0
