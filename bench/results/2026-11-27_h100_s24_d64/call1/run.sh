#!/usr/bin/env bash
# One device call: where the head-dim-64 backward's time goes, and one
# FREE variant. ncu (full set, stall sampling per SASS instruction) of the
# three passes' dK/dV and dQ kernels at d 64 bf16, 4 x 4k non-causal
# (CARRY, the default build); then the whole backward test on the variant
# (J: the kRaw dK/dV form at d 64 in the joint tile order) for its hashes,
# and the C bench at d 64 (and d 128 as a control), default and variant,
# alternated ABBA, with the dK/dV form left to the rule and forced to kRaw.
CARRY=${CARRY:-.carry/s23ad}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
J=$PWD/${J:-.carry/s24j}
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$J/libsamebits.so.xz" "$J/libsamebits.so"
T=$C/test_attention_bwd_sm90
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
mkdir -p /tmp/ncu
prof() {  # name lib-dir kernel-regex [env...]
  local name=$1 lib=$2 re=$3; shift 3
  env "$@" BWD_BENCH_DIMS=64 BWD_BENCH_LENGTHS=4096 LD_LIBRARY_PATH=$lib timeout 240 "$NCU" --clock-control none --set full \
    --import-source no --warp-sampling-interval 2 -k "regex:$re" --launch-skip 3 --launch-count 1 \
    -o /tmp/ncu/$name -f "$T" --bench-only > "/tmp/ncu/$name.log" 2>&1
  sum+=("$name ncu rc=$?")
  "$NCU" --import /tmp/ncu/$name.ncu-rep --page details --csv > /tmp/ncu/$name.details.csv 2>&1
  "$NCU" --import /tmp/ncu/$name.ncu-rep --page source --csv --print-source sass > /tmp/ncu/$name.source.csv 2>/dev/null
}
if [ "${NONCU:-0}" != 1 ]; then
  prof dkdv64 "$C" dkdv_tma
  prof dq64 "$C" dq_tma
  python3 - /tmp/ncu "$OUT/ncu_summary.txt" <<'PY'
import csv, sys, os
d, out = sys.argv[1:3]
keep = ("Duration", "Elapsed Cycles", "SM Frequency", "DRAM Throughput", "L1/TEX Hit Rate",
        "Compute (SM) Throughput", "Issued Warp Per Scheduler", "No Eligible", "Eligible Warps",
        "Warp Cycles Per Issued", "Registers Per Thread", "Executed Ipc", "Executed Instructions",
        "Local", "Shared Memory", "Bank", "Tensor", "Pipe")
with open(out, "w") as f:
    for name in sorted(x[:-12] for x in os.listdir(d) if x.endswith(".details.csv")):
        f.write(f"\n== {name}\n")
        rows = list(csv.reader(open(f"{d}/{name}.details.csv", errors="replace")))
        for r in rows[1:]:
            if len(r) > 14 and any(k in r[12] for k in keep):
                f.write(f"   {r[11][:20]:20s} {r[12]}: {r[14]} {r[13]}\n")
PY
  tar czf /tmp/ncu.tgz -C /tmp/ncu --exclude='*.ncu-rep' . && mv /tmp/ncu.tgz "$OUT/ncu.tgz"
fi
LD_LIBRARY_PATH=$J timeout 300 $T > "$OUT/j_test.log" 2>&1
sum+=("j test rc=$? $(count "$OUT/j_test.log") $(hashes "$OUT/j_test.log")")
for r in 1; do
  i=0
  for x in a j j a; do
    lib=$C; [ $x = j ] && lib=$J; i=$((i + 1))
    BWD_BENCH_DIMS=64 LD_LIBRARY_PATH=$lib timeout 120 $T --bench-only > "$OUT/b_${x}_rule_$r$i.log" 2>&1
    SAMEBITS_BWD_DKDV_FORM=1 BWD_BENCH_DIMS=64 LD_LIBRARY_PATH=$lib timeout 120 $T --bench-only > "$OUT/b_${x}_raw_$r$i.log" 2>&1
  done
done
for f in "$OUT"/b_*.log; do echo "== $(basename "$f")"; grep -E '^\| bf16' "$f"; done > "$OUT/bench.txt"
rm -f "$OUT"/b_*.log
printf '%s\n' "${sum[@]}" | tee "$OUT/summary.txt"
