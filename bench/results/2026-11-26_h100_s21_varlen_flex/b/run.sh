#!/usr/bin/env bash
# One device call: packed batches of random lengths, samebits beside
# compiled FlexAttention with a document mask (bench_varlen.py --flex),
# forward and backward (CARRY, default .carry/final21).
CARRY=${CARRY:-.carry/final21}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout ${LIMIT:-400} python3 bench/bench_varlen.py --out "$OUT/varlen" \
  --dists ${DISTS:-64-2048} --flex --rounds 1 --values 1 > "$OUT/varlen.log" 2>&1
echo "varlen rc=$?"
python3 - "$OUT/varlen.log" <<'PY' | tee "$OUT/table.txt"
import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{"):
        r = json.loads(l)
        if "error" in r:
            print(r["impl"], r["dist"], r["causal"], "ERROR", r["error"]); continue
        print(f"{r['impl']:9s} {r['dist']} causal={r['causal']!s:5s} fwd {r['fwd_ms']*1e3:7.0f} us {r['fwd_tflops']:5.0f} TF | bwd {r['bwd_ms']*1e3:7.0f} us {r['bwd_tflops']:5.0f} TF")
PY
