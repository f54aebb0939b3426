#!/usr/bin/env bash
# One device call: the dK/dV producer's lse, D loads by cp.async with an
# asynchronous arrival (A = CARRY, default build; AF its fused build; AF3
# the fused build with 3 stages) against the library before (B): the whole
# backward test on A and AF (hashes), --seqused on A, then the C bench
# (d 64, 128, 256 for B and A; d 128 for the fused builds, as built and
# with every dQ step off), ROUNDS rounds.
CARRY=${CARRY:-.carry/s23ad}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
declare -A L=([b]=$PWD/.carry/s23d [a]=$C [af]=$PWD/.carry/s23af [af3]=$PWD/.carry/s23af3)
for x in b af af3; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "${L[$x]}/libsamebits.so.xz" "${L[$x]}/libsamebits.so"
done
T=$C/test_attention_bwd_sm90
for x in a af; do
  LD_LIBRARY_PATH=${L[$x]} timeout 300 $T > "$OUT/${x}_test.log" 2>&1
  sum+=("$x test rc=$? $(count "$OUT/${x}_test.log") $(hashes "$OUT/${x}_test.log")")
done
LD_LIBRARY_PATH=$C timeout 200 $T --seqused > "$OUT/a_seqused.log" 2>&1
sum+=("a seqused rc=$? $(count "$OUT/a_seqused.log")")
for r in $(seq 1 "${ROUNDS:-2}"); do
  for x in b a; do
    BWD_BENCH_DIMS=64,128,256 LD_LIBRARY_PATH=${L[$x]} timeout 120 $T --bench-only > "$OUT/b_${x}_$r.log" 2>&1
  done
  for x in af af3; do
    BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[$x]} timeout 90 $T --bench-only > "$OUT/b_${x}_$r.log" 2>&1
    SAMEBITS_BWD_FUSED_DIAG=63 BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[$x]} timeout 90 $T --bench-only > "$OUT/b_${x}diag63_$r.log" 2>&1
  done
done
for f in "$OUT"/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
rm -f "$OUT"/b_*.log
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
