#!/usr/bin/env bash
# One device call (prepared in the fortieth session, not run): the three
# forced-only wgmma entries 112 columns wide (64x112, 128x112, 192x112w3;
# gemm_w112.patch, which the tree needs applied: pytest's lists name them)
# beside the rule's entries at N = 14336, where 128 columns make 112 tiles
# and 112 columns 128. Bits: pytest's GEMM tests (every forced entry, the
# staged epilogue's 48-column remainder); the probe's bitwise check.
# Speed: the probe, two rounds. ~2 min. carry [".carry/s40w112"].
set -uo pipefail
OUT=${OUT:-/tmp/out}
C=$PWD/.carry/s40w112
L=$C/libsamebits.so
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$L.xz" "$L"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee "$OUT/gpu.txt"
export PYTHONPATH=$PWD/python:$PWD/bench
SAMEBITS_LIBRARY=$L timeout 200 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py \
  -q -p no:cacheprovider -k "gemm or linear" > "$OUT/pytest.log" 2>&1
echo "== pytest rc=$? $(tail -1 "$OUT/pytest.log")"
S=48x14336x4096,64x14336x4096,96x14336x4096,128x14336x4096,160x14336x4096,192x14336x4096,64x14336x14336,192x4096x14336
for r in 1 2; do
  SAMEBITS_LIBRARY=$L timeout 120 python3 bench/gemm_cluster_probe.py --configs default \
    --tiles 64x128,64x112,128x128,128x112,192x128w3,192x112w3 --shapes $S --reps 11 --captures 2 \
    --out "$OUT/w112_$r.json" 2>&1 | sed "s/^/== r$r /"
done
SAMEBITS_LIBRARY=$L timeout 170 python3 bench/gemm_cluster_probe.py --configs default --issue6 \
  --reps 11 --captures 2 --out "$OUT/table.json" > "$OUT/table.log" 2>&1
echo "== GEMM table rc=$? $(tail -2 "$OUT/table.log" | tr "\n" " ")"
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
