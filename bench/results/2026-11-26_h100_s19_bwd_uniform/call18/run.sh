#!/usr/bin/env bash
# One device call: the backward with warp-uniform wgmma descriptors (CARRY,
# default .carry/bu: libsamebits.so.xz + test_attention_bwd_sm90) against the
# library before (OLD, default .carry/cutl): the full backward test with
# both libraries (the same test binary; pass counts and hashes, which must
# agree), then bench_attention_backward.py for both libraries alternated
# twice (samebits and cuDNN; head dims PY_DIMS, default 64,128).
CARRY=${CARRY:-.carry/bu}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/cutl}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
cp "$0" "$OUT/run.sh"
chmod +x "$C/test_attention_bwd_sm90"
for v in new old; do
  L=$C; [ $v = old ] && L=$O
  SAMEBITS_BWD_TMA_STRICT=1 LD_LIBRARY_PATH=$L timeout 240 "$C/test_attention_bwd_sm90" > "$OUT/test_$v.log" 2>&1
  sum+=("test $v rc=$? $(count "$OUT/test_$v.log") $(hashes "$OUT/test_$v.log")")
done
if [ "$(hashes "$OUT/test_new.log")" = "$(hashes "$OUT/test_old.log")" ] && [ -n "$(hashes "$OUT/test_new.log")" ]; then
  sum+=("hashes: SAME")
else
  sum+=("hashes: DIFFER")
fi
printf '%s\n' "${sum[@]}"
for r in 1 2; do
  for v in new old; do
    L=$C; [ $v = old ] && L=$O
    SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=$PWD/python timeout 150 python3 bench/bench_attention_backward.py \
      --out "$OUT/py_${v}_$r" --reps 10 --dims ${PY_DIMS:-64,128} --no-flex --impls samebits,cudnn > "$OUT/py_${v}_$r.log" 2>&1
    echo "bench $v $r rc=$?"
  done
done
python3 - "$OUT" <<'PY' | tee "$OUT/py_table.txt"
import json, sys, os
out = sys.argv[1]
rows = {}
for r in (1, 2):
    for v in ("new", "old"):
        f = f"{out}/py_{v}_{r}.log"
        if not os.path.exists(f): continue
        for line in open(f):
            if line.startswith("{"):
                j = json.loads(line)
                k = (j["head_dim"], j["causal"], j["seqlen"])
                rows.setdefault(k, {})[f"{v}.{r}"] = (j.get("samebits_tflops", 0), j.get("cudnn_tflops", 0))
print("d causal L | samebits TFLOP/s new.1 old.1 new.2 old.2 | ratio to cuDNN new.1 old.1 new.2 old.2")
for k, v in sorted(rows.items()):
    cols = ["new.1", "old.1", "new.2", "old.2"]
    tf = " ".join(f"{v.get(c, (0, 0))[0]:.0f}" for c in cols)
    ra = " ".join(f"{v[c][0] / v[c][1]:.2f}" if c in v and v[c][1] else "-" for c in cols)
    print(f"{k[0]} {k[1]} {k[2]} | {tf} | {ra}")
PY
tar -C "$OUT" -czf /tmp/all.tgz . && mv /tmp/all.tgz "$OUT/all.tgz"
