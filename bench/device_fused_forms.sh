#!/usr/bin/env bash
# One device call: the fused backward's raw-only form (branch fused-forms,
# built with -DSAMEBITS_BWD_FUSED=ON; CARRY, default .carry/ff) against its
# general form (SAMEBITS_BWD_DKDV_FORM=0, same library) and the default
# three-pass build (DEFAULT, default .carry/pipe): the fused build's full
# backward test (checks, 50-run hashes), then the d128 C bench of the three,
# alternated ROUNDS times (default 2).
CARRY=${CARRY:-.carry/ff}
source bench/device_common.sh
D=$PWD/${DEFAULT:-.carry/pipe}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$D/libsamebits.so.xz" "$D/libsamebits.so"
export SAMEBITS_BWD_TMA_STRICT=1
cp "$0" "$OUT/run.sh"
LD_LIBRARY_PATH=$C timeout 240 "$C/test_attention_bwd_sm90" > "$OUT/ff_test.log" 2>&1
sum+=("fused-forms test rc=$? $(count "$OUT/ff_test.log") $(hashes "$OUT/ff_test.log")")
for r in $(seq 1 "${ROUNDS:-2}"); do
  BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$C timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/raw_$r.log" 2>&1
  SAMEBITS_BWD_DKDV_FORM=0 BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$C timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/gen_$r.log" 2>&1
  BWD_BENCH_DIMS=128 LD_LIBRARY_PATH=$D timeout 90 "$D/test_attention_bwd_sm90" --bench-only > "$OUT/def_$r.log" 2>&1
done
for f in "$OUT"/raw_*.log "$OUT"/gen_*.log "$OUT"/def_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done | tee "$OUT/bench.txt"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
rm -f "$OUT"/raw_*.log "$OUT"/gen_*.log "$OUT"/def_*.log
