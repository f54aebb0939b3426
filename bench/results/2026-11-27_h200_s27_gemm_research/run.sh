#!/usr/bin/env bash
# One device call: a library built without the GEMM's measurement entries
# (the default, -DSAMEBITS_GEMM_RESEARCH_TILES=OFF; CARRY) against main's
# library before the option (OLD, which has every entry):
#   1. tests/python/test_cuda.py (the research entries' checks skip; the
#      refusal test runs);
#   2. bench/bench_dense.py --gemm-only --skip-bench (invariance over every
#      built entry, hashes, accuracy, mode): FAILS must be [];
#   3. samebits verify --device cuda;
#   4. gemm_bits_dump.py with both libraries and compare (the rule's
#      entries must give the same bits; entries one build lacks are listed).
# Logs and summary.txt under $OUT.
CARRY=${CARRY:-.carry/gemmr}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
O=$PWD/${OLD:-.carry/rev}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
export PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$C/libsamebits.so
timeout 300 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -rs > "$OUT/test_cuda.log" 2>&1
sum+=("test_cuda rc=$? $(tail -1 "$OUT/test_cuda.log")")
timeout 200 python3 bench/bench_dense.py --gemm-only --skip-bench --out /tmp/dense.json > "$OUT/bench_dense.log" 2>&1
sum+=("bench_dense rc=$? $(grep -E '^FAILS' "$OUT/bench_dense.log" | tail -1) $(grep -c 'not in this build' "$OUT/bench_dense.log") not-built notes")
timeout 120 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
timeout 150 python3 bench/gemm_bits_dump.py dump /tmp/new.json > /tmp/dump_new.log 2>&1
SAMEBITS_LIBRARY=$O/libsamebits.so timeout 150 python3 bench/gemm_bits_dump.py dump /tmp/old.json > /tmp/dump_old.log 2>&1
python3 bench/gemm_bits_dump.py compare /tmp/old.json /tmp/new.json > "$OUT/bits_compare.log" 2>&1
sum+=("bits compare rc=$? $(tail -1 "$OUT/bits_compare.log")")
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
