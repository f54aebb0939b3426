#!/usr/bin/env bash
# One device call for pass 1 spread over a cluster (DecodeVariant 8,
# attention_decode_sm90_spread.h): the decode suite with 8 forced (--quick,
# then the full suite) and under the default rule; racecheck / memcheck of
# --small with 8 forced; the kernel-only C bench under CUDA graphs, schedules
# 0, 4, 8 and auto side by side (their out / lse compared bitwise at every
# shape); decode beside cuDNN / flash SDPA (bench_decode.py --graph) at the
# small shapes, the default rule against 0 forced. Also --quick with 9. Carried folder CARRY
# holds libsamebits.so.xz and test_attention_decode_sm90. STAGE=check runs
# the checks only, STAGE=bench the benches only (default: both).
set -uo pipefail
sum=()
C=$PWD/${CARRY:-.carry/spread}
FINAL_OUT=${OUT:-/tmp/out}
OUT=$(mktemp -d)
STAGE=${STAGE:-all}
trap 'tar czf "$FINAL_OUT/decode_spread.tgz" -C "$OUT" . && printf "%s\n" "${sum[@]}" > "$FINAL_OUT/summary.txt"' EXIT
mkdir -p "$FINAL_OUT"
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x "$C/test_attention_decode_sm90"
PYENV=(env SAMEBITS_LIBRARY="$C/libsamebits.so" PYTHONPATH="$PWD/python:$PWD/bench")
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$C/libsamebits.so" | tee "$OUT/lib_sha256.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
T=$C/test_attention_decode_sm90
export LD_LIBRARY_PATH=$C

if [ "$STAGE" != bench ]; then
  SAMEBITS_DECODE_VARIANT=8 timeout 60 "$T" --quick > "$OUT/decode_v8_quick.log" 2>&1
  sum+=("decode v8 --quick rc=$? $(count "$OUT/decode_v8_quick.log")")
  grep '^\[FAIL\]' "$OUT/decode_v8_quick.log" | head -5
  SAMEBITS_DECODE_VARIANT=9 timeout 60 "$T" --quick > "$OUT/decode_v9_quick.log" 2>&1
  sum+=("decode v9 --quick rc=$? $(count "$OUT/decode_v9_quick.log")")
  SAMEBITS_DECODE_VARIANT=8 timeout 100 "$T" > "$OUT/decode_v8.log" 2>&1
  sum+=("decode v8 full rc=$? $(count "$OUT/decode_v8.log")")
  timeout 100 "$T" > "$OUT/decode_default.log" 2>&1
  sum+=("decode default full rc=$? $(count "$OUT/decode_default.log")")
  SAMEBITS_DECODE_VARIANT=8 timeout 120 compute-sanitizer --tool memcheck "$T" --small > "$OUT/decode_mem.log" 2>&1
  sum+=("decode v8 memcheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/decode_mem.log")")
  SAMEBITS_DECODE_VARIANT=8 timeout 150 compute-sanitizer --tool racecheck "$T" --small > "$OUT/decode_race.log" 2>&1
  sum+=("decode v8 racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/decode_race.log")")
fi
if [ "$STAGE" != check ]; then
  timeout 120 "$T" --bench --graph --variants 0,4,8,9,auto --max-tokens ${BENCH_MAX_TOKENS:-1048576} > "$OUT/bench_c.md" 2>&1
  sum+=("C bench rc=$?")
  SH=1x1024,2x1024,1x2048,1x4096,4x1024,1x16384,16x1024
  for r in 1 2; do
    "${PYENV[@]}" timeout 100 python3 bench/bench_decode.py --graph --reps 15 --no-flex --shapes $SH --out "$OUT/auto_r$r" > "$OUT/peers_auto_r$r.log" 2>&1
    sum+=("bench_decode auto r$r rc=$?")
    SAMEBITS_DECODE_VARIANT=0 "${PYENV[@]}" timeout 100 python3 bench/bench_decode.py --graph --reps 15 --no-flex --shapes $SH --out "$OUT/v0_r$r" > "$OUT/peers_v0_r$r.log" 2>&1
    sum+=("bench_decode v0 r$r rc=$?")
  done
fi
printf '%s\n' "${sum[@]}"
[ -f "$OUT/bench_c.md" ] && grep -E "^\| (1|4|16|64|256) \||FAIL|differ" "$OUT/bench_c.md" | head -30
for f in "$OUT"/auto_r1/bench_decode_graph.md "$OUT"/v0_r1/bench_decode_graph.md; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done
