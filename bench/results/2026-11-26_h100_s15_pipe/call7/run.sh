#!/usr/bin/env bash
# Python-side check of a backward change, one carried build ($CARRY:
# xz-compressed libsamebits.so): tests/python/test_cuda.py and
# test_backward_workspace.py, samebits verify, then the backward beside
# cuDNN and flash (deterministic) at head dims $PY_DIMS (default 64,128),
# and samebits alone with the general kernels (SAMEBITS_BWD_DKDV_FORM=0
# SAMEBITS_BWD_DQ_RAW=0) for the same-call comparison. Logs under $OUT.
source "$(dirname "$0")/device_common.sh"
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/python/test_cuda.py tests/python/test_backward_workspace.py > "$OUT/pytest.log" 2>&1
sum+=("pytest rc=$? $(tail -1 "$OUT/pytest.log")")
timeout 90 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
timeout 200 python3 bench/bench_attention_backward.py --out "$OUT/peers" --reps 10 --dims ${PY_DIMS:-64,128} \
  --no-flex --impls samebits,cudnn,flash_det > "$OUT/peers.log" 2>&1
sum+=("peers rc=$?")
SAMEBITS_BWD_DKDV_FORM=0 SAMEBITS_BWD_DQ_RAW=0 timeout 100 python3 bench/bench_attention_backward.py --out "$OUT/general" \
  --reps 10 --dims ${PY_DIMS:-64,128} --no-flex --impls samebits > "$OUT/general.log" 2>&1
sum+=("general kernels rc=$?")
for v in peers general; do [ -f "$OUT/$v/bench_attention_backward.md" ] && cp "$OUT/$v/bench_attention_backward.md" "$OUT/$v.md" && cat "$OUT/$v.md"; done
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
exit 0
