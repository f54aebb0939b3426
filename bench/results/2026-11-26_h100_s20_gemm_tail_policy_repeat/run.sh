#!/usr/bin/env bash
# One device call: the default GEMM entry against cuBLAS at every M in steps
# of 32 on the three layers (clean L2, three captures), under each policy of
# the last tiles (SAMEBITS_GEMM_TAIL_M / _N, eighths of a tile past the
# operand from which a last tile moves back; 0 any, 9 never), ROUNDS rounds
# alternated; bits compared with the default policy by gemm_bits_dump.
CARRY=${CARRY:-.carry/tailp}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
POL=${POL:-"0:0 9:9 0:9 4:4 0:4"}
SH=""
for nk in 4096x4096 14336x4096 4096x14336; do for m in $(seq 32 32 ${MHI:-2048}); do SH="$SH${SH:+,}${m}x$nk"; done; done
P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python)
for pol in $POL; do
  "${P[@]}" SAMEBITS_GEMM_TAIL_M=${pol%:*} SAMEBITS_GEMM_TAIL_N=${pol#*:} timeout 120 python3 bench/gemm_bits_dump.py dump "$OUT/bits_${pol/:/_}.json" > /dev/null 2>&1
done
for pol in $POL; do
  python3 bench/gemm_bits_dump.py compare "$OUT/bits_0_0.json" "$OUT/bits_${pol/:/_}.json" 2>&1 | tail -1 | sed "s/^/bits $pol vs 0:0: /"
done
for r in $(seq 1 ${ROUNDS:-1}); do
  for pol in $POL; do
    "${P[@]}" SAMEBITS_GEMM_TAIL_M=${pol%:*} SAMEBITS_GEMM_TAIL_N=${pol#*:} timeout 100 python3 bench/gemm_cluster_probe.py --configs default \
      --shapes "$SH" --reps 7 --captures 3 --out "$OUT/msweep_${pol/:/_}_$r.json" > "$OUT/msweep_${pol/:/_}_$r.log" 2>&1
    echo "msweep $pol r$r rc=$?"
  done
done
python3 - "$OUT" "$POL" <<'PY' | tee "$OUT/summary.txt"
import glob, json, math, os, sys
o, pols = sys.argv[1], sys.argv[2].split()
rat = {}
for pol in pols:
    for p in glob.glob(os.path.join(o, f"msweep_{pol.replace(':', '_')}_*.json")):
        for row in json.load(open(p))["rows"]:
            rat.setdefault(pol, {}).setdefault((row["N"], row["K"], row["M"]), []).append(row["us"]["cuBLAS"] / row["us"]["default"])
for pol in pols:
    r = {k: sum(v) / len(v) for k, v in rat.get(pol, {}).items()}
    if not r: continue
    below = sorted(k for k in r if r[k] < 0.95)
    gm = math.exp(sum(math.log(v) for v in r.values()) / len(r))
    print(f"policy {pol}: geomean {gm:.3f}, lowest {min(r.values()):.2f}, {len(below)} of {len(r)} below 0.95")
keys = sorted(rat[pols[0]])
print("M N K " + " ".join(pols))
for k in keys:
    vals = [sum(rat[p][k]) / len(rat[p][k]) for p in pols if k in rat.get(p, {})]
    if min(vals) < 0.95 or max(vals) - min(vals) > 0.04:
        print(f"{k[2]} {k[0]} {k[1]} " + " ".join(f"{v:.2f}" for v in vals))
PY
tar -C "$OUT" -czf /tmp/tp.tgz . && mv /tmp/tp.tgz "$OUT/all.tgz" && find "$OUT" -type f ! -name all.tgz ! -name summary.txt -delete
