# device calls 11 and 12 (library .carry/gemmc, built from 43a02ee); call 12 ran the probe with the
# epilogue configurations added (the committed bench/gemm_cluster_probe.py)
CARRY=.carry/gemmc source bench/device_common.sh >/dev/null; P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench)
"${P[@]}" timeout 240 python3 bench/gemm_cluster_probe.py --out $OUT/probe2.json > $OUT/probe2.log 2>&1
"${P[@]}" timeout 150 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k gemm > $OUT/pytest.log 2>&1   # call 11
