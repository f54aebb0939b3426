#!/usr/bin/env python3
"""The table the decode device scripts print after their rounds: every
bench_decode.py JSON under <out>/r<round>/<setting>/, as one line per shape
holding, per setting, [samebits, cuDNN, flash] us for each round (the raw
JSON that docs/benchmarks.md quotes).

usage: python3 bench/decode_rounds_table.py OUT "legend" [glob of the setting folders, default *]
"""
import glob
import json
import os
import sys


def main():
    out, legend = sys.argv[1], sys.argv[2]
    settings = sys.argv[3] if len(sys.argv) > 3 else "*"
    rows = {}
    for f in sorted(glob.glob(os.path.join(out, "r*", settings, "bench_decode*.json"))):
        setting = f.split(os.sep)[-2]
        for r in json.load(open(f)):
            rows.setdefault(f"{r['batch']}x{r['context']}", {}).setdefault(setting, []).append(
                [round(r.get(k + "_us", 0), 1) for k in ("samebits", "cudnn", "flash")])
    print(f"us [samebits, cudnn, flash] per round; {legend}\n")
    for shape, v in rows.items():
        print(shape, json.dumps(v))


if __name__ == "__main__":
    main()
