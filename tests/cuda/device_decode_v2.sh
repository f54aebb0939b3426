#!/usr/bin/env bash
# One device call for the decode schedules (SAMEBITS_DECODE_VARIANT 0, 4,
# auto; docs/decode_design.md "Variants"), within a time budget:
#   1. GPU info;
#   2. test_attention_decode_sm90 --quick --variants 0,..,5: every decode
#      call of every check under each variant, bitwise against the forward
#      (all must pass);
#   3. the kernel-only bench of every variant side by side (CUDA graph
#      replay, L2 flushed, median; out/lse of the variants compared bitwise
#      at every shape);
#   4. the full test_attention_decode_sm90 under the candidate variant
#      (FULL_VARIANT, default auto);
#   5. the bench again with direct launches (host launch cost included);
#   6. if time is left, bench/bench_decode.py (cuDNN and flash SDPA in the
#      same process) under the candidate variant.
# Every step's timeout is cut to what is left of BUDGET_S, so the call ends
# in time; a step with too little time left is skipped and says so.
# Logs under $OUT; a summary last.
# Expects the library and the test binary next to this script (a carried
# folder such as .carry/dec2/); run from the repository root:
#   bash .carry/dec2/device_decode_v2.sh
# env: BUDGET_S (default 330), VARIANTS (default "0 4"), FULL_VARIANT
#      (default auto), BENCH_REPS (20), PEER_REPS (10), SKIP_PEERS, SKIP_FULL,
#      RUN_FWD (also run test_attention_fwd_sm90 --quick: the forward is
#      unchanged by the variants).
set -uo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$DIR:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-330}
VARIANTS=${VARIANTS:-0 4}
FULL_VARIANT=${FULL_VARIANT:-auto}
T0=$(date +%s)
TEST=$DIR/test_attention_decode_sm90
summary=()

left() { echo $((BUDGET_S - ($(date +%s) - T0))); }
# run_step NAME WANT_S MIN_S CMD...: runs CMD with timeout min(WANT_S, left),
# skipped when less than MIN_S is left. Output to $OUT/NAME.log.
run_step() {
  local name=$1 want=$2 min=$3
  shift 3
  local l
  l=$(left)
  if [ "$l" -lt "$min" ]; then
    summary+=("$name: skipped ($l s left)")
    return 0
  fi
  local t=$((want < l ? want : l))
  local s0
  s0=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  LAST_RC=$rc
  LAST_S=$(($(date +%s) - s0))
  return 0
}

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee "$OUT/gpu.txt"

# 2. quick correctness, every decode call of every check under each variant
#    (one process: inputs built once, outputs cleared between variants)
BV=$(echo "$VARIANTS" | tr ' ' ',')
run_step tests_quick_all 150 40 "$TEST" --quick --variants "$BV"
if [ -f "$OUT/tests_quick_all.log" ]; then
  p=$(grep -c '^\[PASS\]' "$OUT/tests_quick_all.log")
  f=$(grep -c '^\[FAIL\]' "$OUT/tests_quick_all.log")
  summary+=("tests --quick --variants $BV: rc=$LAST_RC pass=$p fail=$f (${LAST_S} s)")
  grep '^\[FAIL\]' "$OUT/tests_quick_all.log" | head -5
fi

# 3. kernel-only bench, all variants side by side (CUDA graph replay)
run_step bench_graph 120 40 "$TEST" --bench --graph --variants "$BV,auto" --reps "${BENCH_REPS:-20}"
[ -f "$OUT/bench_graph.log" ] && summary+=("bench --graph: rc=$LAST_RC (${LAST_S} s), $(grep '^bench:' "$OUT/bench_graph.log")")

# 4. the full suite under the candidate variant (keeps 40 s for step 5)
if [ -z "${SKIP_FULL:-}" ]; then
  want=$(( $(left) - 40 ))
  run_step "tests_full_$FULL_VARIANT" $((want > 240 ? 240 : want)) 60 "$TEST" --variant "$FULL_VARIANT"
  if [ -f "$OUT/tests_full_$FULL_VARIANT.log" ]; then
    p=$(grep -c '^\[PASS\]' "$OUT/tests_full_$FULL_VARIANT.log")
    f=$(grep -c '^\[FAIL\]' "$OUT/tests_full_$FULL_VARIANT.log")
    summary+=("tests full variant $FULL_VARIANT: rc=$LAST_RC pass=$p fail=$f (${LAST_S} s; rc 124 = cut by the budget)")
    grep '^\[FAIL\]' "$OUT/tests_full_$FULL_VARIANT.log" | head -5
  fi
fi

# 5. the same bench with direct launches (host launch cost included)
run_step bench_direct 90 40 "$TEST" --bench --variants "$BV" --reps "${BENCH_REPS:-20}"
[ -f "$OUT/bench_direct.log" ] && summary+=("bench direct: rc=$LAST_RC (${LAST_S} s), $(grep '^bench:' "$OUT/bench_direct.log")")

if [ -n "${RUN_FWD:-}" ]; then
  run_step tests_fwd_quick 90 30 "$DIR/test_attention_fwd_sm90" --quick
  [ -f "$OUT/tests_fwd_quick.log" ] && summary+=("forward tests --quick: rc=$LAST_RC (${LAST_S} s)")
fi

# 6. peers in the same process (cuDNN, flash SDPA), candidate variant
if [ -z "${SKIP_PEERS:-}" ]; then
  run_step peers 150 60 env SAMEBITS_DECODE_VARIANT="$FULL_VARIANT" PYTHONPATH=python \
    SAMEBITS_LIBRARY="$DIR/libsamebits.so" python3 bench/bench_decode.py --out "$OUT" --reps "${PEER_REPS:-10}" --no-flex
  [ -f "$OUT/peers.log" ] && summary+=("bench_decode.py (variant $FULL_VARIANT): rc=$LAST_RC (${LAST_S} s)")
fi

# Summary: GB/s of every variant side by side (graph replay), then steps.
if [ -f "$OUT/bench_graph.log" ]; then
  echo "== kernel-only K/V GB/s (CUDA graph replay), % of copy in brackets"
  grep -E '^(device|method)' "$OUT/bench_graph.log"
  awk -F'|' '
    /^\| batch/ { printf "| batch | context |"; for (i = 4; i < NF - 1; i += 3) { h = $i; gsub(/ us /, "", h); printf " %s |", h } print " bits equal |"; printf "|---|---|"; for (i = 4; i < NF - 1; i += 3) printf "---|"; print "---|"; next }
    /^\|---/ { next }
    /^\| [0-9]/ { printf "|%s|%s|", $2, $3; for (i = 4; i < NF - 1; i += 3) printf " %s (%s%%) |", $(i + 1) + 0, $(i + 2) + 0; print " " $(NF - 1) " |" }
  ' "$OUT/bench_graph.log"
fi
[ -f "$OUT/peers.log" ] && { echo "== bench_decode.py (variant $FULL_VARIANT)"; tail -30 "$OUT/peers.log"; }
echo "== summary ($(( $(date +%s) - T0 )) s of $BUDGET_S)"
printf '%s\n' "${summary[@]}"
