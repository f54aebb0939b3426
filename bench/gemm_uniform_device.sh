#!/usr/bin/env bash
# One device call: a library with a changed GEMM mainloop (CARRY, default
# .carry/gu) against main's (OLD, default .carry/cutl): GEMM bits of both
# (gemm_bits_dump, every entry forced), test_cuda.py -k gemm and
# bench_dense --gemm-only's entry checks on the new one, then issue 6's 76
# GEMM points (gemm_cluster_probe.py --configs default, clean L2) for each
# library (CAPTURES graphs each, default 3), alternated ROUNDS times
# (default 2), and the CUTLASS probe (bench/cutlass_probe, its library in
# OLD) at a few shapes when CUTL=1.
CARRY=${CARRY:-.carry/gu}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/cutl}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
sha256sum "$C/libsamebits.so" "$O/libsamebits.so" > "$OUT/lib_sha256.txt"
cp "$0" "$OUT/run.sh"
for v in old new; do
  L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 200 python3 bench/gemm_bits_dump.py dump "$OUT/bits_$v.json" > "$OUT/bits_$v.log" 2>&1
  sum+=("bits dump $v rc=$? $(tail -1 "$OUT/bits_$v.log")")
done
# ALIASES: "NEW=OLD" entry pairs (an entry the old library lacks, compared with its twin)
python3 bench/gemm_bits_dump.py compare "$OUT/bits_old.json" "$OUT/bits_new.json" ${ALIASES:-} > "$OUT/bits_compare.log" 2>&1
sum+=("bits new vs old rc=$? $(tail -1 "$OUT/bits_compare.log")")
PYENV=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
source bench/gemm_device_checks.sh
gemm_python_checks
for s in "${sum[@]}"; do echo "$s"; done
MS="1 16 64 128 192 256 384 512 640 768 896 1024 1152 1280 1536 1792 2048 4096 16384"
SH=""
for nk in 4096x4096 14336x4096 4096x14336 128256x4096; do for m in $MS; do SH="$SH${SH:+,}${m}x$nk"; done; done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in ${VARIANTS:-new old}; do
    L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
    SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 300 python3 bench/gemm_cluster_probe.py --configs default \
      --shapes "$SH" --reps ${REPS:-11} --captures ${CAPTURES:-3} ${PROBE_ARGS:-} --out "$OUT/table_${v}_$r.json" > "$OUT/table_${v}_$r.log" 2>&1
    echo "table $v round $r rc=$?"
  done
done
python3 - "$OUT" "${ROUNDS:-2}" <<'PY' | tee "$OUT/table.txt"
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(v):
    t = {}
    for r in range(1, rounds + 1):
        try:
            for row in json.load(open(f"{out}/table_{v}_{r}.json"))["rows"]:
                k = (row["M"], row["N"], row["K"])
                t.setdefault(k, []).append(row["us"]["cuBLAS"] / row["us"]["default"])
        except Exception as e:
            print("missing", v, r, e)
    return t
vs = ["old", "new"]
t = {v: load(v) for v in vs}
vs = [v for v in vs if t[v]]
below = {v: 0 for v in vs}
for k in t["new"]:
    line = f"{k[0]:6d} x {k[1]:6d} x {k[2]:6d}:"
    for v in vs:
        x = t[v].get(k, [0])
        below[v] += min(x) < 0.95
        line += f"  {v} {' '.join(f'{y:.2f}' for y in x)}"
    print(line)
print("points below 0.95 (worst round):", below)
PY
if [ "${CUTL:-0}" = 1 ]; then
  SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 200 python3 bench/cutlass_probe/probe.py \
    --lib "$O/libsbcutlass.so" --out "$OUT/cutlass_probe.json" --cfgs 2,0 --reps 11 \
    --shapes 512x4096x14336,384x4096x4096,640x4096x4096,1152x4096x4096,128x4096x4096 > "$OUT/cutlass_probe.log" 2>&1
  echo "cutlass probe rc=$?"; cat "$OUT/cutlass_probe.log"
fi
# every file but the bits dumps into one archive (the device returns a few files only)
tar -C "$OUT" -czf "$OUT/all.tgz" --exclude all.tgz . && find "$OUT" -type f ! -name all.tgz ! -name table.txt ! -name 'bits_compare.log' -delete
