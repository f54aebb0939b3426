#!/usr/bin/env bash
# One device call for the fold inside pass 1 (DecodeConfig::kFold,
# DecodeClusterFold in attention_decode_sm90_mma.h): the decode suite with
# every decode call run both folded and through the combine on the same
# inputs (--variants auto,0c,0f: the default rule, the combine, the
# fold wherever it fits; all must give the forward's bits), the
# full suite under the default rule, memcheck / racecheck / synccheck of
# --small with main's schedule and the fold forced; the
# kernel-only C bench under CUDA graphs, the default rule with the fold and
# with the combine (autoc) and with the fold forced (autof) side by side
# (out / lse compared bitwise at every shape); decode beside cuDNN / flash
# SDPA (bench_decode.py --graph) with SAMEBITS_DECODE_FOLD unset, 0 and force,
# alternated, ROUNDS rounds; the Python
# decode tests. CARRY holds libsamebits.so.xz and test_attention_decode_sm90.
# QV: the --quick suite's schedules (default auto,0c,0f), SV: the schedule
# of the sanitizer runs (default 0).
# STAGE=a: the --quick suite, the C bench and ROUNDS rounds of the peers;
# STAGE=b: the full suite, the sanitizers, the Python tests and ROUNDS
# rounds of the peers; STAGE=p: only the peers; unset: everything (over ten
# minutes).
set -uo pipefail
CARRY=${CARRY:-.carry/fold}
# Everything is written to a scratch folder and comes back as one archive
# (results.tgz) beside summary.txt: the device returns at most 8 files.
FINAL_OUT=${OUT:-/tmp/out}
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$FINAL_OUT/" 2>/dev/null' EXIT
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
sha256sum "$C/libsamebits.so" | tee "$OUT/lib_sha256.txt"
T=$C/test_attention_decode_sm90
chmod +x "$T"
export LD_LIBRARY_PATH=$C
PYENV=(env SAMEBITS_LIBRARY="$C/libsamebits.so" PYTHONPATH="$PWD/python:$PWD/bench")
STAGE=${STAGE:-all}
# The most resident clusters of n CTAs for pass 1's size at d 128 (mma, main).
[ -x "$C/cluster_occupancy" ] && "$C/cluster_occupancy" 160 215144 > "$OUT/cluster_occupancy.txt" 2>&1 && cat "$OUT/cluster_occupancy.txt"
if [ "$STAGE" = all ] || [ "$STAGE" = a ]; then
  timeout 150 "$T" --quick --variants ${QV:-auto,0c,0f} > "$OUT/decode_quick_both.log" 2>&1
  sum+=("decode --quick ${QV:-auto,0c,0f} rc=$? $(count "$OUT/decode_quick_both.log") $(tail -1 "$OUT/decode_quick_both.log")")
  grep '^\[FAIL\]' "$OUT/decode_quick_both.log" | head -5
fi
if [ "$STAGE" = all ] || [ "$STAGE" = b ]; then
  timeout 150 "$T" > "$OUT/decode_default.log" 2>&1
  sum+=("decode default full rc=$? $(count "$OUT/decode_default.log") $(tail -1 "$OUT/decode_default.log")")
  grep '^\[FAIL\]' "$OUT/decode_default.log" | head -5
  SAMEBITS_DECODE_VARIANT=${SV:-0} SAMEBITS_DECODE_FOLD=force timeout 120 compute-sanitizer --tool memcheck "$T" --small > "$OUT/decode_mem.log" 2>&1
  sum+=("decode memcheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/decode_mem.log")")
  SAMEBITS_DECODE_VARIANT=${SV:-0} SAMEBITS_DECODE_FOLD=force timeout 150 compute-sanitizer --tool racecheck "$T" --small > "$OUT/decode_race.log" 2>&1
  sum+=("decode racecheck --small rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/decode_race.log")")
  SAMEBITS_DECODE_VARIANT=${SV:-0} SAMEBITS_DECODE_FOLD=force timeout 120 compute-sanitizer --tool synccheck "$T" --small > "$OUT/decode_sync.log" 2>&1
  sum+=("decode synccheck --small rc=$? $(grep 'ERROR SUMMARY' "$OUT/decode_sync.log")")
fi
if [ "$STAGE" = all ] || [ "$STAGE" = a ]; then
  timeout 150 "$T" --bench --graph --variants autoc,auto,autof --max-tokens ${BENCH_MAX_TOKENS:-1048576} > "$OUT/bench_c.md" 2>&1
  sum+=("C bench rc=$? $(tail -1 "$OUT/bench_c.md")")
fi
SH=${SHAPES:-1x2048,1x4096,2x2048,4x1024,1x8192,4x4096,8x2048,2x4096,1x16384,16x1024}
for r in $(seq 1 ${ROUNDS:-2}); do
  "${PYENV[@]}" timeout 120 python3 bench/bench_decode.py --graph --captures 3 --reps 15 --no-flex --shapes $SH --out "$OUT/fold_r$r" > "$OUT/peers_fold_r$r.log" 2>&1
  sum+=("bench_decode fold r$r rc=$?")
  SAMEBITS_DECODE_FOLD=0 "${PYENV[@]}" timeout 120 python3 bench/bench_decode.py --graph --captures 3 --reps 15 --no-flex --shapes $SH --out "$OUT/combine_r$r" > "$OUT/peers_combine_r$r.log" 2>&1
  sum+=("bench_decode combine r$r rc=$?")
  SAMEBITS_DECODE_FOLD=force "${PYENV[@]}" timeout 120 python3 bench/bench_decode.py --graph --captures 3 --reps 15 --no-flex --shapes $SH --out "$OUT/force_r$r" > "$OUT/peers_force_r$r.log" 2>&1
  sum+=("bench_decode force r$r rc=$?")
done
if [ "$STAGE" = all ] || [ "$STAGE" = b ]; then
  "${PYENV[@]}" timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest.log" 2>&1
  sum+=("pytest test_cuda rc=$? $(tail -1 "$OUT/pytest.log")")
fi
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
[ -f "$OUT/bench_c.md" ] && grep -E "^\| (1|2|4|8|16|64|256) \||FAIL|differ" "$OUT/bench_c.md" | head -30
for r in 1; do for v in fold combine force; do f="$OUT/${v}_r$r/bench_decode_graph.md"; [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done; done
exit 0
