#!/usr/bin/env bash
# One device call: a packed batch's last tiles by TMA (rows past the
# sequence made harmless) against by hand, forward and backward (CARRY,
# default .carry/ttail3: libsamebits.so.xz + the two test binaries). The
# full forward and backward tests (nan_neighbour_case: NaN / Inf
# neighbours, both knob values; the six 50-run hashes), memcheck and
# racecheck on both --small, the C backward bench on a packed batch, then
# bench/bench_varlen.py (forward and backward, random lengths, knob values
# alternated).
CARRY=${CARRY:-.carry/ttail3}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
mkdir -p "$OUT/logs"
chmod +x "$C"/test_attention_*_sm90
export SAMEBITS_BWD_TMA_STRICT=1
if [ -z "${SKIP_TEST:-}" ]; then
  LD_LIBRARY_PATH=$C timeout 300 "$C/test_attention_fwd_sm90" > "$OUT/logs/fwd_test.log" 2>&1
  sum+=("fwd test rc=$? $(grep -E 'ALL PASSED|FAILED' "$OUT/logs/fwd_test.log" | tail -1) $(grep -E 'NaN|negative control' "$OUT/logs/fwd_test.log" | cut -c1-60 | sort | uniq -c | tr '\n' ';')")
  LD_LIBRARY_PATH=$C timeout 300 "$C/test_attention_bwd_sm90" > "$OUT/logs/bwd_test.log" 2>&1
  sum+=("bwd test rc=$? $(count "$OUT/logs/bwd_test.log") $(hashes "$OUT/logs/bwd_test.log")")
  sum+=("bwd NaN cases: $(grep -c 'PASS.*NaN' "$OUT/logs/bwd_test.log") passed, $(grep -c 'FAIL.*NaN' "$OUT/logs/bwd_test.log") failed")
  for t in fwd bwd; do
    for tool in memcheck racecheck; do
      LD_LIBRARY_PATH=$C timeout 150 compute-sanitizer --tool $tool "$C/test_attention_${t}_sm90" --small > "$OUT/logs/${t}_$tool.log" 2>&1
      sum+=("$t $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/logs/${t}_$tool.log" | tr '\n' ' ')")
    done
  done
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
for r in 1 2; do
  for t in 1 0; do
    SAMEBITS_BWD_TAIL_TMA=$t BWD_BENCH_DIMS=128 BWD_BENCH_LENGTHS=${LENGTHS:-1025} BWD_BENCH_PACKED=1 LD_LIBRARY_PATH=$C \
      timeout 120 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/logs/cbench_t${t}_$r.log" 2>&1
    echo "C bench tail=$t round $r rc=$? $(grep packed "$OUT/logs/cbench_t${t}_$r.log" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
  done
done
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 300 python3 bench/bench_varlen.py --out "$OUT/logs/varlen" \
  > "$OUT/logs/varlen.log" 2>&1
echo "varlen rc=$?" | tee -a "$OUT/summary.txt"
if [ -n "${OLD:-}" ]; then  # an earlier library, its TMA tails only (value 1)
  O=$PWD/$OLD
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$O/libsamebits.so.xz" "$O/libsamebits.so"
  SAMEBITS_LIBRARY=$O/libsamebits.so PYTHONPATH=python timeout 200 python3 bench/bench_varlen.py --out "$OUT/logs/varlen_old" \
    --values 1 > "$OUT/logs/varlen_old.log" 2>&1
  echo "varlen old rc=$?" | tee -a "$OUT/summary.txt"
  python3 - "$OUT/logs/varlen.log" "$OUT/logs/varlen_old.log" <<'PY' | tee "$OUT/table_old.txt"
import json, sys
new = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"value": "1"' in l]
old = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
print("dist causal | fwd TFLOP/s new (rounds) / old | bwd new / old")
keys = sorted({(r["dist"], r["causal"]) for r in new})
for k in keys:
    n = [r for r in new if (r["dist"], r["causal"]) == k]; o = [r for r in old if (r["dist"], r["causal"]) == k]
    f = lambda xs, key: " ".join(f"{x[key]:.0f}" for x in xs)
    print(f"{k[0]} {k[1]} | {f(n,'fwd_tflops')} / {f(o,'fwd_tflops')} | {f(n,'bwd_tflops')} / {f(o,'bwd_tflops')}")
PY
fi
python3 - "$OUT/logs/varlen.log" <<'PY' | tee "$OUT/table.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
acc = {}
for r in rows:
    acc.setdefault((r["dist"], r["seqs"], r["causal"]), {}).setdefault(r["value"], []).append((r["fwd_tflops"], r["bwd_tflops"]))
print("dist seqs causal | fwd TFLOP/s tma (rounds) / hand | bwd TFLOP/s tma / hand | best tma/hand fwd bwd")
for k, v in acc.items():
    t, h = v.get("1", []), v.get("0", [])
    f = lambda xs, i: " ".join(f"{x[i]:.0f}" for x in xs)
    rf = max(x[0] for x in t) / max(x[0] for x in h) if t and h else 0
    rb = max(x[1] for x in t) / max(x[1] for x in h) if t and h else 0
    print(f"{k[0]} {k[1]} {k[2]} | {f(t,0)} / {f(h,0)} | {f(t,1)} / {f(h,1)} | {rf:.3f} {rb:.3f}")
PY
tar -C "$OUT" -czf /tmp/logs.tgz logs && rm -rf "$OUT/logs" && mv /tmp/logs.tgz "$OUT/logs.tgz"
