#!/usr/bin/env bash
# One device call: a dense batch's tile that crosses the sequence end by TMA
# (zero fill past the tensor map) instead of by hand (CARRY, default
# .carry/ttail: libsamebits.so.xz + test_attention_bwd_sm90). The full
# backward test (pass counts and the six 50-run hashes; forms_suite checks
# SAMEBITS_BWD_TAIL_TMA=0 against the default), memcheck and racecheck on
# --small (dense 330-row sequences cross a tile end), then the C bench at
# lengths one past whole tiles and on a packed batch of random lengths,
# SAMEBITS_BWD_TAIL_TMA=1 (default) and 0 alternated twice.
CARRY=${CARRY:-.carry/ttail}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
chmod +x "$C/test_attention_bwd_sm90"
export LD_LIBRARY_PATH=$C SAMEBITS_BWD_TMA_STRICT=1
if [ -z "${SKIP_TEST:-}" ]; then
  timeout 300 "$C/test_attention_bwd_sm90" > "$OUT/test.log" 2>&1
  sum+=("test rc=$? $(count "$OUT/test.log") $(hashes "$OUT/test.log")")
  for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool "$C/test_attention_bwd_sm90" --small > "$OUT/$tool.log" 2>&1
    sum+=("$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tr '\n' ' ')")
  done
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
for r in 1 2; do
  for t in 1 0; do
    SAMEBITS_BWD_TAIL_TMA=$t BWD_BENCH_DIMS=${DIMS:-128} BWD_BENCH_LENGTHS=${LENGTHS:-1024,1025,2048,2049,4097} \
      BWD_BENCH_PACKED=1 timeout 200 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/bench_t${t}_$r.log" 2>&1
    echo "bench tail_tma=$t round $r rc=$?" | tee -a "$OUT/summary.txt"
  done
done
python3 - "$OUT" <<'PY' | tee "$OUT/table.txt"
import sys, os, re
out = sys.argv[1]
rows = {}
for r in (1, 2):
    for t in (1, 0):
        f = f"{out}/bench_t{t}_{r}.log"
        if not os.path.exists(f): continue
        for line in open(f):
            c = [x.strip() for x in line.strip().strip("|").split("|")]
            if len(c) == 6 and c[0] == "bf16":
                rows.setdefault((c[1], c[2], c[3]), {})[f"t{t}.{r}"] = float(c[4])
print("d L causal | ms tail_tma=1 r1, =0 r1, =1 r2, =0 r2 | =0 / =1")
for k, v in rows.items():
    cols = ["t1.1", "t0.1", "t1.2", "t0.2"]
    ms = " ".join(f"{v.get(c, float('nan')):.3f}" for c in cols)
    a = [v[c] for c in ("t1.1", "t1.2") if c in v]; b = [v[c] for c in ("t0.1", "t0.2") if c in v]
    ratio = f"{min(b) / min(a):.3f}" if a and b else "-"
    print(f"{k[0]} {k[1]} {k[2]} | {ms} | {ratio}")
PY
