#!/usr/bin/env bash
# One device call (thirty-second session): bench/predecessor_probe.py (does
# a timed call depend on the call that ran before the L2 flush?), GEMM and
# decode shapes, twice.
set -uo pipefail
CARRY=${CARRY:-.carry/s32rows}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench SAMEBITS_LIBRARY=$C/libsamebits.so
for r in 1 2; do
  timeout 200 python3 bench/predecessor_probe.py --out "$OUT/pred_r$r.json" ${SHAPES:+--shapes $SHAPES} > "$OUT/pred_r$r.log" 2>&1
  echo "== round $r rc=$?"; cat "$OUT/pred_r$r.log"
done
# ROWS=1: then the RMSNorm dx + dw change (CARRY) against the library before
# (OLD) and a measurement build with two rows a step at N = 4096 (ROWS2,
# rows2.patch beside it), rows_dw_probe.py --lead, alternated ROUNDS times
if [ "${ROWS:-0}" = 1 ]; then
  O=$PWD/${OLD:-.carry/s32new}
  R2=$PWD/${ROWS2:-.carry/s32rows2}
  for d in "$O" "$R2"; do
    python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
      "$d/libsamebits.so.xz" "$d/libsamebits.so"
  done
  for v in new rows2; do
    L=$C/libsamebits.so; [ $v = rows2 ] && L=$R2/libsamebits.so
    SAMEBITS_RMSNORM_DW_PATH=fused SAMEBITS_LIBRARY=$L timeout 150 python3 bench/rows_bits_dump.py dump "$OUT/bits_$v.json" \
      > "$OUT/bits_$v.log" 2>&1
  done
  python3 bench/rows_bits_dump.py compare "$OUT/bits_new.json" "$OUT/bits_rows2.json" 2>&1 | tail -1 | sed 's/^/rows2 against new, fused forced: /'
  for r in $(seq 1 "${ROUNDS:-2}"); do
    for v in old new rows2; do
      L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so; [ $v = rows2 ] && L=$R2/libsamebits.so
      SAMEBITS_LIBRARY=$L timeout 200 python3 bench/rows_dw_probe.py --lead --out "$OUT/dw_${v}_$r.json" \
        --ms ${MS:-4096,8192,16384} > "$OUT/dw_${v}_$r.log" 2>&1
      echo "== rows_dw_probe $v round $r rc=$?"; grep dw_default "$OUT/dw_${v}_$r.log" | awk '{print $1,$2,$3,$4,$11,$12,$13,$14}'
    done
  done
fi
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f dw_*.json dw_*.log
