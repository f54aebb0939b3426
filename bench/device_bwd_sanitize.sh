#!/usr/bin/env bash
# One device call: compute-sanitizer memcheck and racecheck on the backward
# C test (--small) with the default build (CARRY) and racecheck with its
# fused build (FUSED): the dK/dV producer's lse, D by cp.async with
# asynchronous barrier arrivals.
CARRY=${CARRY:-.carry/s23ad}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
F=$PWD/${FUSED:-.carry/s23bf}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$F/libsamebits.so.xz" "$F/libsamebits.so"
T=$C/test_attention_bwd_sm90
for tool in memcheck racecheck; do
  LD_LIBRARY_PATH=$C timeout 200 compute-sanitizer --tool $tool $T --small > "$OUT/default_$tool.log" 2>&1
  sum+=("default $tool rc=$? $(count "$OUT/default_$tool.log") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/default_$tool.log" | tr '\n' ' ')")
done
LD_LIBRARY_PATH=$F timeout 200 compute-sanitizer --tool racecheck $T --small > "$OUT/fused_racecheck.log" 2>&1
sum+=("fused racecheck rc=$? $(count "$OUT/fused_racecheck.log") $(grep -E 'RACECHECK SUMMARY' "$OUT/fused_racecheck.log" | tr '\n' ' ')")
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
