#!/usr/bin/env bash
# One device call (thirty-sixth session): the GEMM's lean kernels (each
# staged entry's kernel with only the common call's epilogue compiled in;
# SAMEBITS_GEMM_LEAN=0 runs the generic kernel). CARRY = the new library,
# OLD = main's library before it. 1) bits: gemm_bits_dump with the lean
# kernels, with the generic ones, and with the old library (with and without
# a bias), compared; 2) pytest's GEMM tests; 3) the predecessor probe with
# the generic kernel as a variant (the cold start); 4) gemm_cluster_probe
# default (lean) beside generic beside cuBLAS at issue 6's low points and
# their neighbours, ROUNDS rounds; 5) if time is left, issue 6's 76 points
# (default only, one round). Everything is packed into $OUT/all.tgz.
set -uo pipefail
# Run from the repository root: bash bench/results/2026-12-07_h100_s36_lean/device_s36_lean.sh
CARRY=${CARRY:-.carry/s36lean}
OLD=${OLD:-.carry/s35e}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$OLD/libsamebits.so.xz" "$OLD/libsamebits.so"
export PYTHONPATH=$PWD/python:$PWD/bench
NEW=$C/libsamebits.so
SAMEBITS_LIBRARY=$NEW timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/bits_lean.json" > "$OUT/bits.log" 2>&1
SAMEBITS_LIBRARY=$NEW SAMEBITS_GEMM_LEAN=0 timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/bits_generic.json" >> "$OUT/bits.log" 2>&1
SAMEBITS_LIBRARY=$PWD/$OLD/libsamebits.so timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/bits_old.json" >> "$OUT/bits.log" 2>&1
echo "== bits lean vs generic: $(python3 bench/gemm_bits_dump.py compare "$OUT/bits_generic.json" "$OUT/bits_lean.json")"
echo "== bits old vs lean: $(python3 bench/gemm_bits_dump.py compare "$OUT/bits_old.json" "$OUT/bits_lean.json")"
SAMEBITS_LIBRARY=$NEW timeout 150 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py -q -p no:cacheprovider \
  -k "gemm or linear or matmul or bmm or addmm" > "$OUT/pytest.log" 2>&1
echo "== pytest rc=$? $(tail -1 "$OUT/pytest.log")"
grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -5
export SAMEBITS_LIBRARY=$NEW
timeout 100 python3 bench/predecessor_probe.py --twin --out "$OUT/cold.json" --reps 11 --variants "generic:SAMEBITS_GEMM_LEAN=0" \
  --shapes 384x4096x4096,512x4096x4096,1152x4096x4096,1280x4096x4096,384x14336x4096 > "$OUT/cold.log" 2>&1
echo "== cold rc=$?"; cat "$OUT/cold.log"
SH=""
for m in 192 256 384 512 640 768 1024 1152 1280 1536 2048 4096; do SH="$SH${SH:+,}${m}x4096x4096"; done
SH="$SH,384x14336x4096,512x14336x4096,1152x14336x4096,512x4096x14336,1280x4096x14336"
for r in $(seq 1 "${ROUNDS:-2}"); do
  timeout 150 python3 bench/gemm_cluster_probe.py --configs default,generic --shapes "$SH" --reps 11 --captures 2 \
    --out "$OUT/ab_$r.json" > "$OUT/ab_$r.log" 2>&1
  echo "== A/B round $r rc=$?"; cat "$OUT/ab_$r.log"
done
if [ "$SECONDS" -lt 330 ]; then
  MS="1 16 64 128 192 256 384 512 640 768 896 1024 1152 1280 1536 1792 2048 4096 16384"
  SH=""
  for nk in 4096x4096 14336x4096 4096x14336 128256x4096; do for m in $MS; do SH="$SH${SH:+,}${m}x$nk"; done; done
  timeout $((560 - SECONDS)) python3 bench/gemm_cluster_probe.py --configs default --shapes "$SH" --reps 11 --captures 2 \
    --out "$OUT/table_1.json" > "$OUT/table_1.log" 2>&1
  echo "== table rc=$?"
  python3 - "$OUT/table_1.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
low = [(r["M"], r["N"], r["K"], round(r["us"]["cuBLAS"] / r["us"]["default"], 3)) for r in rows]
print("points", len(low), "below 0.95:", [x for x in low if x[3] < 0.95])
PY
else
  echo "== table skipped (${SECONDS}s)"
fi
cd "$OUT" && tar czf /tmp/all.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/all.tgz "$OUT/all.tgz"
