#!/usr/bin/env bash
# device: the Python-vs-C probe at B x 1k (library of dmma4 = af01052)
set -uo pipefail
C=$PWD/.carry/dmma4
[ -f $C/libsamebits.so ] || xz -d -k $C/libsamebits.so.xz
chmod +x $C/test_attention_decode_sm90
export LD_LIBRARY_PATH=$C
nvidia-smi --query-gpu=name --format=csv,noheader
SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=$PWD/python timeout 200 python3 .carry/probe/decode_probe.py 2>&1 | tee $OUT/probe.jsonl
timeout 100 $C/test_attention_decode_sm90 --bench --graph --variants auto --max-tokens 1048576 2>&1 | tee $OUT/cbench.md
