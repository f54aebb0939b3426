#!/usr/bin/env bash
# device: decode beside the peers at page sizes 16 and 256 (library of 7fa67d0 = .carry/rs)
set -uo pipefail
R=$(mktemp -d); trap 'tar czf $OUT/all.tgz -C $R .' EXIT
L=$PWD/.carry/rs; xz -d -k -f $L/libsamebits.so.xz
for pg in 16 256; do
  SAMEBITS_LIBRARY=$L/libsamebits.so PYTHONPATH=$PWD/python timeout 150 python3 bench/bench_decode.py --graph --reps 15 --no-flex --short 1 --page $pg --out $R > $R/peers_page$pg.log 2>&1; echo "page $pg rc=$?"
done
python3 - $R <<'PY'
import json, sys, os
R = sys.argv[1]
rows = {pg: json.load(open(os.path.join(R, f'bench_decode_graph_short1_page{pg}.json'))) for pg in (16, 256)}
print('B ctx | samebits GB/s page16 page256 | cudnn flash')
for a, b in zip(rows[16], rows[256]):
    print(a['batch'], a['context'], '|', round(a['samebits_gbs']), round(b['samebits_gbs']), '|', round(b.get('cudnn_gbs', 0)), round(b.get('flash_gbs', 0)))
PY
