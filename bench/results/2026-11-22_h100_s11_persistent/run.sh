#!/usr/bin/env bash
# device: backward with a persistent grid (SAMEBITS_SM90_MAX_CTAS=132) against the default grid
set -uo pipefail
sum=()
N=$PWD/.carry/s11a
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz; chmod +x $N/test_attention_*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
export LD_LIBRARY_PATH=$N
for r in 1 2; do
  timeout 60 $N/test_attention_bwd_sm90 --bench-only > $R/cb_default_r$r.log 2>&1; sum+=("cb default rc=$?")
  SAMEBITS_SM90_MAX_CTAS=132 timeout 60 $N/test_attention_bwd_sm90 --bench-only > $R/cb_p132_r$r.log 2>&1; sum+=("cb p132 rc=$?")
done
PY=(env SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench)
mkdir -p $R/prof_default $R/prof_p132
"${PY[@]}" timeout 120 python3 bench/profile_kernels.py --only bwd --eager --reps 5 --out $R/prof_default > $R/prof_default.log 2>&1; sum+=("prof default rc=$?")
"${PY[@]}" SAMEBITS_SM90_MAX_CTAS=132 timeout 120 python3 bench/profile_kernels.py --only bwd --eager --reps 5 --out $R/prof_p132 > $R/prof_p132.log 2>&1; sum+=("prof p132 rc=$?")
printf '%s\n' "${sum[@]}"
for f in $R/cb_*_r2.log; do echo "== $f"; grep -i "tflop\|bench" $f | head -30; done
tail -30 $R/prof_default.log $R/prof_p132.log
