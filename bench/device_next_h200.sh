#!/usr/bin/env bash
# One device call for an H200 (prepared in the forty-first session, not run:
# no H200 came in the fortieth or the forty-first session): main's library
# (CARRY: libsamebits.so.xz and tests' test_attention_decode_sm90 of a main
# build, e.g. `cmake --build build -j2 --target samebits
# test_attention_decode_sm90`, then `xz -T2 -6 -c build/libsamebits.so`).
# The memory clock the decode rule reads (expect 3201000 kHz: bound 96), the
# decode suite --quick (variants auto, 0, 4, 8), pytest's decode / GEMM /
# linear / batch-invariance / rms tests, issue 6's 76 GEMM points twice, the
# small-M entries forced at the H200's low points, rows_dw_probe once. Every
# part was run on an H100 in the fortieth or forty-first session. ~5 min.
# carry [CARRY].
export CARRY=${CARRY:-.carry/main}
source bench/device_common.sh
L=$C/libsamebits.so
python3 -c "import torch; print('memory_clock_rate (kHz):', torch.cuda.get_device_properties(0).memory_clock_rate)"
chmod +x "$C/test_attention_decode_sm90"
LD_LIBRARY_PATH=$C timeout 120 "$C/test_attention_decode_sm90" --quick --variants auto,0,4,8 > "$OUT/decode_quick.log" 2>&1
echo "== decode --quick --variants auto,0,4,8 rc=$? $(count "$OUT/decode_quick.log")"
export PYTHONPATH=$PWD/python:$PWD/bench
SAMEBITS_LIBRARY=$L timeout 150 python3 -m pytest tests/python/test_cuda.py tests/python/test_dense.py \
  tests/python/test_invariance.py -q -p no:cacheprovider -k "decode or gemm or linear or batch_invariant or rms" \
  > "$OUT/pytest.log" 2>&1
echo "== pytest rc=$? $(tail -1 "$OUT/pytest.log")"
for r in 1 2; do
  SAMEBITS_LIBRARY=$L timeout 120 python3 bench/gemm_cluster_probe.py --configs default --issue6 \
    --reps 11 --captures 2 --out "$OUT/table$r.json" > "$OUT/table$r.log" 2>&1
  echo "== GEMM table $r rc=$? $(tail -2 "$OUT/table$r.log" | tr "\n" " ")"
done
SAMEBITS_LIBRARY=$L timeout 60 python3 bench/gemm_cluster_probe.py --configs default \
  --tiles 16x32s,16x64s,16x112s --shapes 1x4096x14336,16x4096x14336,1x14336x4096,16x14336x4096,32x4096x14336 \
  --reps 11 --captures 2 --out "$OUT/small_m.json" > "$OUT/small_m.log" 2>&1
echo "== small-M entries rc=$?"; grep -v "^#" "$OUT/small_m.log" | tail -6
SAMEBITS_LIBRARY=$L timeout 90 python3 bench/rows_dw_probe.py --out "$OUT/dw.json" --ms 4096,8192 --ns 8192,4096 \
  --reps 11 > "$OUT/dw.log" 2>&1
echo "== rows_dw_probe rc=$?"; cat "$OUT/dw.log"
cd "${OUT%/}" && tar czf /tmp/all.tgz --exclude '*.so' . && find . -mindepth 1 -delete && mv /tmp/all.tgz ./all.tgz
