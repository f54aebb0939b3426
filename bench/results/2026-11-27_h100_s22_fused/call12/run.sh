#!/usr/bin/env bash
# One device call: the whole backward test on the default library (D) and
# on the fused build (F, -DSAMEBITS_BWD_FUSED=ON), with their 50-run hashes,
# then the d 128 C bench of both, ROUNDS rounds (default 1).
CARRY=${CARRY:-.carry/s22d}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
declare -A L=([d]=$PWD/.carry/s22d [f]=$PWD/.carry/s22f)
for k in d f; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "${L[$k]}/libsamebits.so.xz" "${L[$k]}/libsamebits.so"
  LD_LIBRARY_PATH=${L[$k]} timeout 300 "${L[$k]}/test_attention_bwd_sm90" > "$OUT/${k}_test.log" 2>&1
  sum+=("$k test rc=$? $(count "$OUT/${k}_test.log") $(hashes "$OUT/${k}_test.log")")
  grep FAIL "$OUT/${k}_test.log" | head -5 >> "$OUT/fails.txt"
done
for r in $(seq 1 "${ROUNDS:-1}"); do
  for k in d f; do
    BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[$k]} timeout 90 "${L[$k]}/test_attention_bwd_sm90" --bench-only > "$OUT/${k}_bench_$r.log" 2>&1
  done
done
for f in "$OUT"/*_bench_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
rm -f "$OUT"/*_bench_*.log
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
