#!/usr/bin/env python3
"""One line per shape from bench/device_s34_ab.sh's rounds: for every
setting (bd_<setting>_r<round>/bench_decode*.json under the given folders)
the samebits time over its rounds (min-max us), its change against the
setting named rule (or the first seen, or --base), and the faster
peer's time; then the setting that was fastest at that shape. A folder
may also hold the rounds packed as logs.tgz (as device_s34_ab.sh leaves
them).

usage: python3 bench/ab_summary.py [--base SETTING] DIR [DIR ...]
"""
import argparse
import glob
import io
import json
import os
import re
import tarfile


def rounds(folder):
    """(setting, list of bench_decode rows) for every round under folder."""
    pat = re.compile(r"bd_(.+)_r(\d+)/bench_decode[^/]*\.json$")
    for f in sorted(glob.glob(os.path.join(folder, "**", "bench_decode*.json"), recursive=True)):
        m = pat.search(f)
        if m:
            yield m.group(1), json.load(open(f))
    for t in sorted(glob.glob(os.path.join(folder, "**", "logs.tgz"), recursive=True)):
        with tarfile.open(t) as tar:
            for member in tar.getmembers():
                m = pat.search(member.name)
                if m and member.isfile():
                    yield m.group(1), json.load(io.TextIOWrapper(tar.extractfile(member)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="the setting the others are compared with (default: rule, else the first seen)")
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    us, peer, order = {}, {}, []
    for d in args.dirs:
        for setting, rows in rounds(d):
            if setting not in order:
                order.append(setting)
            for r in rows:
                shape = f"{r['batch']}x{r['context']}" + (f" d{r['head_dim']}" if r.get("head_dim", 128) != 128 else "")
                us.setdefault(shape, {}).setdefault(setting, []).append(r["samebits_us"])
                best_peer = min(v for k, v in r.items() if k.endswith("_us") and k != "samebits_us" and
                                isinstance(v, (int, float)) and v > 0)
                peer.setdefault(shape, []).append(best_peer)
    base = args.base or ("rule" if "rule" in order else order[0] if order else None)
    for shape, by in us.items():
        ref = min(by[base]) if base in by else None
        cells = []
        for s in order:
            if s not in by:
                continue
            lo, hi = min(by[s]), max(by[s])
            rel = "" if ref is None or s == base else f" {100 * (ref / lo - 1):+.1f}%"
            cells.append(f"{s} {lo:.2f}-{hi:.2f}{rel}")
        fastest = min(by, key=lambda s: min(by[s]))
        p = min(peer[shape])
        print(f"{shape}: " + " | ".join(cells) + f" | peer {p:.2f} | fastest {fastest} ({p / min(by[fastest]):.2f}x peer)")


if __name__ == "__main__":
    main()
