#!/usr/bin/env bash
# One device call: a library with the new 64x96 GEMM entry (CARRY, default
# .carry/g96) against main's at the session's start (OLD, default
# .carry/cutl): GEMM bits of both (gemm_bits_dump; the new entry, which the
# old library lacks, is compared with the new library's default instead),
# test_cuda.py and verify (FULL=1) and bench_dense --gemm-only on the new
# one, compute-sanitizer memcheck / racecheck of the GEMM tests (SAN=1),
# then the entries at the M it is for (gemm_cluster_probe.py, 3 captures)
# and issue 6's 76 points for both libraries (ROUNDS, default 1).
CARRY=${CARRY:-.carry/g96}
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
python3 - "$OUT" <<'PY' > "$OUT/bits_64x96.log" 2>&1
import json, sys
out = sys.argv[1]
new = json.load(open(f"{out}/bits_new.json"))
keys = [k for k in new if k.endswith(" 64x96")]
bad = [k for k in keys if new[k] != new[k[: -len("64x96")] + "default"]]
print(f"64x96 outputs {len(keys)} differing from the default {len(bad)} {bad[:3]} -> {'SAME BITS' if keys and not bad else 'FAIL'}")
for v in ("old", "new"):
    d = json.load(open(f"{out}/bits_{v}.json"))
    json.dump({k: x for k, x in d.items() if not k.endswith(" 64x96")}, open(f"{out}/bits_{v}_common.json", "w"))
PY
sum+=("$(tail -1 "$OUT/bits_64x96.log")")
python3 bench/gemm_bits_dump.py compare "$OUT/bits_old_common.json" "$OUT/bits_new_common.json" > "$OUT/bits_compare.log" 2>&1
sum+=("bits new vs old (common entries) rc=$? $(tail -1 "$OUT/bits_compare.log")")
PYENV=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python)
source bench/gemm_device_checks.sh
gemm_python_checks
if [ "${SAN:-0}" = 1 ]; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in memcheck racecheck; do
    "${PYENV[@]}" timeout 300 "$CS" --tool $tool --target-processes all python3 -m pytest tests/python/test_cuda.py -q \
      -p no:cacheprovider -k "gemm_tile_entry and (64x96 or 128x128 or 16x64s)" > "$OUT/sanitizer_$tool.log" 2>&1
    sum+=("$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$OUT/sanitizer_$tool.log" | tr '\n' ' ')")
  done
fi
for s in "${sum[@]}"; do echo "$s"; done
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 200 python3 bench/gemm_cluster_probe.py --configs default \
  --tiles 64x96,64x128,64x64 --captures 3 --reps 11 \
  --shapes 192x4096x4096,160x4096x4096,144x4096x4096,192x2048x4096,192x4096x14336 --out "$OUT/probe_64x96.json" > "$OUT/probe_64x96.log" 2>&1
echo "probe rc=$?"; cat "$OUT/probe_64x96.log"
MS="1 16 64 128 192 256 384 512 640 768 896 1024 1152 1280 1536 1792 2048 4096 16384"
SH=""
for nk in 4096x4096 14336x4096 4096x14336 128256x4096; do for m in $MS; do SH="$SH${SH:+,}${m}x$nk"; done; done
for r in $(seq 1 "${ROUNDS:-1}"); do
  for v in new old; do
    L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
    SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 300 python3 bench/gemm_cluster_probe.py --configs default \
      --shapes "$SH" --reps 11 --captures 3 --out "$OUT/table_${v}_$r.json" > "$OUT/table_${v}_$r.log" 2>&1
    echo "table $v round $r rc=$?"
  done
done
python3 - "$OUT" "${ROUNDS:-1}" <<'PY' | tee "$OUT/table.txt"
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
t = {}
for v in ("old", "new"):
    for r in range(1, rounds + 1):
        try:
            for row in json.load(open(f"{out}/table_{v}_{r}.json"))["rows"]:
                t.setdefault(v, {}).setdefault((row["M"], row["N"], row["K"]), []).append(row["us"]["cuBLAS"] / row["us"]["default"])
        except Exception as e:
            print("missing", v, r, e)
below = {v: sum(min(x) < 0.95 for x in t.get(v, {}).values()) for v in t}
for k in t.get("new", {}):
    print(f"{k[0]:6d} x {k[1]:6d} x {k[2]:6d}: " + "  ".join(f"{v} {' '.join(f'{y:.2f}' for y in t[v].get(k, []))}" for v in t))
print("points below 0.95 (worst round):", below)
PY
tar -C "$OUT" -czf /tmp/all.tgz . && mv /tmp/all.tgz "$OUT/all.tgz" && find "$OUT" -type f ! -name all.tgz ! -name table.txt ! -name probe_64x96.log -delete
