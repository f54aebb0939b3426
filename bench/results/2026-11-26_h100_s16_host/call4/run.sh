# device call 4 (library .carry/rows, built from d9ea980; Python of d9ea980 + bench/host_probe_bwd.py)
CARRY=.carry/rows source bench/device_common.sh >/dev/null
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python timeout 200 python3 bench/host_probe_bwd.py > $OUT/probe.log 2>&1
