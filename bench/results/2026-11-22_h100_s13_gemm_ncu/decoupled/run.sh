#!/usr/bin/env bash
# device: branch mc-probe2: the cluster entries with B multicast (default) against B loaded unicast by every
# cluster CTA (SAMEBITS_GEMM_MC_OFF=1), and unicast without the cross-CTA stage release (=2): bits, then ncu L2 counters at 512 x 4096 x 14336
set -uo pipefail
C=$PWD/.carry/mcp2
xz -d -k -f $C/libsamebits.so.xz
cp $0 $OUT/run.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 120 python3 - <<'PY' > $OUT/bits.log 2>&1
import os, torch
from samebits import dense as D
ok = True
for (m, n, k) in [(512, 4096, 14336), (300, 520, 1000), (1, 4096, 4096)]:
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g) / 32
    os.environ.pop("SAMEBITS_GEMM_TILE", None); os.environ.pop("SAMEBITS_GEMM_MC_OFF", None)
    ref = D.linear(x, w)
    for t in ("128x128m2", "128x256m2", "128x128ppm2"):
        os.environ["SAMEBITS_GEMM_TILE"] = t
        for mc in ("0", "1", "2"):
            os.environ["SAMEBITS_GEMM_MC_OFF"] = mc
            e = torch.equal(D.linear(x, w), ref); ok &= e
            print(m, n, k, t, "mc_off", mc, "equal to default", e)
    os.environ.pop("SAMEBITS_GEMM_MC_OFF", None)
    x[m // 2, 0] += 1; os.environ["SAMEBITS_GEMM_TILE"] = "128x128m2"
    print("control (a changed input changes the output):", not torch.equal(D.linear(x, w), ref))
print("ALL EQUAL" if ok else "MISMATCH")
PY
echo "bits rc=$? $(tail -1 $OUT/bits.log)"
for mc in 0 2; do
  mkdir -p $OUT/mc$mc
  SAMEBITS_GEMM_MC_OFF=$mc CARRY=.carry/mcp2 OUT=$OUT/mc$mc TILES=128x128m2,128x256m2 DRIVER_ARGS="--m 512 --n 4096 --k 14336" \
  EXTRA_METRICS="lts__t_sectors_srcunit_tex_op_read.sum lts__t_sectors_srcunit_ltcfabric.sum lts__t_requests_srcunit_tex_op_read.sum" \
  timeout 150 bash bench/gemm_v3_ncu.sh > $OUT/mc$mc/ncu.log 2>&1
  echo "mc_off=$mc rc=$?"
  rm -f $OUT/mc$mc/*.ncu-rep $OUT/mc$mc/gemm3_ncu_details.csv
  grep -E "Kernel Name|gpu__time|hmma_cycles|srcunit_tex_op_read.sum|ltcfabric|xbar2l1tex" $OUT/mc$mc/ncu.log | cut -c1-120
done
