#!/usr/bin/env bash
# The forty-first session's two device calls in one (devices were scarce):
# bench/device_s41_a.sh (GEMM 112-column entries, decode and GEMM checks,
# issue 6's table) into $OUT/a, then bench/device_s41_rows.sh (RMSNorm
# dx + dw) into $OUT/rows. carry [".carry/s41w112", ".carry/s41rows",
# ".carry/tools"].
set -uo pipefail
O=${OUT:-/tmp/out}
OUT=$O/a TABLES=${TABLES:-1} timeout 230 bash bench/device_s41_a.sh 2>&1 | tail -40
OUT=$O/rows timeout 350 bash bench/device_s41_rows.sh 2>&1 | grep -v "^$" | tail -80
