#!/usr/bin/env bash
# One device call: does the memory order of the KV cache explain decode's
# gap to cuDNN at large shapes? bench_decode.py --graph with samebits's
# cache in the flash-attn order (nhd: a KV head's keys 256 bytes apart every
# Hk x 256 bytes) and in the head-major order (hnd, passed as a strided
# view), with the peers on their head-major (hsd) tensors and on the
# token-major (shd) order; first a bits check that a cache's memory order
# does not move samebits's output (torch.equal, with a negative control).
# CARRY: the library; SHAPES, ROUNDS, CONFIGS (a list of "page:layout:peer").
set -uo pipefail
CARRY=${CARRY:-.carry/final28c}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench
timeout 120 python3 - > "$OUT/layout_bits.log" 2>&1 <<'PY'
import torch, samebits
torch.manual_seed(1)
B, HK, H, D, P = 3, 8, 64, 128, 64
for page in (64, 0):
    n, s = (B * 4096 // P, P) if page else (B, 4096)
    kn = torch.randn(n, s, HK, D, dtype=torch.bfloat16, device="cuda"); vn = torch.randn_like(kn)
    kh = kn.transpose(1, 2).contiguous().transpose(1, 2); vh = vn.transpose(1, 2).contiguous().transpose(1, 2)
    table = torch.randperm(n, device="cuda", dtype=torch.int32).view(B, -1) if page else None
    q = torch.randn(B, 1, H, D, dtype=torch.bfloat16, device="cuda")
    sl = torch.tensor([4095, 1000, 2049], dtype=torch.int32, device="cuda")
    a = samebits.attention_with_kvcache(q, kn, vn, cache_seqlens=sl, block_table=table, causal=True)
    b = samebits.attention_with_kvcache(q, kh, vh, cache_seqlens=sl, block_table=table, causal=True)
    kh2 = kh.clone(); kh2[..., 0] += 1  # negative control: other keys, same order
    c = samebits.attention_with_kvcache(q, kh2.transpose(1, 2).contiguous().transpose(1, 2), vh,
                                        cache_seqlens=sl, block_table=table, causal=True)
    print(f"page {page}: hnd == nhd {torch.equal(a, b)}; strides {tuple(kh.stride())}; control differs {not torch.equal(a, c)}")
PY
sum+=("layout bits rc=$? $(tr '\n' ' ' < "$OUT/layout_bits.log" | tail -c 400)")
SH=${SHAPES:-1x4096,4x1024,16x1024,1x131072,4x32768,16x16384,64x4096,256x4096}
for r in $(seq 1 ${ROUNDS:-1}); do
  for cfg in ${CONFIGS:-64:nhd:hsd 64:hnd:hsd 0:hnd:hsd 64:nhd:shd}; do
    IFS=: read -r page layout peer <<< "$cfg"
    d=$OUT/r$r/p${page}_${layout}_$peer; mkdir -p "$d"
    timeout 300 python3 bench/bench_decode.py --out "$d" --graph --captures 2 --reps 15 --no-flex \
      --page "$page" --layout "$layout" --peer-layout "$peer" --shapes "$SH" > "$d.log" 2>&1
    sum+=("round $r $cfg rc=$?")
  done
done
python3 - "$OUT" > "$OUT/table.md" <<'PY'
import json, glob, os, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "r*/*/bench_decode*.json"))):
    cfg = f.split(os.sep)[-3] + "/" + f.split(os.sep)[-2]
    for r in json.load(open(f)):
        rows.setdefault(f"{r['batch']}x{r['context']}", {})[cfg] = [round(r.get(k + "_us", 0), 1) for k in ("samebits", "cudnn", "flash")]
cfgs = sorted({c for v in rows.values() for c in v})
print("us (samebits, cudnn, flash) per configuration\n\n| shape | " + " | ".join(cfgs) + " |\n|---|" + "---|" * len(cfgs))
for sh, v in rows.items():
    print(f"| {sh} | " + " | ".join(str(v.get(c, "-")) for c in cfgs) + " |")
print("\n```json\n" + json.dumps(rows) + "\n```")
PY
cat "$OUT/table.md"
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
