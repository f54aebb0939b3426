#!/usr/bin/env bash
# device: the session's last library (main 1de2564 code): the whole CUDA check once
set -uo pipefail
sum=()
N=$PWD/.carry/last
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
xz -d -k -f $N/libsamebits.so.xz; chmod +x $N/test_attention_*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
sha256sum $N/libsamebits.so > $R/lib_sha256.txt
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
export LD_LIBRARY_PATH=$N
timeout 150 $N/test_attention_fwd_sm90 > $R/fwd.log 2>&1; sum+=("fwd tests rc=$? $(count $R/fwd.log)")
timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
timeout 90 $N/test_attention_decode_sm90 > $R/decode.log 2>&1; sum+=("decode tests rc=$? $(count $R/decode.log)")
PY=(env SAMEBITS_LIBRARY=$N/libsamebits.so PYTHONPATH=$PWD/python)
"${PY[@]}" timeout 150 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > $R/pytest_cuda.log 2>&1; sum+=("pytest test_cuda rc=$? $(tail -1 $R/pytest_cuda.log)")
"${PY[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json $R/verify.json > $R/verify.log 2>&1; sum+=("verify rc=$? $(tail -1 $R/verify.log)")
printf '%s\n' "${sum[@]}"
