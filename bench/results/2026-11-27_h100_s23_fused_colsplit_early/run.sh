#!/usr/bin/env bash
# One device call: the fused kernel's dQ product split by columns between
# the two warpgroups (CS = CARRY's fused build, FusedKernel::kColSplit)
# against the warpgroups taking turns (TURNS, the fused build before) and
# the three passes (DEFAULT): the whole backward test on CS (its hashes
# must be the turns build's), then the d 128 C bench, the three builds
# in turn, ROUNDS rounds (the order rotated each round).
CARRY=${CARRY:-.carry/s23cs}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
declare -A L=([cs]=$C [turns]=$PWD/${TURNS:-.carry/s23bf} [three]=$PWD/${DEFAULT:-.carry/s23ad})
for x in turns three; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "${L[$x]}/libsamebits.so.xz" "${L[$x]}/libsamebits.so"
done
T=$PWD/.carry/s23ad/test_attention_bwd_sm90
LD_LIBRARY_PATH=$C timeout 300 $T > "$OUT/cs_test.log" 2>&1
sum+=("cs test rc=$? $(count "$OUT/cs_test.log") $(hashes "$OUT/cs_test.log")")
orders=("cs turns three" "turns three cs" "three cs turns")
for r in $(seq 1 "${ROUNDS:-2}"); do
  for x in ${orders[$(( (r - 1) % 3 ))]}; do
    BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=${L[$x]} timeout 90 $T --bench-only > "$OUT/b_${x}_$r.log" 2>&1
  done
done
for f in "$OUT"/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
rm -f "$OUT"/b_*.log
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
