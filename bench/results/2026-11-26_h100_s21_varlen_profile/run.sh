#!/usr/bin/env bash
# One device call: where a packed backward of random lengths spends its
# time. The C bench (dense L = 1024 and packed lengths in [64, 2048], same
# token count), then bench_varlen.py with --profile on the same lengths and
# on sixteen packed sequences of 1024 (CARRY, default .carry/ttail5).
CARRY=${CARRY:-.carry/ttail5}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
chmod +x "$C"/test_attention_bwd_sm90
BWD_BENCH_DIMS=128 BWD_BENCH_LENGTHS=1024 BWD_BENCH_PACKED=1 BWD_BENCH_PACKED_RANGE=64,2048 LD_LIBRARY_PATH=$C \
  timeout 120 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/cbench.log" 2>&1
echo "C bench rc=$?"; cat "$OUT/cbench.log"
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 300 python3 bench/bench_varlen.py --out "$OUT/varlen" \
  --dists 64-2048,1024-1024 --profile --rounds 2 --values 1 > "$OUT/varlen.log" 2>&1
echo "varlen rc=$?"
python3 - "$OUT/varlen.log" <<'PY' | tee "$OUT/table.txt"
import json, sys
for l in open(sys.argv[1]):
    if not l.startswith("{"): continue
    r = json.loads(l)
    if "profile_bwd_us" in r:
        tot = sum(r["profile_bwd_us"].values())
        print(f"{r['dist']} causal={r['causal']} kernels {tot:.0f} us:", "; ".join(f"{k[:60]} {v:.0f}" for k, v in r["profile_bwd_us"].items()))
    else:
        print(f"{r['dist']} causal={r['causal']} seqs={r['seqs']} round {r['round']}: fwd {r['fwd_ms']*1e3:.0f} us {r['fwd_tflops']:.0f} TF, bwd {r['bwd_ms']*1e3:.0f} us {r['bwd_tflops']:.0f} TF")
PY
