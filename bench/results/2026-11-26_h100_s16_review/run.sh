# device call 17: the review commit's library (host-only refactor of the GEMM cluster launch and the
# backward's raw-or-general launches; kernel SASS unchanged)
CARRY=.carry/gemmc source bench/device_common.sh >/dev/null; P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench)
"${P[@]}" timeout 240 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py -q -p no:cacheprovider > $OUT/pytest.log 2>&1
"${P[@]}" timeout 90 python3 -m samebits.cli verify --device cuda > $OUT/verify.log 2>&1
"${P[@]}" timeout 120 python3 bench/gemm_cluster_probe.py --shapes 512x4096x14336,192x4096x4096 --configs "default,128x128,128x128 fake-cluster,128x128m2,128x128m2 spread" --out $OUT/probe.json
