# Spill instructions inside the consumer's tile loop(s) of a SASS listing of
# one kernel (nvdisasm -c): the smallest backward-branch ranges that hold an
# HGMMA.64x64 (S^T / dP^T).
import re, sys
ins = []
for line in open(sys.argv[1]):
    m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
    if m: ins.append((int(m.group(1), 16), m.group(2)))
addr2i = {a: i for i, (a, _) in enumerate(ins)}
loops = []
for i, (a, t) in enumerate(ins):
    m = re.search(r'BRA (?:\S+ )?(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))', t)
    if not m: continue
    # nvdisasm -c prints targets as `(.L_x_N); resolve labels
    loops.append((i, t))
labels = {}
cur = None
lines = open(sys.argv[1]).read().splitlines()
idx = 0
for line in lines:
    lm = re.match(r'^(\.L_x_\d+):', line)
    if lm: labels[lm.group(1)] = idx; continue
    if re.match(r'\s+/\*([0-9a-f]{4,})\*/', line): idx += 1
ranges = []
for i, (a, t) in enumerate(ins):
    m = re.search(r'BRA[^`]*`\((\.L_x_\d+)\)', t)
    if m and m.group(1) in labels and labels[m.group(1)] < i:
        ranges.append((labels[m.group(1)], i))
cand = [r for r in ranges if any("HGMMA.64x64" in ins[k][1] for k in range(r[0], r[1] + 1))]
cand.sort(key=lambda r: r[1] - r[0])
seen = []
for lo, hi in cand:
    if any(lo <= a and b <= hi for a, b in seen): continue  # encloses a smaller one
    seen.append((lo, hi))
    sp = [ins[k][1] for k in range(lo, hi + 1) if re.search(r'\b(LDL|STL)', ins[k][1])]
    print(f"loop [{lo}, {hi}] {hi - lo + 1} instrs, {len(sp)} spill ops: " + "; ".join(re.sub(r"\s+\(\*.*", "", x) for x in sp[:30]))
