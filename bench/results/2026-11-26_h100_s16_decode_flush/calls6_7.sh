# device calls 6 and 7 (library .carry/rows; bench_decode.py with --flush and --shapes, before --flush read became the default)
CARRY=.carry/rows source bench/device_common.sh >/dev/null; P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench)
S=1x1024,1x4096,4x4096,16x1024,1x32768,1x131072,16x16384,64x4096,256x4096
# call 6: dec_write.log / dec_read.log (the second of two runs of each), call6_*.json
for f in write read write read; do "${P[@]}" timeout 200 python3 bench/bench_decode.py --graph --no-flex --flush $f --shapes $S --out $OUT/$f > $OUT/dec_$f.log 2>&1; done
# call 7: page sizes with the read flush (0 = a contiguous cache): dec_p0.log (second run), dec_p256.log, dec_p64.log
for pg in 0 256 64 0; do "${P[@]}" timeout 200 python3 bench/bench_decode.py --graph --no-flex --flush read --page $pg --shapes $S --out $OUT/p$pg > $OUT/dec_p$pg.log 2>&1; done
