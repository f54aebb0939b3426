#!/usr/bin/env bash
# One device call: the GEMM entries 128x168 and 128x176 (two rounds of
# tiles where 128x192 needs two and 128x160 three, at N = 14336) forced
# beside the rule's pick and the neighbouring entries (gemm_cluster_probe.py,
# clean L2, every output compared bitwise with the default's), then the
# forced-entry tests of test_cuda.py. CARRY: libsamebits.so.xz.
CARRY=${CARRY:-.carry/g168}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
SH=""
for nk in ${NKS:-14336x4096 4096x4096 4096x14336 128256x4096}; do for m in ${MS:-256 384 512 640 768 1024 1152 1280 1536}; do SH="$SH${SH:+,}${m}x$nk"; done; done
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 400 python3 bench/gemm_cluster_probe.py --configs default \
  --tiles "${TILES:-128x168,128x176,128x192,128x160,128x224,192x192w3,256x160,128x256}" --shapes "$SH" --reps ${REPS:-9} \
  --captures ${CAPTURES:-3} --out "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
sum+=("sweep rc=$?")
python3 - "$OUT/sweep.json" <<'PY' | tee "$OUT/sweep.txt"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    us = r["us"]; cb = us["cuBLAS"]
    ents = {k: v for k, v in us.items() if k != "cuBLAS"}
    best = min(ents, key=ents.get)
    print(f'{r["M"]:5d}x{r["N"]}x{r["K"]}: cuBLAS {cb:.1f} default {us["default"]:.1f} ({cb/us["default"]:.3f}) best {best} {ents[best]:.1f} ({cb/ents[best]:.3f}) | ' +
          " ".join(f'{k}={v:.1f}' for k, v in ents.items()))
print("fails", d["fails"])
PY
if [ "${TESTS:-1}" != 0 ]; then
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 300 python3 -m pytest -q -p no:cacheprovider tests/python/test_cuda.py -k "gemm or linear or mm" > "$OUT/pytest.log" 2>&1
  sum+=("pytest gemm rc=$? $(tail -1 "$OUT/pytest.log")")
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
