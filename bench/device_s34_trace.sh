#!/usr/bin/env bash
# One device call (thirty-fourth session): main's decode with the d 128 bf16
# TU built with SAMEBITS_DECODE_TRACE (clock64 stamps of CTA (0, 0, 0),
# printed by the kernel), through the C bench (--bench --graph) at batch x
# context <= MAXTOK tokens, the rule's schedule; the log keeps every print.
set -uo pipefail
CARRY=${CARRY:-.carry/s34trace}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
chmod +x "$C/test_attention_decode_sm90"
LD_LIBRARY_PATH=$C timeout 200 "$C/test_attention_decode_sm90" --bench --graph --variants auto \
  --max-tokens ${MAXTOK:-32768} --reps 3 > "$OUT/trace.log" 2>&1
echo "rc=$? lines $(wc -l < "$OUT/trace.log")"
grep -E '^\|' "$OUT/trace.log" | head -30
python3 - "$OUT/trace.log" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
# the last trace printed before each table row: the shape's timed replays
last, out = [], []
for l in lines:
    if l.startswith("decode trace:"):
        last = [l]
    elif l.startswith("  block") and last:
        last.append(l)
    elif l.startswith("| ") and l[2:3].isdigit():
        out.append(l); out += last; last = []
print("\n".join(out))
PY
gzip -f "$OUT/trace.log"
