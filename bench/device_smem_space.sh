#!/usr/bin/env bash
# One device call: the backward TMA kernels' shared memory base aligned by
# pointer arithmetic (the shared address space kept: lse, D by ld.shared;
# A = CARRY, default build; AF its fused build) against the library before
# (B): the whole backward test on A (hashes), --quick on AF, then the C
# bench, d 64, 128, 256 for B and A alternated, ROUNDS rounds, and AF at
# d 128 (as built and with every dQ step off) once.
CARRY=${CARRY:-.carry/s23bd}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
declare -A L=([b]=$PWD/${BEFORE:-.carry/s23ad} [a]=$C [af]=$PWD/${FUSED:-.carry/s23bf})
for x in b af; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "${L[$x]}/libsamebits.so.xz" "${L[$x]}/libsamebits.so"
done
T=$C/test_attention_bwd_sm90
LD_LIBRARY_PATH=$C timeout 300 $T > "$OUT/a_test.log" 2>&1
sum+=("a test rc=$? $(count "$OUT/a_test.log") $(hashes "$OUT/a_test.log")")
LD_LIBRARY_PATH=${L[af]} timeout 200 $T --quick > "$OUT/af_quick.log" 2>&1
sum+=("af quick rc=$? $(count "$OUT/af_quick.log") $(hashes "$OUT/af_quick.log")")
for r in $(seq 1 "${ROUNDS:-2}"); do
  for x in b a; do
    BWD_BENCH_DIMS=64,128,256 LD_LIBRARY_PATH=${L[$x]} timeout 120 $T --bench-only > "$OUT/b_${x}_$r.log" 2>&1
  done
done
BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[af]} timeout 90 $T --bench-only > "$OUT/b_af_1.log" 2>&1
SAMEBITS_BWD_FUSED_DIAG=63 BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[af]} timeout 90 $T --bench-only > "$OUT/b_afdiag63_1.log" 2>&1
for f in "$OUT"/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
rm -f "$OUT"/b_*.log
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
