#!/usr/bin/env bash
# One device call: the backward's preprocess with every pass's loads issued
# first (CARRY, default .carry/pre) against the library before (OLD,
# default .carry/final21). The full backward test (the six 50-run hashes),
# then profile_kernels.py --only bwd for both libraries, alternated twice.
CARRY=${CARRY:-.carry/pre}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
O=$PWD/${OLD:-.carry/final21}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$O/libsamebits.so.xz" "$O/libsamebits.so"
chmod +x "$C/test_attention_bwd_sm90"
if [ -z "${SKIP_TEST:-}" ]; then
  SAMEBITS_BWD_TMA_STRICT=1 LD_LIBRARY_PATH=$C timeout 300 "$C/test_attention_bwd_sm90" > "$OUT/test.log" 2>&1
  echo "test rc=$? $(count "$OUT/test.log") $(hashes "$OUT/test.log")" | tee "$OUT/summary.txt"
fi
for r in 1 2; do
  for v in new old; do
    L=$C; [ $v = old ] && L=$O
    mkdir -p "$OUT/prof_${v}_$r"
    SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=python:bench timeout 120 python3 bench/profile_kernels.py --only bwd \
      --eager --bwd-lengths 1024,4096 --reps 5 --cases samebits --out "$OUT/prof_${v}_$r" > "$OUT/prof_${v}_$r.log" 2>&1
    echo "profile $v $r rc=$? $(grep -E 'preprocess' "$OUT/prof_${v}_$r.log" | awk '{print $2}' | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
  done
done
tar -C "$OUT" -czf /tmp/prof.tgz prof_new_1 prof_old_1 prof_new_2 prof_old_2 prof_new_1.log prof_old_1.log prof_new_2.log prof_old_2.log && rm -rf "$OUT"/prof_* && mv /tmp/prof.tgz "$OUT/prof.tgz"
