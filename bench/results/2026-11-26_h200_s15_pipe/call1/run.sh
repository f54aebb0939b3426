#!/usr/bin/env bash
# Device check of the chained dK/dV tiles (SAMEBITS_BWD_PIPE), one call, one
# carried build ($CARRY: an xz-compressed libsamebits.so and
# test_attention_bwd_sm90):
#   1. the full backward test with the C bench, tiles chained (default):
#      169 checks, the six 50-run hashes of earlier sessions;
#   2. the C bench with SAMEBITS_BWD_PIPE=0 (a drain per tile), then
#      chained again, alternated, for the same-call comparison;
#   3. racecheck and memcheck --small (chained);
#   4. unless SKIP_PY=1: the peers' backward benchmark (cuDNN, flash
#      deterministic) beside samebits, then samebits with SAMEBITS_BWD_PIPE=0.
# Logs and a summary under $OUT.
set -uo pipefail
C=$PWD/${CARRY:-.carry/pipe}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
sum=()
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$C/libsamebits.so.xz" "$C/libsamebits.so"
export SAMEBITS_BWD_TMA_STRICT=1 LD_LIBRARY_PATH=$C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
hashes() { grep -o 'hash [0-9a-f]\{16\}' "$1" | sort -u | tr '\n' ' '; }
timeout 200 "$C/test_attention_bwd_sm90" --bench > "$OUT/pipe_bwd.log" 2>&1
sum+=("chained: bwd test rc=$? $(count "$OUT/pipe_bwd.log") $(hashes "$OUT/pipe_bwd.log")")
for r in 1 2; do
  SAMEBITS_BWD_PIPE=0 timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/drain_bench$r.log" 2>&1
  sum+=("drain bench $r rc=$?")
  timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/pipe_bench$r.log" 2>&1
  sum+=("chained bench $r rc=$?")
done
timeout 150 compute-sanitizer --tool racecheck "$C/test_attention_bwd_sm90" --small > "$OUT/race.log" 2>&1
sum+=("racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/race.log")")
timeout 90 compute-sanitizer --tool memcheck "$C/test_attention_bwd_sm90" --small > "$OUT/mem.log" 2>&1
sum+=("memcheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/mem.log")")
for f in pipe_bwd drain_bench1 pipe_bench1 drain_bench2 pipe_bench2; do
  echo "== $f"; grep -E '^\| (bf16|fp16)' "$OUT/$f.log" | head -40
done
if [ "${SKIP_PY:-0}" != 1 ]; then
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 150 python3 bench/bench_attention_backward.py \
    --out "$OUT/peers" --reps 10 --dims ${PY_DIMS:-128} --no-flex --impls samebits,cudnn,flash_det > "$OUT/peers.log" 2>&1
  sum+=("peers rc=$?")
  SAMEBITS_BWD_PIPE=0 SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 90 python3 bench/bench_attention_backward.py \
    --out "$OUT/peers_drain" --reps 10 --dims ${PY_DIMS:-128} --no-flex --impls samebits > "$OUT/peers_drain.log" 2>&1
  sum+=("peers drain rc=$?")
  for v in peers peers_drain; do [ -f "$OUT/$v/bench_attention_backward.md" ] && cat "$OUT/$v/bench_attention_backward.md"; done
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
exit 0
