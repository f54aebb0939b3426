#!/usr/bin/env bash
# One device call: a change of pick_gemm_tile (CARRY) against the library
# before it (OLD): the GEMM bits of both (gemm_bits_dump: every entry
# forced and the default, compared), test_cuda.py -k gemm on the new one,
# then the default of each library at the shapes whose pick changed
# (gemm_cluster_probe.py --configs default, clean L2, CAPTURES graphs),
# ALIASES: "NEW=OLD" entry pairs for the bits compare (a new entry),
# ROUNDS rounds alternated. Tables in $OUT/table.txt.
CARRY=${CARRY:-.carry/rule2}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/rule}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
cp "$0" "$OUT/run.sh"
for v in old new; do
  L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 200 python3 bench/gemm_bits_dump.py dump "/tmp/bits_$v.json" > "$OUT/bits_$v.log" 2>&1
  sum+=("bits dump $v rc=$? $(tail -1 "$OUT/bits_$v.log")")
done
python3 bench/gemm_bits_dump.py compare /tmp/bits_old.json /tmp/bits_new.json ${ALIASES:-} > "$OUT/bits_compare.log" 2>&1
sum+=("bits new vs old rc=$? $(tail -1 "$OUT/bits_compare.log")")
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 300 python3 -m pytest -q -p no:cacheprovider tests/python/test_cuda.py -k "gemm or linear or mm" > "$OUT/pytest.log" 2>&1
sum+=("pytest gemm rc=$? $(tail -1 "$OUT/pytest.log")")
SH=""
for n in ${NS:-5120 6144 8192 11008 18944 28672 32000}; do for m in ${MS:-40 64 80 128}; do SH="$SH${SH:+,}${m}x${n}x${K:-4096}"; done; done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in new old; do
    L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
    SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 200 python3 bench/gemm_cluster_probe.py --configs default \
      --shapes "$SH" --reps ${REPS:-11} --captures ${CAPTURES:-3} --out "$OUT/table_${v}_$r.json" > "$OUT/table_${v}_$r.log" 2>&1
    sum+=("table $v $r rc=$?")
  done
done
python3 - "$OUT" "${ROUNDS:-2}" <<'PY' | tee "$OUT/table.txt"
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
t = {}
for v in ("old", "new"):
    for r in range(1, rounds + 1):
        for row in json.load(open(f"{out}/table_{v}_{r}.json"))["rows"]:
            k = f'{row["M"]}x{row["N"]}x{row["K"]}'
            t.setdefault(k, {}).setdefault(v, []).append(row["us"]["default"])
            t[k].setdefault("cuBLAS", []).append(row["us"]["cuBLAS"])
for k, d in t.items():
    print(f'{k:18s} old {" ".join(f"{x:.1f}" for x in d["old"])}  new {" ".join(f"{x:.1f}" for x in d["new"])}  cuBLAS {min(d["cuBLAS"]):.1f}  new/old {min(d["old"])/min(d["new"]):.3f}  cuBLAS/new {min(d["cuBLAS"])/min(d["new"]):.3f}')
json.dump(t, open(f"{out}/table.json", "w"))
PY
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
