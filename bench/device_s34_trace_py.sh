#!/usr/bin/env bash
# One device call (thirty-fourth session): the trace library (CARRY, see
# device_s34_trace.sh) through bench_decode.py --graph, whose L2 flush reads
# (clean lines), so that the kernel's clock64 stamps are taken under the
# same conditions as the peer tables. The timings of this run mean nothing
# (the kernel prints); the stamps do.
set -uo pipefail
CARRY=${CARRY:-.carry/s34trace}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$C/libsamebits.so timeout 200 python3 bench/bench_decode.py --out "$OUT/bd" \
  --graph --captures 1 --reps ${REPS:-5} --no-flex --shapes ${SHAPES:-1x4096,1x8192,1x16384,4x1024} > "$OUT/trace_py.log" 2>&1
echo "rc=$? lines $(wc -l < "$OUT/trace_py.log")"
python3 - "$OUT/trace_py.log" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
traces, cur = [], None
for l in lines:
    if l.startswith("decode trace:"):
        cur = {"hdr": l, "b": []}; traces.append(cur)
    elif l.startswith("  block") and cur is not None:
        cur["b"].append(list(map(int, re.findall(r"-?\d+", l))))
    elif l.startswith('{"gpu"'):
        shape = re.search(r'"batch": (\d+), "context": (\d+)', l).groups()
        for i, t in enumerate(traces):
            b = t["b"]; b0 = b[0]
            med = lambda xs: sorted(xs)[len(xs) // 2]
            print(f"| {shape[0]} x {shape[1]} ({i + 1}) | {b0[2]} | {b0[3]-b0[2]}, {b0[4]-b0[3]}, {b0[7]-b0[6]} | "
                  f"{med([x[3]-x[2] for x in b[2:]])}, {med([x[4]-x[3] for x in b[2:]])}, {med([x[7]-x[6] for x in b[2:]])} | "
                  f"{t['hdr'].split('end')[1].strip()} |")
        traces = []
PY
rm -rf "$OUT/bd"; gzip -f "$OUT/trace_py.log"
