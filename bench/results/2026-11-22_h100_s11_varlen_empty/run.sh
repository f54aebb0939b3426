#!/usr/bin/env bash
# device: varlen gradients from torch.empty (python only): CUDA tests + ragged probe new vs old python (library of s11k)
set -uo pipefail
sum=()
N=$PWD/.carry/s11k
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz
export SAMEBITS_LIBRARY=$N/libsamebits.so
PYTHONPATH=$PWD/python:$PWD/tests/python timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > $R/pytest.log 2>&1; sum+=("pytest test_cuda rc=$? $(tail -1 $R/pytest.log)")
for w in new old new old; do P=$PWD/python; [ $w = old ] && P=$PWD/.carry/s11l/oldpy/python
  PYTHONPATH=$P timeout 90 python3 .carry/s11j/ragged_probe.py $w >> $R/ragged_probe.jsonl 2>>$R/ragged_probe.err; sum+=("ragged probe $w rc=$?")
done
printf '%s\n' "${sum[@]}"; grep varlen $R/ragged_probe.jsonl
