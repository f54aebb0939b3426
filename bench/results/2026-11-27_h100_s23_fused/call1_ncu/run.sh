#!/usr/bin/env bash
# One device call: ncu (full set + stall sampling per SASS instruction) of
# the fused kernel with every dQ step off (SAMEBITS_BWD_FUSED_DIAG, default
# 63; FUSED carries the fused build) beside the three passes' dK/dV kernel
# (CARRY, the default build), d 128 bf16, 4 x 4k non-causal (the C bench's
# first timed call of BWD_BENCH_LENGTHS). Where the fused kernel's base
# (10.0-10.6 ms at 1 x 16k against the dK/dV kernel's 7.5) goes.
# Writes $OUT/ncu.tgz (details and source CSVs) and $OUT/summary.txt.
source bench/device_common.sh
F=$PWD/${FUSED:-.carry/s22k}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$F/libsamebits.so.xz" "$F/libsamebits.so"
cp "$0" "$OUT/run.sh"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
mkdir -p /tmp/ncu
export BWD_BENCH_DIMS=128 BWD_BENCH_LENGTHS=${LENGTHS:-4096}
prof() {  # name lib-dir kernel-regex [env...]
  local name=$1 lib=$2 re=$3; shift 3
  env "$@" LD_LIBRARY_PATH=$lib timeout 240 "$NCU" --clock-control none --set full \
    --import-source no --warp-sampling-interval ${INTERVAL:-2} -k "regex:$re" --launch-skip 3 --launch-count 1 \
    -o /tmp/ncu/$name -f "$C/test_attention_bwd_sm90" --bench-only > "$OUT/$name.log" 2>&1
  sum+=("$name ncu rc=$?")
  "$NCU" --import /tmp/ncu/$name.ncu-rep --page details --csv > /tmp/ncu/$name.details.csv 2>&1
  "$NCU" --import /tmp/ncu/$name.ncu-rep --page raw --csv > /tmp/ncu/$name.raw.csv 2>&1
  "$NCU" --import /tmp/ncu/$name.ncu-rep --page source --csv --print-source sass > /tmp/ncu/$name.source.csv 2>/dev/null
}
prof dkdv "$C" dkdv_tma
prof fused63 "$F" bwd_fused SAMEBITS_BWD_FUSED_DIAG=${DIAG:-63}
[ -n "${DIAG2:-}" ] && prof fused$DIAG2 "$F" bwd_fused SAMEBITS_BWD_FUSED_DIAG=$DIAG2
python3 - /tmp/ncu "$OUT/summary.txt" <<'PY'
import csv, sys, os
d, out = sys.argv[1:3]
keep = ("Duration", "Elapsed Cycles", "SM Frequency", "DRAM Throughput", "L2 Hit Rate", "L1/TEX Hit Rate",
        "Compute (SM) Throughput", "Issued Warp Per Scheduler", "No Eligible", "Eligible Warps",
        "Warp Cycles Per Issued", "Registers Per Thread", "Grid Size", "Executed Ipc", "Executed Instructions",
        "Local", "Shared Memory", "Bank")
with open(out, "w") as f:
    for name in sorted(x[:-12] for x in os.listdir(d) if x.endswith(".details.csv")):
        f.write(f"\n== {name}\n")
        rows = list(csv.reader(open(f"{d}/{name}.details.csv", errors="replace")))
        for r in rows[1:]:
            if len(r) > 14 and any(k in r[12] for k in keep):
                f.write(f"   {r[11][:20]:20s} {r[12]}: {r[14]} {r[13]}\n")
PY
tar czf /tmp/ncu.tgz -C /tmp/ncu --exclude='*.ncu-rep' . && mv /tmp/ncu.tgz "$OUT/ncu.tgz"
printf '%s\n' "${sum[@]}" | tee -a "$OUT/summary.txt"
