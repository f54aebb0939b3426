#!/usr/bin/env python3
"""The backward C bench's tables (test_attention_bwd_sm90 --bench-only logs
named b_<setting>_<round>.log) regrouped by shape: one line per (head dim,
length, causal, setting) with that setting's ms of every round.

usage: python3 bench/bwd_bench_by_shape.py /tmp/b_*.log > bench_by_shape.txt
"""
import collections
import re
import sys

ROW = re.compile(r"\| (\w+) \| (\d+) \| ([^|]+?) \| (\w+) \| ([\d.]+)")

rows = collections.defaultdict(list)
for path in sys.argv[1:]:
    setting = path.split("/")[-1][2:-4].rsplit("_", 1)[0]
    for line in open(path):
        m = ROW.match(line)
        if m:
            rows[(m[2], m[3].replace(" ", "_"), m[4], setting)].append(float(m[5]))
for key in sorted(rows):
    print(*key, " ".join("%.3f" % x for x in rows[key]))
