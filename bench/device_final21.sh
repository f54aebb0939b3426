#!/usr/bin/env bash
# Final device call of the twenty-first session on main's library (CARRY,
# default .carry/final21): the Python CUDA tests (test_cuda.py,
# test_backward_workspace.py), `samebits verify`, then bench_varlen.py
# (packed forward and backward, last tiles by TMA and by hand alternated,
# with the kernel list of one backward). Summary in $OUT/summary.txt, logs
# in $OUT/final21.tgz.
set -uo pipefail
C=$PWD/${CARRY:-.carry/final21}
FINAL_OUT=${OUT:-/tmp/out}
OUT=$(mktemp -d)
sum=()
trap 'cp "$0" "$OUT/run.sh"; tar czf "$FINAL_OUT/final21.tgz" -C "$OUT" . && printf "%s\n" "${sum[@]}" > "$FINAL_OUT/summary.txt"' EXIT
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$C/libsamebits.so.xz" "$C/libsamebits.so"
PYENV=(env SAMEBITS_LIBRARY="$C/libsamebits.so" PYTHONPATH="$PWD/python:$PWD/bench")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$C/libsamebits.so" | tee "$OUT/lib_sha256.txt"
"${PYENV[@]}" timeout 240 python3 -m pytest tests/python/test_cuda.py tests/python/test_backward_workspace.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
sum+=("pytest test_cuda + test_backward_workspace rc=$? $(tail -n 1 "$OUT/pytest.log")")
"${PYENV[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json "$OUT/verify.json" > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -n 1 "$OUT/verify.log")")
"${PYENV[@]}" timeout 200 python3 bench/bench_varlen.py --out "$OUT/varlen" --profile > "$OUT/varlen.log" 2>&1
sum+=("bench_varlen rc=$?")
printf '%s\n' "${sum[@]}"
python3 - "$OUT/varlen.log" <<'PY' | tee "$OUT/table.txt"
import json, sys
acc = {}
for l in open(sys.argv[1]):
    if not l.startswith("{"): continue
    r = json.loads(l)
    if "profile_bwd_us" in r:
        print(f"{r['dist']} causal={r['causal']} kernels:", "; ".join(f"{k[:58]} {v:.0f}" for k, v in r["profile_bwd_us"].items()))
        continue
    acc.setdefault((r["dist"], r["seqs"], r["causal"]), {}).setdefault(r["value"], []).append((r["fwd_tflops"], r["bwd_tflops"]))
print("dist seqs causal | fwd TFLOP/s tma (rounds) / hand | bwd TFLOP/s tma / hand")
for k, v in acc.items():
    f = lambda xs, i: " ".join(f"{x[i]:.0f}" for x in xs)
    print(f"{k[0]} {k[1]} {k[2]} | {f(v.get('1', []), 0)} / {f(v.get('0', []), 0)} | {f(v.get('1', []), 1)} / {f(v.get('0', []), 1)}")
PY
