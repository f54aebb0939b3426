#!/usr/bin/env bash
# One device call (thirty-third session): the GEMM's staged epilogue runs
# once dry before the first tile (p.epi_warm; CARRY) against main's library
# (OLD): GEMM bits of both (gemm_bits_dump: every entry forced, with bias,
# bf16 / fp16), test_cuda.py -k "gemm or linear", then
# bench/predecessor_probe.py with the warm-up off (nowarm) beside the
# default at issue 6's low points, ROUNDS rounds while time is left.
set -uo pipefail
CARRY=${CARRY:-.carry/s33gemm}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/s33base}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
cp "$0" "$OUT/run.sh"
probe() {
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench timeout 100 python3 bench/predecessor_probe.py \
    --out "$OUT/gemm_warm_r$1.json" --reps 11 --variants "nowarm:SAMEBITS_GEMM_EPI_WARM=0" \
    --shapes ${SHAPES:-384x4096x4096,256x4096x4096,512x4096x4096,640x4096x4096,1152x4096x4096,1280x4096x4096,384x14336x4096,192x14336x4096,4096x4096x4096} \
    > "$OUT/gemm_warm_r$1.log" 2>&1
  echo "== round $1 rc=$?"; cat "$OUT/gemm_warm_r$1.log"
}
probe 1
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 100 python3 bench/gemm_bits_dump.py dump "$OUT/bits_$v.json" > "$OUT/bits_$v.log" 2>&1
  sum+=("bits dump $v rc=$? $(tail -1 "$OUT/bits_$v.log")")
done
python3 bench/gemm_bits_dump.py compare "$OUT/bits_old.json" "$OUT/bits_new.json" > "$OUT/bits_compare.log" 2>&1
sum+=("bits new vs old rc=$? $(tail -1 "$OUT/bits_compare.log")")
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q \
  -p no:cacheprovider -k "gemm or linear" > "$OUT/pytest.log" 2>&1
sum+=("pytest test_cuda -k gemm or linear rc=$? $(tail -1 "$OUT/pytest.log")")
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
[ "$SECONDS" -lt 200 ] && probe 2
cd "$OUT" && tar czf logs.tgz --exclude logs.tgz --exclude summary.txt . && rm -f bits_*.json
