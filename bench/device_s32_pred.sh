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
# (OLD), rows_dw_probe.py --lead, alternated ROUNDS times
if [ "${ROWS:-0}" = 1 ]; then
  O=$PWD/${OLD:-.carry/s32new}
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "$O/libsamebits.so.xz" "$O/libsamebits.so"
  for r in $(seq 1 "${ROUNDS:-2}"); do
    for v in old new; do
      L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
      SAMEBITS_LIBRARY=$L timeout 200 python3 bench/rows_dw_probe.py --lead --out "$OUT/dw_${v}_$r.json" \
        --ms ${MS:-4096,8192,16384} > "$OUT/dw_${v}_$r.log" 2>&1
      echo "== rows_dw_probe $v round $r rc=$?"; grep dw_default "$OUT/dw_${v}_$r.log" | awk '{print $1,$2,$3,$4,$11,$12,$13,$14}'
    done
  done
fi
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f dw_*.json dw_*.log
