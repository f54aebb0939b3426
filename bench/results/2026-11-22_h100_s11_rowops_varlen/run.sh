#!/usr/bin/env bash
# device: row-op eager path (python) GPU tests; varlen backward with the zigzag walk (s11g) vs round-robin (s11d)
set -uo pipefail
sum=()
N=$PWD/.carry/s11g; O=$PWD/.carry/s11d
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
for d in $N $O; do xz -d -k -f $d/libsamebits.so.xz; done
SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python:$PWD/tests/python timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py tests/python/test_compile.py -q -p no:cacheprovider > $R/pytest.log 2>&1; sum+=("pytest cuda+dense+compile rc=$? $(tail -1 $R/pytest.log)")
for L in new old new old; do D=$N; [ $L = old ] && D=$O
  SAMEBITS_LIBRARY=$D/libsamebits.so PYTHONPATH=$PWD/python timeout 90 python3 .carry/s11j/ragged_probe.py $L >> $R/ragged_probe.jsonl 2>>$R/ragged_probe.err; sum+=("ragged probe $L rc=$?")
done
printf '%s\n' "${sum[@]}"; cat $R/ragged_probe.jsonl
