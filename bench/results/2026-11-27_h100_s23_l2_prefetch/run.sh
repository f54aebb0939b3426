#!/usr/bin/env bash
# One device call: the producers prefetch the next unit's tiles into L2
# (dK/dV: K, V; dQ: Q, dO; A = CARRY, default build) against the library
# before (B): the whole backward test on A (hashes), then the C bench with
# a packed batch (BWD_BENCH_PACKED=1), d 64, 128, 256, B and A alternated,
# ROUNDS rounds.
CARRY=${CARRY:-.carry/s23pd}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
declare -A L=([b]=$PWD/${BEFORE:-.carry/s23ad} [a]=$C)
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "${L[b]}/libsamebits.so.xz" "${L[b]}/libsamebits.so"
T=$C/test_attention_bwd_sm90
LD_LIBRARY_PATH=$C timeout 300 $T > "$OUT/a_test.log" 2>&1
sum+=("a test rc=$? $(count "$OUT/a_test.log") $(hashes "$OUT/a_test.log")")
for r in $(seq 1 "${ROUNDS:-2}"); do
  for x in b a; do
    BWD_BENCH_PACKED=1 BWD_BENCH_DIMS=64,128,256 LD_LIBRARY_PATH=${L[$x]} timeout 150 $T --bench-only > "$OUT/b_${x}_$r.log" 2>&1
  done
done
for f in "$OUT"/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
rm -f "$OUT"/b_*.log
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
