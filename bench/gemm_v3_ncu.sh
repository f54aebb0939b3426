#!/usr/bin/env bash
# ncu profile of the GEMM at M = 16384, N = K = 4096 (bf16): the default entry
# (128x256), the forced entries of TILES, and cuBLAS's kernel, one launch each
# (bench/gemm_v3_ncu_driver.py). Clocks not locked (--clock-control none),
# caches flushed before each replay pass (--cache-control all).
# Metrics: duration, wgmma tensor-pipe activity, DRAM / L2 throughput, L2 hit
# rate, TMA bytes into L1, grid / cluster / block sizes, warps active, and the
# WarpStateStats / SchedulerStats / LaunchStats / Occupancy sections (stall
# reasons). Metric names this ncu does not know are dropped (printed), so a
# renamed metric cannot make the whole run fail.
# Writes $OUT/gemm3_ncu.ncu-rep, gemm3_ncu_raw.csv (every collected metric),
# gemm3_ncu_details.csv, gemm3_ncu.log.
# usage: CARRY=.carry/gemm3 bash .carry/gemm3/bench/gemm_v3_ncu.sh
# (DRIVER_ARGS="--m 4096" etc. go to the driver: another shape; EXTRA_METRICS adds metrics)
set -uo pipefail
CARRY=${CARRY:-.carry/gemm3}
OUT=${OUT:-/tmp/out}
BENCH=$CARRY/bench
[ -f "$BENCH/gemm_v3_ncu_driver.py" ] || BENCH=bench
export SAMEBITS_LIBRARY=$PWD/$CARRY/libsamebits.so
PY=$CARRY/python
[ -d "$PY/samebits" ] || PY=python
export PYTHONPATH=$PWD/$PY${PYTHONPATH:+:$PYTHONPATH}
TILES=${TILES:-128x256m2,128x128pp}
mkdir -p "$OUT"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/nsight-compute*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "ncu not found"; exit 1; }
"$NCU" --version | tail -1
WANT="gpu__time_duration.sum
sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
sm__throughput.avg.pct_of_peak_sustained_elapsed
dram__throughput.avg.pct_of_peak_sustained_elapsed
dram__bytes_read.sum
dram__bytes_write.sum
lts__t_sector_hit_rate.pct
lts__t_bytes.sum
lts__throughput.avg.pct_of_peak_sustained_elapsed
l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum
launch__grid_size
launch__block_size
launch__shared_mem_per_block_dynamic
launch__registers_per_thread
sm__warps_active.avg.pct_of_peak_sustained_active
sm__cycles_active.avg
sm__cycles_elapsed.avg.per_second"
WANT="$WANT ${EXTRA_METRICS:-}"  # more metrics, space-separated (shared-memory ones, say)
KNOWN=$("$NCU" --query-metrics --chip gh100 2>/dev/null | awk '{print $1}')
METRICS=""
for m in $WANT; do
  base=${m%%.*}
  case $base in launch__* | gpu__time_duration) METRICS="$METRICS${METRICS:+,}$m"; continue ;; esac
  if [ -z "$KNOWN" ] || grep -qx "$base" <<<"$KNOWN"; then METRICS="$METRICS${METRICS:+,}$m"; else echo "dropped (unknown to this ncu): $m"; fi
done
echo "metrics: $METRICS"
# cluster size and grid: LaunchStats (launch__cluster_dim_*, launch__grid_size)
SECTIONS="--section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
run_ncu() {
  "$NCU" --clock-control none --cache-control all --target-processes all \
    -k 'regex:gemm_tma_wgmma_kernel|nvjet|sm90_xmma|cutlass' "$@" $SECTIONS \
    -o "$OUT/gemm3_ncu" -f \
    python "$BENCH/gemm_v3_ncu_driver.py" --tiles "$TILES" ${DRIVER_ARGS:-} 2>&1 | tee "$OUT/gemm3_ncu.log" | tail -30
  return ${PIPESTATUS[0]}
}
run_ncu --metrics "$METRICS"
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$OUT/gemm3_ncu.ncu-rep" ]; then
  echo "ncu with --metrics failed (rc=$rc): again with sections only"
  SECTIONS="$SECTIONS --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
  run_ncu
  rc=$?
fi
"$NCU" --import "$OUT/gemm3_ncu.ncu-rep" --page raw --csv > "$OUT/gemm3_ncu_raw.csv" 2>/dev/null
"$NCU" --import "$OUT/gemm3_ncu.ncu-rep" --page details --csv > "$OUT/gemm3_ncu_details.csv" 2>/dev/null
python - "$OUT/gemm3_ncu_raw.csv" "$METRICS" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) < 3:
    print("no kernels in the report"); sys.exit(0)
head, units, data = rows[0], rows[1], rows[2:]
want = ["Kernel Name"] + sys.argv[2].split(",")
cols = [head.index(w) for w in want if w in head]
for r in data:
    print("----")
    for c in cols:
        print(f"  {head[c]:70s} {r[c][:110]} {units[c] if c < len(units) else ''}")
PY
echo "ncu rc=$rc"
exit $rc
