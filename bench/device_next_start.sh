#!/usr/bin/env bash
# Prepared in the thirty-fourth session, run in the thirty-fifth (call 1,
# bench/results/2026-12-07_h100_s35_early): one device call that
# takes decode's start apart (docs/decode_design.md, "Pass 1's chain timed
# again"). Needs, built here and carried (ignored folders):
#   .carry/base      main's libsamebits.so.xz + test_attention_decode_sm90
#   .carry/early     main + bench/results/2026-12-07_s34_next/early_stages.patch
#                    (SAMEBITS_DECODE_EARLY_STAGES=n: n stages requested
#                    before Q lands; unset: all, main's order;
#                    SAMEBITS_DECODE_FIRST_BY_HAND=1: the first block by
#                    cp.async, the producer waiting for it) + its test binary
#   .carry/tracec    main + dry_turn_form_c.patch, the d 128 bf16 decode TU
#                    compiled with -DSAMEBITS_DECODE_TRACE and relinked
#   .carry/trace     main, the same TU with -DSAMEBITS_DECODE_TRACE
# (the thirty-fourth session relinked one TU: the nvcc line of
# build/CMakeFiles/samebits.dir/build.make plus -DSAMEBITS_DECODE_TRACE,
# then link.txt with that object.) Order: bits, the early-stage timings, then
# the two traces under bench_decode.py's read flush.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
E=$PWD/.carry/early
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$E/libsamebits.so.xz" "$E/libsamebits.so"
chmod +x "$E/test_attention_decode_sm90"
for n in 1 2; do
  SAMEBITS_DECODE_EARLY_STAGES=$n LD_LIBRARY_PATH=$E timeout 60 "$E/test_attention_decode_sm90" --quick > "$OUT/quick_e$n.log" 2>&1
  echo "decode --quick early=$n rc=$? pass=$(grep -c '^\[PASS\]' "$OUT/quick_e$n.log") fail=$(grep -c '^\[FAIL\]' "$OUT/quick_e$n.log")"
done
SAMEBITS_DECODE_FIRST_BY_HAND=1 LD_LIBRARY_PATH=$E timeout 60 "$E/test_attention_decode_sm90" --quick > "$OUT/quick_h1.log" 2>&1
echo "decode --quick first block by hand rc=$? pass=$(grep -c '^\[PASS\]' "$OUT/quick_h1.log") fail=$(grep -c '^\[FAIL\]' "$OUT/quick_h1.log")"
CHECK_CARRY=.carry/base LIBS="base=.carry/base e1=.carry/early:SAMEBITS_DECODE_EARLY_STAGES=1 e2=.carry/early:SAMEBITS_DECODE_EARLY_STAGES=2 e3=.carry/early h1=.carry/early:SAMEBITS_DECODE_FIRST_BY_HAND=1" \
  ROUNDS=2 SHAPES=1x4096,2x2048,4x1024,1x8192,1x16384,1x32768,8x2048,16x4096 OUT=$OUT/ab bash bench/device_s34_ab.sh 2>&1 | tail -40
for t in trace tracec; do
  CARRY=.carry/$t SHAPES=1x4096,1x16384 REPS=5 OUT=$OUT/$t bash bench/device_s34_trace_py.sh 2>&1 | tail -20
done

# Second experiment, also prepared (issue 6): RMSNorm dx + dw on two thread
# groups (bench/results/2026-12-07_s34_next/rmsnorm_dw_two_groups.patch:
# rmsnorm_bwd_fused_ws_kernel behind SAMEBITS_RMSNORM_DW_WS=1, NV = 2 and 4;
# compiled in the thirty-fourth session, 124-127 registers at NV = 2, 96 at
# NV = 4, no spills; never run). Carry main + the patch as .carry/ws, then:
#   SAMEBITS_RMSNORM_DW_WS=1 CARRY=.carry/ws OLD=.carry/base MS=4096,8192,16384 \
#     ROUNDS=2 bash bench/device_s33_rows4.sh
# (bits against main's library with the two-group kernel taking every fused
# inline-fold launch, pytest -k rms, racecheck / synccheck / memcheck of the
# inline fold test, then rows_dw_probe.py; a hang shows as a timeout).
