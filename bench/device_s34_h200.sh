#!/usr/bin/env bash
# One device call (thirty-fourth session): main's decode on the card at
# hand (asked for an H200): the decode test --quick (with and without the
# combine's warm-up) and bench_decode.py --graph at the usual shapes, ROUNDS
# rounds (each call after the other implementation's; copy bandwidth from
# the same run).
set -uo pipefail
CARRY=${CARRY:-.carry/s33final}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$C/test_attention_decode_sm90
chmod +x "$T"
LD_LIBRARY_PATH=$C timeout 60 "$T" --quick > "$OUT/quick.log" 2>&1
sum+=("decode --quick rc=$? $(count "$OUT/quick.log")")
SAMEBITS_DECODE_COMBINE_WARM=0 LD_LIBRARY_PATH=$C timeout 60 "$T" --quick > "$OUT/quick_nowarm.log" 2>&1
sum+=("decode --quick, combine warm-up off rc=$? $(count "$OUT/quick_nowarm.log")")
printf '%s\n' "${sum[@]}"
for r in $(seq 1 "${ROUNDS:-2}"); do
  PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$C/libsamebits.so timeout 150 python3 bench/bench_decode.py --out "$OUT/bd_r$r" \
    --graph --captures 2 --reps 15 --no-flex \
    --shapes ${SHAPES:-1x2048,1x4096,2x2048,1x8192,1x16384,1x32768,1x131072,8x2048,16x4096,64x4096} > "$OUT/bd_r$r.log" 2>&1
  echo "== round $r rc=$?"; grep -E '^\| [0-9]|copy bandwidth' "$OUT/bd_r$r.log"
done
printf '%s\n' "${sum[@]}" > "$OUT/summary.txt"
cd "$OUT" && tar czf logs.tgz --exclude logs.tgz --exclude summary.txt . 
find . -maxdepth 1 -type f ! -name logs.tgz ! -name summary.txt ! -name gpu.txt -delete
find . -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
