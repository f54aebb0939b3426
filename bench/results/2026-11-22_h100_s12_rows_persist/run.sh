#!/usr/bin/env bash
# device: RMSNorm forward on a persistent grid (branch rows-persist): bits, probe, row-op bench
set -uo pipefail
sum=()
C=$PWD/.carry/rp
FINAL=$OUT; OUT=$(mktemp -d); trap 'tar czf $FINAL/all.tgz -C $OUT . ; printf "%s\n" "${sum[@]}" > $FINAL/summary.txt' EXIT
xz -d -k -f $C/libsamebits.so.xz; xz -d -k -f $C/old/libsamebits.so.xz
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 120 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "rms or row" > $OUT/pytest.log 2>&1; sum+=("pytest rms rc=$? $(tail -1 $OUT/pytest.log)")
timeout 200 python3 bench/rows_grid_probe.py --out $OUT/probe.json > $OUT/probe.log 2>&1; sum+=("probe rc=$?")
SAMEBITS_ROWS_GRID=persistent timeout 150 python3 bench/bench_dense.py --rows-only --out $OUT/rows_persistent.json > $OUT/rows_persistent.log 2>&1; sum+=("bench_dense rows persistent rc=$? $(grep FAILS $OUT/rows_persistent.log | tail -1)")
timeout 150 python3 bench/bench_dense.py --rows-only --out $OUT/rows_default.json > $OUT/rows_default.log 2>&1; sum+=("bench_dense rows default rc=$? $(grep FAILS $OUT/rows_default.log | tail -1)")
printf '%s\n' "${sum[@]}"
