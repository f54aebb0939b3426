#!/usr/bin/env bash
# Final device check of the backward's kernel forms, one carried build
# ($CARRY: xz-compressed libsamebits.so, test_attention_bwd_sm90):
#   1. the full backward test (forms_suite included: every forced form ==
#      the default's bits), its hashes;
#   2. the Python backward bench of samebits alone, the general kernels
#      (SAMEBITS_BWD_DKDV_FORM=0 SAMEBITS_BWD_DQ_RAW=0) and the default
#      alternated twice in the same conditions, head dims $PY_DIMS.
# Logs under $OUT.
source "$(dirname "$0")/device_common.sh"
export SAMEBITS_BWD_TMA_STRICT=1 LD_LIBRARY_PATH=$C SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python
timeout 240 "$C/test_attention_bwd_sm90" > "$OUT/test.log" 2>&1
sum+=("test rc=$? $(count "$OUT/test.log") $(hashes "$OUT/test.log")")
grep '^\[.*forms ' "$OUT/test.log" > "$OUT/forms.txt"
for r in 1 2; do
  for v in general default; do
    if [ $v = general ]; then e="SAMEBITS_BWD_DKDV_FORM=0 SAMEBITS_BWD_DQ_RAW=0"; else e=""; fi
    env $e timeout 100 python3 bench/bench_attention_backward.py --out "$OUT/py_${v}_$r" --reps 10 \
      --dims ${PY_DIMS:-128} --no-flex --impls samebits > "$OUT/py_${v}_$r.log" 2>&1
    sum+=("python $v $r rc=$?")
  done
done
python3 - "$OUT" > "$OUT/py_table.txt" <<'PY'
import json, sys, os
out = sys.argv[1]
cols = [f"{v}.{r}" for r in (1, 2) for v in ("general", "default")]
rows = {}
for r in (1, 2):
    for v in ("general", "default"):
        f = f"{out}/py_{v}_{r}.log"
        if not os.path.exists(f): continue
        for line in open(f):
            if line.startswith("{"):
                j = json.loads(line)
                rows.setdefault((j["head_dim"], j["causal"], j["seqlen"]), {})[f"{v}.{r}"] = j["samebits_tflops"]
print("d causal L " + " ".join(cols) + "  (TFLOP/s)")
for k, v in rows.items():
    print(" ".join(str(x) for x in k) + " " + " ".join(f"{v.get(c, 0):.0f}" for c in cols))
PY
cat "$OUT/forms.txt" "$OUT/py_table.txt"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
exit 0
