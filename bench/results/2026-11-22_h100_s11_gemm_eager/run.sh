#!/usr/bin/env bash
# device: the GEMM eager path (python only) on the session's library: CUDA tests + host probe, new vs old python
set -uo pipefail
sum=()
N=$PWD/.carry/s11g
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz
export SAMEBITS_LIBRARY=$N/libsamebits.so
PYTHONPATH=$PWD/python:$PWD/tests/python timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py tests/python/test_compile.py -q -p no:cacheprovider > $R/pytest.log 2>&1; sum+=("pytest cuda+dense+compile rc=$? $(tail -1 $R/pytest.log)")
for w in new old new old; do P=$PWD/python; [ $w = old ] && P=$PWD/.carry/s11i/oldpy/python
  PYTHONPATH=$P timeout 100 python3 .carry/s11i/gemm_host.py $w >> $R/gemm_host.jsonl 2>>$R/gemm_host.err; sum+=("gemm host $w rc=$?")
done
printf '%s\n' "${sum[@]}"; cat $R/gemm_host.jsonl
