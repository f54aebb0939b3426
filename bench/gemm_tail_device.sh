#!/usr/bin/env bash
# One device call for the GEMM's last tiles moved back inside the operands
# (tile_row0 / tile_col0, gemm_mainloop_sm90_tma_wgmma.cuh): the bits of
# every entry against an earlier library (OLD; gemm_bits_dump.py), the GEMM
# and dense tests of test_cuda.py / test_dense.py, memcheck on the GEMM tile
# tests, then the default against cuBLAS at every M in steps of 32 on the
# three layers for both libraries (clean L2, three captures), alternated.
CARRY=${CARRY:-.carry/tail}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/dsk}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
cp "$0" "$OUT/run.sh"
sha256sum "$C/libsamebits.so" "$O/libsamebits.so" > "$OUT/lib_sha256.txt"
for v in new old; do
  L=$C; [ $v = old ] && L=$O
  SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=python timeout 200 python3 bench/gemm_bits_dump.py dump "$OUT/bits_$v.json" > "$OUT/bits_$v.log" 2>&1
  echo "bits dump $v rc=$? $(tail -1 "$OUT/bits_$v.log")"
done
python3 bench/gemm_bits_dump.py compare "$OUT/bits_old.json" "$OUT/bits_new.json" > "$OUT/bits_compare.log" 2>&1
echo "bits compare rc=$? $(tail -2 "$OUT/bits_compare.log" | tr '\n' ' ')"
N=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python)
"${N[@]}" timeout 240 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "pytest test_cuda + test_dense rc=$? $(tail -1 "$OUT/pytest.log")"
"${N[@]}" timeout 200 compute-sanitizer --tool memcheck python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider \
  -k "gemm_tile_entry or staged_epilogue" > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log") $(tail -1 "$OUT/memcheck.log")"
SH=""
for nk in 4096x4096 14336x4096 4096x14336; do for m in $(seq 32 32 ${MHI:-2048}); do SH="$SH${SH:+,}${m}x$nk"; done; done
for r in 1 2; do
  for v in new old; do
    L=$C; [ $v = old ] && L=$O
    SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=python timeout 150 python3 bench/gemm_cluster_probe.py --configs default \
      --shapes "$SH" --reps 7 --captures 3 --out "$OUT/msweep_${v}_$r.json" > "$OUT/msweep_${v}_$r.log" 2>&1
    echo "msweep $v r$r rc=$?"
  done
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
o = sys.argv[1]
rat = {}
for v in ("new", "old"):
    for r in (1, 2):
        p = os.path.join(o, f"msweep_{v}_{r}.json")
        if not os.path.exists(p): continue
        for row in json.load(open(p))["rows"]:
            k = (row["N"], row["K"], row["M"])
            rat.setdefault(k, {}).setdefault(v, []).append(row["us"]["cuBLAS"] / row["us"]["default"])
for nk in sorted({(k[0], k[1]) for k in rat}):
    ks = sorted(k for k in rat if (k[0], k[1]) == nk)
    for v in ("old", "new"):
        vals = [min(rat[k].get(v, [0])) for k in ks]
        below = [f"{k[2]}:{min(rat[k][v]):.2f}" for k in ks if v in rat[k] and min(rat[k][v]) < 0.95]
        print(f"N={nk[0]} K={nk[1]} {v}: lowest {min(vals):.2f}, {len(below)} of {len(ks)} M below 0.95: {' '.join(below)}")
PY
tar -C "$OUT" -czf /tmp/tail_all.tgz . && mv /tmp/tail_all.tgz "$OUT/all.tgz" && find "$OUT" -type f ! -name all.tgz ! -name summary.txt ! -name pytest.log -delete
