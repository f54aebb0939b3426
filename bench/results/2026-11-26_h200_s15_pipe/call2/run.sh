#!/usr/bin/env bash
# Same-call comparison of the dK/dV kernel forms (SAMEBITS_BWD_PIPE modes:
# 0 the general kernel, drained tiles; 1 raw form, tiles chained; 2 raw
# form, drained; 3 raw form, chained, dV and dK fragments apart), one
# carried build ($CARRY). Every mode: the C bench twice, alternated; mode
# 3 (and 2) also the full test (169 checks, the six hashes). Then racecheck
# / memcheck --small under $CHECK_MODE. Logs under $OUT.
set -uo pipefail
C=$PWD/${CARRY:-.carry/pipe}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
sum=()
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$C/libsamebits.so.xz" "$C/libsamebits.so"
export SAMEBITS_BWD_TMA_STRICT=1 LD_LIBRARY_PATH=$C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
hashes() { grep -o 'hash [0-9a-f]\{16\}' "$1" | sort -u | tr '\n' ' '; }
for m in ${FULL_MODES:-3 2}; do
  SAMEBITS_BWD_PIPE=$m timeout 200 "$C/test_attention_bwd_sm90" > "$OUT/mode${m}_test.log" 2>&1
  sum+=("mode $m test rc=$? $(count "$OUT/mode${m}_test.log") $(hashes "$OUT/mode${m}_test.log")")
done
for r in 1 2; do
  for m in ${MODES:-0 1 2 3}; do
    SAMEBITS_BWD_PIPE=$m BWD_BENCH_DIMS=${DIMS:-64,128} timeout 90 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/mode${m}_bench$r.log" 2>&1
    sum+=("mode $m bench $r rc=$?")
  done
done
if [ -n "${CHECK_MODE:-}" ]; then
  SAMEBITS_BWD_PIPE=$CHECK_MODE timeout 150 compute-sanitizer --tool racecheck "$C/test_attention_bwd_sm90" --small > "$OUT/race.log" 2>&1
  sum+=("racecheck --small mode $CHECK_MODE rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/race.log")")
  SAMEBITS_BWD_PIPE=$CHECK_MODE timeout 90 compute-sanitizer --tool memcheck "$C/test_attention_bwd_sm90" --small > "$OUT/mem.log" 2>&1
  sum+=("memcheck --small mode $CHECK_MODE rc=$? $(grep 'ERROR SUMMARY' "$OUT/mem.log")")
fi
python3 - "$OUT" ${MODES:-0 1 2 3} > "$OUT/table.txt" <<'PY'
import sys, re, os
out, modes = sys.argv[1], sys.argv[2:]
rows = {}
cols = []
for r in (1, 2):
    for m in modes:
        f = f"{out}/mode{m}_bench{r}.log"
        cols.append(f"m{m}.{r}")
        if not os.path.exists(f): continue
        for line in open(f):
            if line.startswith("| bf16"):
                c = [x.strip() for x in line.strip().strip("|").split("|")]
                key = (c[1], c[2], c[3])
                rows.setdefault(key, {})[f"m{m}.{r}"] = c[4]
print("d L causal " + " ".join(cols))
for k, v in rows.items():
    print(" ".join(k) + " " + " ".join(v.get(c, "-") for c in cols))
PY
cat "$OUT/table.txt"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
exit 0
