#!/usr/bin/env bash
# One device call (thirty-first session): the staged epilogue's last
# WN % 64 columns through a TMA store of their own (CARRY) against main's
# library (OLD: those columns stored from the accumulators), at the rule's
# one-round points of the 96-, 160- and 168-column entries and a few
# controls (gemm_cluster_probe.py, clean L2, one process per library and
# round; the new library also with 'rule@rem-direct', the old path, in the
# same process); then both libraries' bits (gemm_bits_dump.py) and the
# GEMM tests of test_cuda.py.
set -uo pipefail
CARRY=${CARRY:-.carry/rem}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
unxz() { python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$1/libsamebits.so.xz" "$2"; }
unxz "${OLD:-.carry/parts2}" /tmp/old.so
export PYTHONPATH=$PWD/python:$PWD/bench
SH=${SHAPES:-320x4096x4096,384x4096x4096,576x4096x4096,640x4096x4096,1216x4096x4096,1280x4096x4096,384x14336x4096,448x11008x4096,1280x12288x4096,4096x4096x4096}
for r in $(seq 1 ${ROUNDS:-2}); do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    if [ $v = old ]; then lib=/tmp/old.so; tiles=''; else lib=$C/libsamebits.so; tiles='rule@rem-direct'; fi
    SAMEBITS_LIBRARY=$lib python3 bench/gemm_cluster_probe.py --out "$OUT/${v}_$r.json" --configs default \
      --tiles "$tiles" --shapes "$SH" --reps 15 --captures 2 > "$OUT/${v}_$r.log" 2>&1
  done
  for v in old new; do echo "== $v round $r"; cat "$OUT/${v}_$r.log"; done
done 2>&1 | tee "$OUT/probe.txt"
SAMEBITS_LIBRARY=/tmp/old.so python3 bench/gemm_bits_dump.py dump /tmp/bits_old.json > /tmp/bits_old.log 2>&1
SAMEBITS_LIBRARY=$C/libsamebits.so python3 bench/gemm_bits_dump.py dump /tmp/bits_new.json > /tmp/bits_new.log 2>&1
python3 bench/gemm_bits_dump.py compare /tmp/bits_old.json /tmp/bits_new.json 2>&1 | tail -3 | tee "$OUT/bits.txt"
SAMEBITS_LIBRARY=$C/libsamebits.so python3 -m pytest -q -p no:cacheprovider tests/python/test_cuda.py -k "gemm" 2>&1 | tail -4 | tee "$OUT/pytest.txt"
# local memory of the GEMM kernels (a fragment indexed at run time would show here)
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
for v in /tmp/old.so $C/libsamebits.so; do
  echo "$v: $("$CUOBJ" --dump-resource-usage "$v" 2>/dev/null | grep -A1 gemm_tma_wgmma | grep -o 'STACK:[0-9]*' | sort | uniq -c | tr '\n' ' ')"
done | tee "$OUT/stack.txt"
