#!/usr/bin/env bash
# One device call (forty-first session): the library to land (.carry/s41land:
# the fused RMSNorm dx + dw kernel arriving at the grid barrier before its
# last rows' sums and dx, dx stored streaming, the inline fold two slices at
# once) against main's (.carry/s41main). Speed: rows_dw_probe, each library
# once (every launch checked bitwise against the default). Bits:
# rows_bits_dump of both (default and fused path forced), pytest -k rms (the
# inline fold against the fold kernel and the split path); racecheck /
# synccheck / memcheck of the inline-fold test at 3000 x 8192. carry
# [".carry/s41land", ".carry/s41main"].
set -uo pipefail
CARRY=${CARRY:-.carry/s41land}
source bench/device_common.sh
O=$PWD/${OLD:-.carry/s41main}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$O/libsamebits.so.xz" "$O/libsamebits.so"
export PYTHONPATH=$PWD/python:$PWD/bench
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  SAMEBITS_LIBRARY=$L timeout 100 python3 bench/rows_dw_probe.py --out "$OUT/dw_$v.json" --ms 4096,8192 \
    --ns 8192,4096 --reps 11 > "$OUT/dw_$v.log" 2>&1
  echo "== rows_dw_probe $v rc=$?"; cat "$OUT/dw_$v.log"
done
for v in new old; do
  L=$C/libsamebits.so; [ $v = old ] && L=$O/libsamebits.so
  for f in default fused; do
    if [ $f = fused ]; then E=SAMEBITS_RMSNORM_DW_PATH=fused; else E=SAMEBITS_RMSNORM_DW_PATH=; fi
    env $E SAMEBITS_LIBRARY=$L timeout 60 python3 bench/rows_bits_dump.py dump "$OUT/rows_bits_${v}_$f.json" > "$OUT/rows_bits_${v}_$f.log" 2>&1
  done
done
for f in default fused; do
  python3 bench/rows_bits_dump.py compare "$OUT/rows_bits_old_$f.json" "$OUT/rows_bits_new_$f.json" 2>&1 | tail -1 | sed "s/^/== rows bits $f: /"
done
SAMEBITS_LIBRARY=$C/libsamebits.so timeout 100 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py \
  -q -p no:cacheprovider -k "rms" > "$OUT/pytest.log" 2>&1
echo "== pytest -k rms rc=$? $(tail -1 "$OUT/pytest.log")"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in racecheck synccheck memcheck; do
  SAMEBITS_LIBRARY=$C/libsamebits.so timeout 70 "$CS" --tool $tool --target-processes all python3 -m pytest \
    tests/python/test_cuda.py -q -p no:cacheprovider -k "inline_fold and 3000-8192" > "$OUT/sanitizer_$tool.log" 2>&1
  echo "== $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$OUT/sanitizer_$tool.log" | tr '\n' ' ')"
done
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
