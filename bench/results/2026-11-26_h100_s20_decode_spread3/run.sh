#!/usr/bin/env bash
# One device call for the spread schedule at three CTAs an SM (Q/K and P
# share shared memory) and the rule that spreads grids of up to 64 pass-1
# CTAs where every cluster is resident: the decode suite under the default
# rule and with 8 forced, 9 --quick, memcheck / racecheck --small with 8
# forced; the kernel-only C bench (0, 8, auto; out / lse compared bitwise
# at every shape) for the carried library (CARRY) and an earlier one (OLD);
# decode beside cuDNN / flash (bench_decode.py --graph --captures 3), both
# libraries alternated. CARRY and OLD hold libsamebits.so.xz and
# test_attention_decode_sm90.
set -uo pipefail
sum=()
C=$PWD/${CARRY:-.carry/spread3}
O=$PWD/${OLD:-.carry/dsk}
FINAL_OUT=${OUT:-/tmp/out}
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/decode_spread3.tgz" -C "$OUT" . && printf "%s\n" "${sum[@]}" > "$FINAL_OUT/summary.txt"' EXIT
mkdir -p "$FINAL_OUT"
for d in "$C" "$O"; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "$d/libsamebits.so.xz" "$d/libsamebits.so"
  chmod +x "$d/test_attention_decode_sm90"
done
cp "$0" "$OUT/run.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$C/libsamebits.so" "$O/libsamebits.so" | tee "$OUT/lib_sha256.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
T=$C/test_attention_decode_sm90
if [ "${STAGE:-all}" != bench ]; then
  LD_LIBRARY_PATH=$C timeout 100 "$T" > "$OUT/decode_default.log" 2>&1
  sum+=("decode default full rc=$? $(count "$OUT/decode_default.log")")
  grep '^\[FAIL\]' "$OUT/decode_default.log" | head -5
  SAMEBITS_DECODE_VARIANT=8 LD_LIBRARY_PATH=$C timeout 100 "$T" > "$OUT/decode_v8.log" 2>&1
  sum+=("decode v8 full rc=$? $(count "$OUT/decode_v8.log")")
  grep '^\[FAIL\]' "$OUT/decode_v8.log" | head -5
  SAMEBITS_DECODE_VARIANT=9 LD_LIBRARY_PATH=$C timeout 60 "$T" --quick > "$OUT/decode_v9_quick.log" 2>&1
  sum+=("decode v9 --quick rc=$? $(count "$OUT/decode_v9_quick.log")")
  SAMEBITS_DECODE_VARIANT=8 LD_LIBRARY_PATH=$C timeout 120 compute-sanitizer --tool memcheck "$T" --small > "$OUT/decode_mem.log" 2>&1
  sum+=("decode v8 memcheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/decode_mem.log")")
  SAMEBITS_DECODE_VARIANT=8 LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool racecheck "$T" --small > "$OUT/decode_race.log" 2>&1
  sum+=("decode v8 racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/decode_race.log")")
fi
if [ "${STAGE:-all}" != check ]; then
  for v in new old; do
    L=$C; [ $v = old ] && L=$O
    LD_LIBRARY_PATH=$L timeout 100 "$L/test_attention_decode_sm90" --bench --graph --variants 0,8,auto --max-tokens 262144 > "$OUT/bench_c_$v.md" 2>&1
    sum+=("C bench $v rc=$?")
  done
  SH=1x1024,2x1024,1x2048,1x4096,4x1024,2x2048,8x1024,1x8192,1x16384,16x1024
  for r in 1 2; do
    for v in new old; do
      L=$C; [ $v = old ] && L=$O
      SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench timeout 120 python3 bench/bench_decode.py \
        --graph --captures 3 --reps 11 --no-flex --shapes $SH --out "$OUT/peers_${v}_r$r" > "$OUT/peers_${v}_r$r.log" 2>&1
      sum+=("bench_decode $v r$r rc=$?")
    done
  done
fi
printf '%s\n' "${sum[@]}"
for v in new old; do [ -f "$OUT/bench_c_$v.md" ] && { echo "== C $v"; grep -E "^\| (1|2|4|8|16) \||FAIL|differ" "$OUT/bench_c_$v.md" | head -20; }; done
for f in "$OUT"/peers_*_r1/bench_decode_graph.md; do [ -f "$f" ] && { echo "== $f"; grep "^|" "$f"; }; done
