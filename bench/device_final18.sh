#!/usr/bin/env bash
# Final device call of the eighteenth session on main's library (CARRY, default
# .carry/final18): the decode suite under the default rule (--quick), the
# Python CUDA tests of decode and the KV cache, `samebits verify`, and decode
# beside the peers at the small shapes with a partial last block (--short 1),
# default rule and schedule 0 forced. Summary in $OUT/summary.txt, logs in
# $OUT/final18.tgz.
set -uo pipefail
C=$PWD/${CARRY:-.carry/final18}
FINAL_OUT=${OUT:-/tmp/out}
OUT=$(mktemp -d)
sum=()
trap 'tar czf "$FINAL_OUT/final18.tgz" -C "$OUT" . && printf "%s\n" "${sum[@]}" > "$FINAL_OUT/summary.txt"' EXIT
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$C/libsamebits.so.xz" "$C/libsamebits.so"
chmod +x "$C/test_attention_decode_sm90"
PYENV=(env SAMEBITS_LIBRARY="$C/libsamebits.so" PYTHONPATH="$PWD/python:$PWD/bench")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
sha256sum "$C/libsamebits.so" | tee "$OUT/lib_sha256.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -n 1 "$1")"; }
LD_LIBRARY_PATH=$C timeout 60 "$C/test_attention_decode_sm90" --quick > "$OUT/decode_quick.log" 2>&1
sum+=("decode default --quick rc=$? $(count "$OUT/decode_quick.log")")
"${PYENV[@]}" timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k "decode or kvcache or cache" > "$OUT/pytest.log" 2>&1
sum+=("pytest test_cuda -k decode/kvcache rc=$? $(tail -n 1 "$OUT/pytest.log")")
"${PYENV[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json "$OUT/verify.json" > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -n 1 "$OUT/verify.log")")
SH=1x1024,2x1024,1x2048,1x4096,4x1024
for r in 1 2; do
  "${PYENV[@]}" timeout 100 python3 bench/bench_decode.py --graph --reps 15 --no-flex --short 1 --shapes $SH --out "$OUT/short_auto_r$r" > "$OUT/short_auto_r$r.log" 2>&1
  sum+=("bench_decode --short 1 auto r$r rc=$?")
  SAMEBITS_DECODE_VARIANT=0 "${PYENV[@]}" timeout 100 python3 bench/bench_decode.py --graph --reps 15 --no-flex --short 1 --shapes $SH --out "$OUT/short_v0_r$r" > "$OUT/short_v0_r$r.log" 2>&1
  sum+=("bench_decode --short 1 v0 r$r rc=$?")
done
printf '%s\n' "${sum[@]}"
for f in "$OUT"/short_auto_r1/*.md "$OUT"/short_v0_r1/*.md; do echo "== $f"; cat "$f"; done
grep -E "passed|failed|xfail" "$OUT/pytest.log" | tail -3
