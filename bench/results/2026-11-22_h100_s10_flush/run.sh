#!/usr/bin/env bash
set -uo pipefail
N=$PWD/.carry/tail; O=$PWD/.carry/dmma4
R=$(mktemp -d)
for d in $N $O; do [ -f $d/libsamebits.so ] || xz -d -k $d/libsamebits.so.xz; done
SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python timeout 150 python3 .carry/flush/flush_probe.py > $R/flush_probe.jsonl 2> $R/flush_probe.err
echo "flush probe rc=$?"
for L in new old new old; do
  D=$N; [ $L = old ] && D=$O
  SAMEBITS_LIBRARY=$D/libsamebits.so PYTHONPATH=$PWD/python timeout 60 python3 .carry/tail/fwd_probe.py $L >> $R/fwd_probe.jsonl 2>>$R/fwd_probe.err
  echo "fwd probe $L rc=$?"
done
cp $R/*.jsonl $OUT/; tar czf $OUT/all.tgz -C $R .
cat $R/flush_probe.jsonl
