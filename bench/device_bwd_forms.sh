#!/usr/bin/env bash
# Same-call comparison of the backward kernels' forms, one carried build
# ($CARRY: xz-compressed libsamebits.so, test_attention_bwd_sm90):
#   1. the full backward test under the default rule (169 checks, the six
#      50-run hashes);
#   2. the C bench (BWD_BENCH_DIMS, default 64,128,256) under each setting,
#      the settings alternated, twice:
#        old    SAMEBITS_BWD_DKDV_FORM=0 SAMEBITS_BWD_DQ_RAW=0 (the general kernels)
#        rule   the default (dkdv_form's rule, the raw dQ kernel)
#        raw    SAMEBITS_BWD_DKDV_FORM=1 (raw, drained, every head dim)
#        chain  SAMEBITS_BWD_DKDV_FORM=2 (raw, chained where it exists)
#   3. racecheck / memcheck --small under the default rule.
# Logs and table.txt (ms per setting and round) under $OUT.
source "$(dirname "$0")/device_common.sh"
export SAMEBITS_BWD_TMA_STRICT=1 LD_LIBRARY_PATH=$C
if [ "${SKIP_TEST:-0}" != 1 ]; then
  timeout 200 "$C/test_attention_bwd_sm90" > "$OUT/rule_test.log" 2>&1
  sum+=("rule: test rc=$? $(count "$OUT/rule_test.log") $(hashes "$OUT/rule_test.log")")
fi
declare -A ENVS=([old]="SAMEBITS_BWD_DKDV_FORM=0 SAMEBITS_BWD_DQ_RAW=0" [rule]="" [raw]="SAMEBITS_BWD_DKDV_FORM=1" [chain]="SAMEBITS_BWD_DKDV_FORM=2")
SETS=${SETS:-old rule raw chain}
for r in 1 2; do
  for v in $SETS; do
    env ${ENVS[$v]} BWD_BENCH_DIMS=${DIMS:-64,128,256} timeout 100 "$C/test_attention_bwd_sm90" --bench-only > "$OUT/${v}_bench$r.log" 2>&1
    sum+=("$v bench $r rc=$?")
  done
done
if [ "${SKIP_SAN:-0}" != 1 ]; then
  timeout 150 compute-sanitizer --tool racecheck "$C/test_attention_bwd_sm90" --small > "$OUT/race.log" 2>&1
  sum+=("racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/race.log")")
  timeout 90 compute-sanitizer --tool memcheck "$C/test_attention_bwd_sm90" --small > "$OUT/mem.log" 2>&1
  sum+=("memcheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/mem.log")")
fi
python3 - "$OUT" $SETS > "$OUT/table.txt" <<'PY'
import sys, os
out, sets = sys.argv[1], sys.argv[2:]
rows, cols = {}, []
for r in (1, 2):
    for v in sets:
        col = f"{v}.{r}"; cols.append(col)
        f = f"{out}/{v}_bench{r}.log"
        if not os.path.exists(f): continue
        for line in open(f):
            if line.startswith("| bf16"):
                c = [x.strip() for x in line.strip().strip("|").split("|")]
                rows.setdefault((c[1], c[2], c[3]), {})[col] = c[4]
print("d L causal " + " ".join(cols))
for k, v in rows.items():
    print(" ".join(k) + " " + " ".join(v.get(c, "-") for c in cols))
PY
cat "$OUT/table.txt"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
exit 0
