#!/usr/bin/env bash
# One device call (thirty-first session): does samebits' first place in
# bench_decode.py's rounds (captured and timed first, before flash and
# cuDNN) read it slow, as the GEMM probe's first configuration was? The
# decode bench without (the default) and with the lead (--lead: a copy of samebits'
# call takes the first place; the bench's default in the thirty-first session),
# alternated ROUNDS times, CUDA graphs, clean-L2 flush. (The call itself ran
# this script's first form, results folder run.sh: --lead was then opt-in,
# as it is again since the thirty-second session, which found the lead
# reading samebits warm and the peers cold: bench/predecessor_probe.py.)
set -uo pipefail
CARRY=${CARRY:-.carry/final31}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export PYTHONPATH=$PWD/python:$PWD/bench SAMEBITS_LIBRARY=$C/libsamebits.so
SH=${SHAPES:-1x4096,1x16384,2x32768,16x4096,64x4096,256x4096}
for r in $(seq 1 ${ROUNDS:-2}); do
  for lead in "" "--lead"; do
    d="$OUT/r$r${lead:+_lead}"
    timeout 250 python3 bench/bench_decode.py --out "$d" --graph --captures 2 --reps 15 --no-flex --shapes "$SH" $lead \
      > "$d.log" 2>&1
    echo "== round $r ${lead:-without the lead}"; grep -A20 "^| batch" "$d.log"
  done
done
python3 - "$OUT" <<'PY'
import glob, json, sys
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/r*/bench_decode*.json")):
    lead = "_lead" in f
    for r in json.load(open(f)):
        k = f"{r['batch']}x{r['context']}"
        d = rows.setdefault(k, {})
        d.setdefault("samebits" + ("_lead" if lead else ""), []).append(round(r["samebits_us"], 1))
        d.setdefault("cudnn" + ("_lead" if lead else ""), []).append(round(r.get("cudnn_us", 0), 1))
        if lead:
            d.setdefault("lead", []).append(round(r["lead_us"], 1))
print(json.dumps(rows))
PY
cd "$OUT" && tar czf all.tgz r* && rm -rf r1* r2* r3* r4*
