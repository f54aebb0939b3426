#!/usr/bin/env bash
# One device call (thirty-first session): the rule's one-round entries
# (128x96, 128x160, 256x160, 128x168) with direct stores and a deeper ring
# (NEW: CARRY) against main's staged ones (OLD), alternated in rounds at
# issue 6's low points (gemm_cluster_probe.py, clean L2, one process per
# library and round), OLD also with its staged entries forced direct
# ('rule@direct': the same ring depth); then both libraries' bits
# (gemm_bits_dump.py, every entry forced) compared.
set -uo pipefail
CARRY=${CARRY:-.carry/deep}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
unxz() { python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$1/libsamebits.so.xz" "$2"; }
unxz "${OLD:-.carry/parts2}" /tmp/old.so
export PYTHONPATH=$PWD/python:$PWD/bench
SH=${SHAPES:-320x4096x4096,384x4096x4096,576x4096x4096,640x4096x4096,1216x4096x4096,1280x4096x4096,384x14336x4096,448x11008x4096,1280x12288x4096}
for r in $(seq 1 ${ROUNDS:-2}); do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    if [ $v = old ]; then lib=/tmp/old.so; tiles='rule@direct'; else lib=$C/libsamebits.so; tiles=''; fi
    SAMEBITS_LIBRARY=$lib python3 bench/gemm_cluster_probe.py --out "$OUT/${v}_$r.json" --configs default \
      --tiles "$tiles" --shapes "$SH" --reps 15 --captures 2 > "$OUT/${v}_$r.log" 2>&1
  done
  for v in old new; do echo "== $v round $r"; cat "$OUT/${v}_$r.log"; done
done
if [ -z "${NOBITS:-}" ]; then
  SAMEBITS_LIBRARY=/tmp/old.so python3 bench/gemm_bits_dump.py dump /tmp/bits_old.json > /tmp/bits_old.log 2>&1
  SAMEBITS_LIBRARY=$C/libsamebits.so python3 bench/gemm_bits_dump.py dump /tmp/bits_new.json > /tmp/bits_new.log 2>&1
  python3 bench/gemm_bits_dump.py compare /tmp/bits_old.json /tmp/bits_new.json 2>&1 | tail -5 | tee "$OUT/bits.txt"
fi
