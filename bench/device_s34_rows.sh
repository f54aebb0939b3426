#!/usr/bin/env bash
# One device call (thirty-fourth session): the fused RMSNorm dx + dw kernel
# with other rows-a-step / stages settings (FREE knobs kDwRows, kDwStages),
# one library each (VARIANTS: space-separated carry dirs), against main's
# (OLD): the row-op bits of every library (rows_bits_dump, default and fused
# path forced) compared with OLD's, then rows_dw_probe.py (no lead) at NS x
# MS, the libraries in turn, ROUNDS rounds, the order rotated.
set -uo pipefail
CARRY=${OLD:-.carry/s33final}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
read -r -a VS <<< "${VARIANTS:?}"
for d in "${VS[@]}"; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$d/libsamebits.so.xz" "$d/libsamebits.so"
done
ALL=("$C" "${VS[@]/#/$PWD/}")
for L in "${ALL[@]}"; do
  t=$(basename "$L")
  for f in default fused; do
    E=(); [ $f = fused ] && E=(SAMEBITS_RMSNORM_DW_PATH=fused)
    env "${E[@]}" SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=python timeout 150 python3 bench/rows_bits_dump.py dump "$OUT/bits_${t}_$f.json" > "$OUT/bits_${t}_$f.log" 2>&1
  done
done
o=$(basename "$C")
for d in "${VS[@]}"; do
  t=$(basename "$d")
  for f in default fused; do
    python3 bench/rows_bits_dump.py compare "$OUT/bits_${o}_$f.json" "$OUT/bits_${t}_$f.json" > "$OUT/cmp_${t}_$f.log" 2>&1
    sum+=("bits $t $f vs $o rc=$? $(tail -1 "$OUT/cmp_${t}_$f.log")")
  done
done
printf '%s\n' "${sum[@]}"
n=${#ALL[@]}
for r in $(seq 1 "${ROUNDS:-2}"); do
  for i in $(seq 0 $((n - 1))); do
    L=${ALL[$(( (i + r - 1) % n ))]}; t=$(basename "$L")
    SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench timeout 150 python3 bench/rows_dw_probe.py \
      --out "$OUT/dw_${t}_$r.json" --ms ${MS:-4096,16384,32768} --ns ${NS:-4096} > "$OUT/dw_${t}_$r.log" 2>&1
    echo "== $t round $r rc=$?"; grep -E "frac|default" "$OUT/dw_${t}_$r.log" | head -20
  done
done
printf '%s\n' "${sum[@]}" > "$OUT/summary.txt"
cd "$OUT" && python3 - <<'PY'
import glob, json
out = {}
for f in sorted(glob.glob("dw_*.json")):
    out[f[3:-5]] = json.load(open(f))
json.dump(out, open("dw_all.json.txt", "w"))
PY
tar czf logs.tgz --exclude logs.tgz --exclude summary.txt --exclude dw_all.json.txt . 
find . -maxdepth 1 -type f ! -name logs.tgz ! -name summary.txt ! -name dw_all.json.txt ! -name gpu.txt -delete
