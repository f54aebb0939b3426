# device call 5 (library .carry/rows, built from d9ea980; Python and bench of 044cb23)
CARRY=.carry/rows source bench/device_common.sh >/dev/null; P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench)
"${P[@]}" timeout 120 python3 bench/host_probe_bwd.py > $OUT/probe.log 2>&1
"${P[@]}" timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py tests/python/test_flash_interface.py tests/python/test_dense.py -q -p no:cacheprovider > $OUT/pytest.log 2>&1
"${P[@]}" timeout 90 python3 -m samebits.cli verify --device cuda > $OUT/verify.log 2>&1
"${P[@]}" timeout 400 python3 bench/bench_attention_backward.py --dims 64,128 --out $OUT/bwd > $OUT/bwd.log 2>&1
