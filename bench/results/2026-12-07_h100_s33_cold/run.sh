#!/usr/bin/env bash
# One device call (thirty-third session): 1) the cold-start probe
# (bench/device_cold_start.sh: samebits' decode without PDL, folded and
# walked, the GEMM's epilogue forms) with a 'twin' predecessor (samebits'
# call of the same shape on buffers of its own: same kernels, other data),
# which tells a warm code/launch state from warm data; 2) issue 6's 76 GEMM
# points timed without the lead (each call after the other
# implementation's), one library, ROUNDS rounds.
set -uo pipefail
CARRY=${CARRY:-.carry/s33base}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench SAMEBITS_LIBRARY=$C/libsamebits.so
V="nopdl:SAMEBITS_DECODE_PDL=0,fold:SAMEBITS_DECODE_FOLD=force,walk:SAMEBITS_DECODE_WALK=force"
for r in 1 2; do
  timeout 150 python3 bench/predecessor_probe.py --twin --out "$OUT/cold_r$r.json" --reps 11 --variants "$V" \
    --shapes b1x1024,b1x2048,b1x4096,b2x2048,b4x1024,b1x16384,b1x32768,b8x2048,b16x4096,b1x131072 > "$OUT/cold_r$r.log" 2>&1
  echo "== decode round $r rc=$?"; cat "$OUT/cold_r$r.log"
  timeout 80 python3 bench/predecessor_probe.py --twin --out "$OUT/cold_gemm_r$r.json" --reps 11 \
    --variants "direct:SAMEBITS_GEMM_EPILOGUE=direct,remdirect:SAMEBITS_GEMM_EPILOGUE=staged-rem-direct" \
    --shapes 384x4096x4096,512x4096x4096,1152x4096x4096,1280x4096x4096,192x14336x4096 > "$OUT/cold_gemm_r$r.log" 2>&1
  echo "== GEMM round $r rc=$?"; cat "$OUT/cold_gemm_r$r.log"
done
MS="1 16 64 128 192 256 384 512 640 768 896 1024 1152 1280 1536 1792 2048 4096 16384"
SH=""
for nk in 4096x4096 14336x4096 4096x14336 128256x4096; do for m in $MS; do SH="$SH${SH:+,}${m}x$nk"; done; done
for r in $(seq 1 "${ROUNDS:-2}"); do
  [ "$SECONDS" -gt 400 ] && { echo "== table round $r skipped (${SECONDS}s)"; break; }
  timeout $((560 - SECONDS)) python3 bench/gemm_cluster_probe.py --configs default --shapes "$SH" --reps 11 --captures 2 \
    --out "$OUT/table_$r.json" > "$OUT/table_$r.log" 2>&1
  echo "== table round $r rc=$?"
done
python3 - "$OUT" "${ROUNDS:-2}" <<'PY' | tee "$OUT/table.txt"
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
t = {}
for r in range(1, rounds + 1):
    try:
        for row in json.load(open(f"{out}/table_{r}.json"))["rows"]:
            t.setdefault((row["M"], row["N"], row["K"]), []).append(row["us"]["cuBLAS"] / row["us"]["default"])
    except Exception as e:
        print("missing round", r, e)
below = 0
for k, x in t.items():
    below += min(x) < 0.95
    print(f"{k[0]:6d} x {k[1]:6d} x {k[2]:6d}: {' '.join(f'{y:.3f}' for y in x)}{'  <0.95' if min(x) < 0.95 else ''}")
print("points below 0.95 (worst round):", below, "of", len(t))
PY
cd "$OUT" && tar czf all.tgz --exclude all.tgz --exclude table.txt --exclude gpu.txt . 
