#!/usr/bin/env bash
# device: forward and backward at lengths that end inside a tile, old (af01052) and new (e29012c) library, beside cuDNN / flash
set -uo pipefail
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R .' EXIT
for v in dmma4 small; do xz -d -k -f $PWD/.carry/$v/libsamebits.so.xz; done
for v in small dmma4; do
  L=$PWD/.carry/$v/libsamebits.so
  mkdir -p $R/fwd_$v $R/bwd_$v
  PYTHONPATH=python timeout 150 python3 bench/bench_attention.py --lib $L --out $R/fwd_$v --dims 128 --lengths 1000,2047,4095,4096 --no-flex --reps 20 > $R/fwd_$v.log 2>&1; echo "fwd $v rc=$?"
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 200 python3 bench/bench_attention_backward.py --out $R/bwd_$v --dims 128 --lengths 1000,2047,4095,4096 --no-flex --reps 10 > $R/bwd_$v.log 2>&1; echo "bwd $v rc=$?"
done
rm -f $R/*/*.png
for v in small dmma4; do echo "== fwd $v"; cat $R/fwd_$v/*.md; echo "== bwd $v"; cat $R/bwd_$v/*.md; done
