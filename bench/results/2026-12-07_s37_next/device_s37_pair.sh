#!/usr/bin/env bash
# Prepared device call (thirty-seventh session, not run): RMSNorm dx + dw on
# thread pairs (rmsnorm_dw_pair.patch, SAMEBITS_RMSNORM_DW_PAIR=1; library
# .carry/s37pair = main ccd958f's src + the patch) against main's library
# (.carry/s37fin, whose rowops are main's): bench/device_s33_rows4.sh with the
# knob set for every step (main's library ignores it): rows_bits_dump default
# and fused against main's, pytest -k rms (the inline-fold test runs the pair
# kernel with both folds), racecheck / synccheck / memcheck of that test at
# 3000 x 8192, rows_dw_probe.py at N = 8192 and 4096, two rounds (~5 min).
# Apply the patch first (its test travels with the tree):
#   git apply bench/results/2026-12-07_s37_next/rmsnorm_dw_pair.patch
# then, with carry [".carry/s37pair", ".carry/s37fin"]:
#   bash bench/results/2026-12-07_s37_next/device_s37_pair.sh
set -uo pipefail
export SAMEBITS_RMSNORM_DW_PAIR=1
CARRY=.carry/s37pair OLD=.carry/s37fin MS=${MS:-4096,8192,16384} ROUNDS=${ROUNDS:-2} bash bench/device_s33_rows4.sh
