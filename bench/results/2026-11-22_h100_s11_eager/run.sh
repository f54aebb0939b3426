#!/usr/bin/env bash
# device: the eager fast path of attention() (no dispatcher, no zero fill of dense gradients), new python vs old
set -uo pipefail
sum=()
N=$PWD/.carry/s11a
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz
export SAMEBITS_LIBRARY=$N/libsamebits.so
NEWPY=$PWD/python; OLDPY=$PWD/.carry/s11c/oldpy/python
PYTHONPATH=$NEWPY:$PWD/tests/python timeout 200 python3 -m pytest tests/python/test_cuda.py tests/python/test_compile.py -q -p no:cacheprovider > $R/pytest.log 2>&1; sum+=("pytest cuda+compile rc=$? $(tail -1 $R/pytest.log)")
for which in new old new old; do
  P=$NEWPY; [ $which = old ] && P=$OLDPY
  PYTHONPATH=$P timeout 100 python3 .carry/s11b/host_probe.py > $R/host_$which.jsonl.tmp 2>&1; sum+=("host probe $which rc=$?")
  cat $R/host_$which.jsonl.tmp >> $R/host_$which.jsonl
done
for which in new old; do
  P=$NEWPY; [ $which = old ] && P=$OLDPY
  mkdir -p $R/bwd_$which
  PYTHONPATH=$P timeout 150 python3 bench/bench_attention_backward.py --dims 128 --lengths 1000,1024,2048,4096 --no-flex --reps 20 --out $R/bwd_$which > $R/bwd_$which.log 2>&1; sum+=("bench bwd $which rc=$?")
done
printf '%s\n' "${sum[@]}"
tail -5 $R/pytest.log
cat $R/host_new.jsonl $R/host_old.jsonl | cut -c1-400
