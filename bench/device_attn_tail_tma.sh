#!/usr/bin/env bash
# One device call: the forward's and the backward's dense tiles that cross
# the sequence end by TMA's zero fill (the default) against by hand
# (SAMEBITS_FWD_TAIL_TMA=0 / SAMEBITS_BWD_TAIL_TMA=0), CARRY default
# .carry/ttail2 (libsamebits.so.xz + the two test binaries). The forward
# test (dense_vs_varlen checks both), the backward test --quick,
# memcheck and racecheck on both --small, then bench_attention.py and
# bench_attention_backward.py (samebits, cuDNN) at lengths that fill whole
# tiles and lengths one past them, each knob value alternated twice.
CARRY=${CARRY:-.carry/ttail2}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
mkdir -p "$OUT/logs"
chmod +x "$C"/test_attention_*_sm90
export SAMEBITS_BWD_TMA_STRICT=1
if [ -z "${SKIP_TEST:-}" ]; then
  LD_LIBRARY_PATH=$C timeout 300 "$C/test_attention_fwd_sm90" > "$OUT/logs/fwd_test.log" 2>&1
  sum+=("fwd test rc=$? $(grep -c '^\[PASS\]\|PASS' "$OUT/logs/fwd_test.log") $(grep -E 'failure|FAIL' "$OUT/logs/fwd_test.log" | tail -2 | tr '\n' ' ')")
  LD_LIBRARY_PATH=$C timeout 200 "$C/test_attention_bwd_sm90" --quick > "$OUT/logs/bwd_quick.log" 2>&1
  sum+=("bwd quick rc=$? $(count "$OUT/logs/bwd_quick.log") $(hashes "$OUT/logs/bwd_quick.log")")
  for t in fwd bwd; do
    for tool in memcheck racecheck; do
      LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool $tool "$C/test_attention_${t}_sm90" --small > "$OUT/logs/${t}_$tool.log" 2>&1
      sum+=("$t $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/logs/${t}_$tool.log" | tr '\n' ' ')")
    done
  done
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
L=${LENGTHS:-1000,1024,1025,2047,2049,4097}
for r in 1 2; do
  for t in 1 0; do
    SAMEBITS_FWD_TAIL_TMA=$t timeout 150 python3 bench/bench_attention.py --lib $C/libsamebits.so --out "$OUT/logs/fwd_t${t}_$r" \
      --dims 128 --lengths $L --no-flex --reps 20 > "$OUT/logs/fwd_t${t}_$r.log" 2>&1
    echo "fwd bench tail=$t round $r rc=$?" | tee -a "$OUT/summary.txt"
    SAMEBITS_BWD_TAIL_TMA=$t SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench timeout 200 \
      python3 bench/bench_attention_backward.py --out "$OUT/logs/bwd_t${t}_$r" --dims 128 --lengths ${BL:-1024,1025,2048,2049,4097} \
      --no-flex --reps 10 --impls samebits,cudnn > "$OUT/logs/bwd_t${t}_$r.log" 2>&1
    echo "bwd bench tail=$t round $r rc=$?" | tee -a "$OUT/summary.txt"
  done
done
python3 - "$OUT/logs" <<'PY' | tee "$OUT/table.txt"
import json, sys, os
d = sys.argv[1]
for kind in ("fwd", "bwd"):
    rows = {}
    for r in (1, 2):
        for t in (1, 0):
            f = f"{d}/{kind}_t{t}_{r}.log"
            if not os.path.exists(f): continue
            for line in open(f):
                if line.startswith("{"):
                    j = json.loads(line)
                    k = (j["causal"], j["seqlen"])
                    rows.setdefault(k, {})[f"t{t}.{r}"] = (j.get("samebits_tflops", 0), j.get("cudnn_tflops", 0),
                                                          j.get("queued_ratio_vs_cudnn"))
    print(f"{kind}: causal L | samebits TFLOP/s tma.1 hand.1 tma.2 hand.2 | samebits/cuDNN tma.1 hand.1 tma.2 hand.2"
          + (" | queued tma.1 hand.1 tma.2 hand.2" if kind == "bwd" else ""))
    cols = ["t1.1", "t0.1", "t1.2", "t0.2"]
    for k, v in sorted(rows.items()):
        tf = " ".join(f"{v[c][0]:.0f}" if c in v else "-" for c in cols)
        ra = " ".join(f"{v[c][0] / v[c][1]:.2f}" if c in v and v[c][1] else "-" for c in cols)
        q = " | " + " ".join(f"{v[c][2]:.2f}" if c in v and v[c][2] else "-" for c in cols) if kind == "bwd" else ""
        print(f"  {k[0]} {k[1]} | {tf} | {ra}{q}")
PY
tar -C "$OUT" -czf /tmp/logs.tgz logs && rm -rf "$OUT/logs" && mv /tmp/logs.tgz "$OUT/logs.tgz"
