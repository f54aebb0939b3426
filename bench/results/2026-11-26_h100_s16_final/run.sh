# device call 16: the final library (.carry/gemmc, built from 43a02ee: every code change of the session;
# later commits are docs and bench scripts only)
CARRY=.carry/gemmc source bench/device_common.sh >/dev/null; P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench)
"${P[@]}" timeout 300 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py tests/python/test_flash_interface.py tests/python/test_dense.py -q -p no:cacheprovider > $OUT/pytest.log 2>&1
"${P[@]}" timeout 90 python3 -m samebits.cli verify --device cuda > $OUT/verify.log 2>&1
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 150 python3 bench/rows_bits_dump.py dump $OUT/rows_bits_final.json > $OUT/rows_dump.log 2>&1
