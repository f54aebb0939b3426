#!/usr/bin/env bash
# One device call: the in-place addmm guard (out = bias keeps the plain
# tiles) and the GEMM tile tests of test_cuda.py on the carried library,
# the GEMM bits against an earlier library (OLD), bench_dense's GEMM checks.
CARRY=${CARRY:-.carry/alias}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/dsk}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
cp "$0" "$OUT/run.sh"
N=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python)
"${N[@]}" timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "gemm" > "$OUT/pytest_gemm.log" 2>&1
echo "pytest -k gemm rc=$? $(tail -1 "$OUT/pytest_gemm.log")"
grep -E "in_place|FAILED" "$OUT/pytest_gemm.log" | head -5
for v in new old; do
  L=$C; [ $v = old ] && L=$O
  SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=python timeout 150 python3 bench/gemm_bits_dump.py dump "$OUT/bits_$v.json" > "$OUT/bits_$v.log" 2>&1
done
python3 bench/gemm_bits_dump.py compare "$OUT/bits_old.json" "$OUT/bits_new.json" 2>&1 | tail -1 | sed 's/^/bits new vs old: /'
"${N[@]}" timeout 200 python3 bench/bench_dense.py --gemm-only --out "$OUT/dense_gemm.json" > "$OUT/dense_gemm.log" 2>&1
echo "bench_dense --gemm-only rc=$? $(grep FAILS "$OUT/dense_gemm.log" | tail -1)"
