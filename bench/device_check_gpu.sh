#!/usr/bin/env bash
# One device call: main's library checked on whichever GPU runs it (the
# thirtieth session ran it on an H200, where the decode walk of the
# twenty-ninth session had not run). CARRY: libsamebits.so.xz,
# test_attention_bwd_sm90, test_attention_decode_sm90. The backward's whole
# test with its six 50-run hashes compared with the H100's recorded ones,
# the decode suite under the rule and --quick with the walk forced,
# test_cuda.py, verify; then one round of bench_decode.py at the walk's
# and the small shapes and of bench_attention_backward.py at head dim 128.
set -uo pipefail
CARRY=${CARRY:-.carry/rev29}
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
chmod +x "$C/test_attention_bwd_sm90" "$C/test_attention_decode_sm90"
LD_LIBRARY_PATH=$C timeout 240 "$C/test_attention_bwd_sm90" > "$OUT/bwd.log" 2>&1
sum+=("backward whole test rc=$? $(count "$OUT/bwd.log")")
# the six 50-run hashes recorded on the H100 (docs/backward_design.md)
for h in 095ab3ce908393b1 7fcb7c2cf59f3c98 a34b04d384a85ba9 b06c70128a2a960f 96f88718f444baf8 55665f6d9eb3b414; do
  grep -q "50 runs -> 1 hash(es), hash $h" "$OUT/bwd.log" && sum+=("hash $h: same as the H100's") || sum+=("hash $h: MISSING")
done
LD_LIBRARY_PATH=$C timeout 150 "$C/test_attention_decode_sm90" > "$OUT/dec_full.log" 2>&1
sum+=("decode suite, rule rc=$? $(count "$OUT/dec_full.log")")
SAMEBITS_DECODE_WALK=force LD_LIBRARY_PATH=$C timeout 150 "$C/test_attention_decode_sm90" --quick --variants auto,0,4 > "$OUT/dec_walk.log" 2>&1
sum+=("decode --quick, walk forced rc=$? $(count "$OUT/dec_walk.log")")
export SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python:$PWD/bench
timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
sum+=("pytest test_cuda rc=$? $(tail -1 "$OUT/pytest.log")")
timeout 90 python3 -m samebits.cli verify --device cuda > "$OUT/verify.log" 2>&1
sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
printf '%s\n' "${sum[@]}"
if [ "${BENCH:-1}" = 1 ]; then
  timeout 200 python3 bench/bench_decode.py --out "$OUT/decode" --graph --captures 2 --reps 15 --no-flex \
    --shapes ${DSHAPES:-1x1024,1x4096,4x1024,1x16384,1x32768,1x131072,4x4096,8x2048,16x4096,64x4096,256x4096,64x16384} > "$OUT/decode.log" 2>&1
  sum+=("bench_decode rc=$?")
  timeout 200 python3 bench/bench_attention_backward.py --out "$OUT/bwd_bench" --reps 10 --dims 128 --no-flex > "$OUT/bwd_bench.log" 2>&1
  sum+=("bench_attention_backward rc=$?")
  tail -25 "$OUT/decode.log"; tail -20 "$OUT/bwd_bench.log"
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
