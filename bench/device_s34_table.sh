set -uo pipefail
C=$PWD/.carry/s34tbl
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x $C/test_attention_decode_sm90
cnt() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
LD_LIBRARY_PATH=$C timeout 120 $C/test_attention_decode_sm90 > /tmp/full.log 2>&1; echo "suite rc=$? $(cnt /tmp/full.log)"
LD_LIBRARY_PATH=$C timeout 80 $C/test_attention_decode_sm90 --quick --variants auto,0,4,0f,4c > /tmp/var.log 2>&1; echo "variants rc=$? $(cnt /tmp/var.log)"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do LD_LIBRARY_PATH=$C timeout 60 $CS --tool $tool $C/test_attention_decode_sm90 --small > /tmp/san_$tool.log 2>&1; echo "$tool rc=$? $(cnt /tmp/san_$tool.log) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san_$tool.log)"; done
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 100 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache" 2>&1 | tail -1
grep -h '^\[FAIL\]' /tmp/full.log /tmp/var.log | head -3
LIBS="base=.carry/s33final new=.carry/s34tbl" ROUNDS=3 SHAPES=1x4096,2x2048,1x8192,1x16384,1x32768,8x2048,4x1024,16x4096 bash bench/device_s34_ab.sh 2>&1 | tail -60
