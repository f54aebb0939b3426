# device call 8 (library .carry/rows, built from d9ea980; decode kernels as main's; bench of this commit)
CARRY=.carry/rows source bench/device_common.sh >/dev/null; P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench)
"${P[@]}" timeout 300 python3 bench/bench_decode.py --graph --out $OUT/read > $OUT/read.log 2>&1
"${P[@]}" timeout 200 python3 bench/bench_decode.py --graph --no-flex --flush write --out $OUT/write > $OUT/write.log 2>&1
"${P[@]}" timeout 200 python3 bench/bench_decode.py --graph --no-flex --short 1 --out $OUT/short1 > $OUT/short1.log 2>&1
