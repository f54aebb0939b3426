#!/usr/bin/env bash
# One device call: the GEMM entries that give a CTA tile's columns to two
# (or four) consumer warpgroups, so a CTA runs two (four) independent wgmma
# chains (64x128w2, 64x96w2, 128x96w4), forced beside the incumbent entries
# and the default at the middle M of issue 6's layers (clean L2, three
# captures a configuration), bits compared with the default at every shape;
# then the GEMM tile tests of test_cuda.py (every entry's bits).
CARRY=${CARRY:-.carry/chains}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
MS=${MS:-"128 160 192 256 320 384 512 640"}
TILES=${TILES:-64x128,64x128w2,64x96w2,128x96,128x96w4,192x128,64x128c2,128x128,128x160}
SH=""
for nk in ${NKS:-4096x4096 14336x4096 4096x14336}; do for m in $MS; do SH="$SH${SH:+,}${m}x$nk"; done; done
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 400 python3 bench/gemm_cluster_probe.py --configs default \
  --tiles "$TILES" --shapes "$SH" --reps ${REPS:-9} --captures 3 --out "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$?"
python3 - "$OUT/sweep.json" <<'PY' | tee "$OUT/sweep.txt"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    us = r["us"]; cb = us["cuBLAS"]
    ents = {k: v for k, v in us.items() if k != "cuBLAS"}
    best = min(ents, key=ents.get)
    print(f'{r["M"]:5d}x{r["N"]}x{r["K"]}: cuBLAS {cb:.1f} default {us["default"]:.1f} ({cb/us["default"]:.2f}) best {best} {ents[best]:.1f} ({cb/ents[best]:.2f}) | '
          + " ".join(f"{k}:{cb/v:.2f}" for k, v in ents.items()))
print("fails", d["fails"])
PY
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 150 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider \
  -k "gemm" > "$OUT/pytest_gemm.log" 2>&1
echo "pytest gemm rc=$? $(tail -1 "$OUT/pytest_gemm.log")"
tar -C "$OUT" -czf "$OUT/all.tgz" --exclude all.tgz . && find "$OUT" -type f ! -name all.tgz ! -name sweep.txt ! -name pytest_gemm.log -delete
