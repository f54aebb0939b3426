#!/usr/bin/env bash
# One device call: the dK/dV pass's kRaw form with the joint tile order at
# head dim 128 (J, Cfg::kRawJoint) against the library before it (D): the
# whole backward test on J and on its fused build (K) with their hashes,
# then the d 128 C bench of D and J alternated, ROUNDS rounds (default 2).
CARRY=${CARRY:-.carry/s22j}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
declare -A L=([d]=$PWD/.carry/s22d [j]=$PWD/.carry/s22j [k]=$PWD/.carry/s22k)
for x in d j k; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "${L[$x]}/libsamebits.so.xz" "${L[$x]}/libsamebits.so"
done
for x in j k; do
  LD_LIBRARY_PATH=${L[$x]} timeout 300 "${L[$x]}/test_attention_bwd_sm90" > "$OUT/${x}_test.log" 2>&1
  sum+=("$x test rc=$? $(count "$OUT/${x}_test.log") $(hashes "$OUT/${x}_test.log")")
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for x in d j; do
    BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[$x]} timeout 90 "${L[$x]}/test_attention_bwd_sm90" --bench-only > "$OUT/${x}_bench_$r.log" 2>&1
  done
done
for f in "$OUT"/*_bench_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
rm -f "$OUT"/*_bench_*.log
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
