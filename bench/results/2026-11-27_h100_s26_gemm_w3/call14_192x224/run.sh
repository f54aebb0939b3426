#!/usr/bin/env bash
# One device call: every wide GEMM entry forced at the middle M of issue 6's
# layers (gemm_cluster_probe.py --tiles, clean L2), beside the default and
# cuBLAS, for fitting pick_gemm_tile's factors (CARRY's library). Results
# packed into $OUT/all.tgz, the table into $OUT/sweep.txt.
CARRY=${CARRY:-.carry/gu}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
MS=${MS:-"128 192 256 384 512 640 768 896 1024 1152 1280 1536 1792"}
TILES=${TILES:-128x256,192x192,256x160,128x224,128x192,128x160,128x128,128x96,64x128,64x128c2,192x128,64x64,128x128pp,128x128m2,128x256m2}
SH=""
for nk in ${NKS:-4096x4096 14336x4096 4096x14336}; do for m in $MS; do SH="$SH${SH:+,}${m}x$nk"; done; done
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 500 python3 bench/gemm_cluster_probe.py --configs default \
  --tiles "$TILES" --shapes "$SH" --reps ${REPS:-9} --captures ${CAPTURES:-1} --out "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$?"
python3 - "$OUT/sweep.json" <<'PY' | tee "$OUT/sweep.txt"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    us = r["us"]; cb = us["cuBLAS"]
    ents = {k: v for k, v in us.items() if k not in ("cuBLAS",)}
    best = min(ents, key=ents.get)
    print(f'{r["M"]:5d}x{r["N"]}x{r["K"]}: cuBLAS {cb:.1f} default {us["default"]:.1f} ({cb/us["default"]:.2f}) best {best} {ents[best]:.1f} ({cb/ents[best]:.2f})')
print("fails", d["fails"])
PY
tar -C "$OUT" -czf "$OUT/all.tgz" --exclude all.tgz . && find "$OUT" -type f ! -name all.tgz ! -name sweep.txt -delete
