#!/usr/bin/env bash
# One device call: the default GEMM entry against cuBLAS at every M from
# MLO to MHI in steps of MSTEP (not only issue 6's points) on the three
# layers, clean L2, three captures a configuration; then entries forced at
# FOCUS shapes (FTILES; "<entry>@direct" = without the staged epilogue).
CARRY=${CARRY:-.carry/chains}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
SH=""
for nk in ${NKS:-4096x4096 14336x4096 4096x14336}; do
  for m in $(seq ${MLO:-32} ${MSTEP:-32} ${MHI:-1024}); do SH="$SH${SH:+,}${m}x$nk"; done
done
P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python)
"${P[@]}" timeout 300 python3 bench/gemm_cluster_probe.py --configs default --shapes "$SH" --reps ${REPS:-7} --captures 3 \
  --out "$OUT/msweep.json" > "$OUT/msweep.log" 2>&1
echo "msweep rc=$?"
if [ -n "${FOCUS:-}" ]; then
  "${P[@]}" timeout 200 python3 bench/gemm_cluster_probe.py --configs default --tiles "$FTILES" --shapes "$FOCUS" --reps 9 \
    --captures 3 --out "$OUT/focus.json" > "$OUT/focus.log" 2>&1
  echo "focus rc=$?"
fi
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
for name in ("msweep.json", "focus.json"):
    p = os.path.join(sys.argv[1], name)
    if not os.path.exists(p): continue
    d = json.load(open(p))
    for r in d["rows"]:
        us = r["us"]; cb = us["cuBLAS"]
        print(f'{name[:-5]} {r["M"]:5d}x{r["N"]}x{r["K"]}: cuBLAS {cb:.1f} | ' + " ".join(f"{k} {v:.1f} ({cb/v:.2f})" for k, v in us.items() if k != "cuBLAS"))
    print(name, "fails", d["fails"])
PY
