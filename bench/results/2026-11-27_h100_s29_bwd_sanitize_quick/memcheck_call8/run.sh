#!/usr/bin/env bash
# One device call: compute-sanitizer memcheck and racecheck on the backward
# C test's --quick set (every head dim, both dtypes, causal, windows,
# softcap, GQA / MQA, varlen, the 10-run hashes; smaller lengths than the
# full set), beyond the --small runs of earlier sessions. A tool that runs
# past its time limit is reported with the checks it finished (the
# [PASS] / [FAIL] lines before the cut) and the errors seen so far.
# CARRY: the library and test_attention_bwd_sm90; LIMIT seconds a tool.
CARRY=${CARRY:-.carry/final28b}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
T=$C/test_attention_bwd_sm90
chmod +x "$T"
LD_LIBRARY_PATH=$C timeout 120 "$T" --quick > "$OUT/quick.log" 2>&1
sum+=("bwd --quick (no tool) rc=$? $(count "$OUT/quick.log")")
for tool in ${TOOLS:-memcheck racecheck}; do
  LD_LIBRARY_PATH=$C timeout ${LIMIT:-240} compute-sanitizer --tool $tool --print-limit 20 "$T" --quick > "$OUT/$tool.log" 2>&1
  sum+=("bwd --quick $tool rc=$? $(count "$OUT/$tool.log") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race' "$OUT/$tool.log" | sort | uniq -c | head -5 | tr '\n' ' ')")
done
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
