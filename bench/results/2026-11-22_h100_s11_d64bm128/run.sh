#!/usr/bin/env bash
# device: backward d64 with 128-row Q/dO tiles (branch bwd-d64-bm128) against main's library
set -uo pipefail
sum=()
N=$PWD/.carry/s11h; O=$PWD/.carry/s11g
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R . ; printf "%s\n" "${sum[@]}" > $OUT/summary.txt' EXIT
for d in $N $O; do xz -d -k -f $d/libsamebits.so.xz; done; chmod +x $N/test_attention_*
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1") $(tail -1 "$1")"; }
LD_LIBRARY_PATH=$N timeout 200 $N/test_attention_bwd_sm90 > $R/bwd.log 2>&1; sum+=("bwd tests rc=$? $(count $R/bwd.log)")
LD_LIBRARY_PATH=$N timeout 150 compute-sanitizer --tool racecheck $N/test_attention_bwd_sm90 --small > $R/bwd_race.log 2>&1; sum+=("bwd racecheck rc=$? $(grep 'RACECHECK SUMMARY' $R/bwd_race.log)")
for r in 1 2; do for L in new old; do D=$N; [ $L = old ] && D=$O
  LD_LIBRARY_PATH=$D timeout 60 $N/test_attention_bwd_sm90 --bench-only > $R/cb_${L}_r$r.log 2>&1; sum+=("cb $L r$r rc=$?")
done; done
printf '%s\n' "${sum[@]}"
grep -h "hash" $R/bwd.log | head -7
paste <(grep "^| bf16 | 64" $R/cb_new_r1.log) <(grep "^| bf16 | 64" $R/cb_new_r2.log | awk -F'|' '{print $6}') <(grep "^| bf16 | 64" $R/cb_old_r1.log | awk -F'|' '{print $6}') <(grep "^| bf16 | 64" $R/cb_old_r2.log | awk -F'|' '{print $6}')
