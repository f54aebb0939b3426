# device call 10 (asked for an H200, ran on an H100): libraries .carry/rows (new, d9ea980) and .carry/pipe (old, 3eaf365)
CARRY=.carry/rows source bench/device_common.sh >/dev/null; O=$PWD/.carry/pipe
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $O/libsamebits.so.xz $O/libsamebits.so
P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench)
# rows: new, old, new, old (rows_new.json / rows_old.json keep the last of each)
for v in new old new old; do L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  SAMEBITS_LIBRARY=$L PYTHONPATH=python timeout 150 python3 bench/bench_dense.py --rows-only --skip-checks --out $OUT/rows_$v.json > $OUT/rows_$v.log 2>&1; done
"${P[@]}" timeout 200 python3 bench/bench_decode.py --graph --no-flex --out $OUT/read
"${P[@]}" timeout 200 python3 bench/bench_decode.py --graph --no-flex --flush write --out $OUT/write
