"""Do two builds of the library give the same GEMM bits? One library per
process (SAMEBITS_LIBRARY):

    SAMEBITS_LIBRARY=old.so PYTHONPATH=python python bench/gemm_bits_dump.py dump old.json
    SAMEBITS_LIBRARY=new.so PYTHONPATH=python python bench/gemm_bits_dump.py dump new.json
    python bench/gemm_bits_dump.py compare old.json new.json

`dump` hashes (sha256 of the raw bytes) samebits.dense.linear outputs, with
and without a bias, for a few shapes (partial tiles, M = 1 to 4096, N up to 14336) x bf16 /
fp16 x the default entry and a set of forced entries (an entry a build does
not know is recorded as an error, which `compare` reports; a measurement
entry the build leaves out, -DSAMEBITS_GEMM_RESEARCH_TILES=OFF, is recorded
as NOT BUILT and compared only where both builds have it). Inputs come
from a seeded CUDA generator and their hashes are recorded too, so `compare`
also checks that both runs saw the same inputs. Negative control: `compare`
fails if one output's hash is changed (checked on every run).
"""
import hashlib
import json
import sys

import torch

sys.path.insert(0, "bench")
from bench_util import forced_tile  # noqa: E402

TILES = [None, "128x256", "128x256m2", "128x128", "128x128m2", "128x128pp", "128x128ppm2", "192x128", "64x128",
         "64x128c2", "64x256", "64x64", "64x32", "16x32s", "16x64s", "32x64s", "128x224", "128x192", "128x160",
         "128x96", "192x192", "256x160", "192x192w3", "192x128w3", "128x168", "64x96", "16x112s"]
# partial last m and n tiles of every size class, N a multiple of 8 and not
# (the last tile moves back only where N % 8 == 0), M below one tile
SHAPES = [(1, 4096, 4096), (77, 1000, 520), (513, 4096, 4096), (2048, 14336, 4096), (4096, 4096, 14336),
          (288, 4096, 4096), (330, 1000, 640), (1001, 1003, 512), (45, 520, 1000), (17, 200, 256), (800, 4104, 1024)]


def digest(t):
    return hashlib.sha256(t.contiguous().view(torch.uint8).cpu().numpy().tobytes()).hexdigest()[:16]


def dump(path):
    import samebits
    out = {}
    for (M, N, K) in SHAPES:
        for dt in (torch.bfloat16, torch.float16):
            g = torch.Generator(device="cuda").manual_seed(M * 7 + N)
            x = torch.randn(M, K, device="cuda", dtype=dt, generator=g)
            w = torch.randn(N, K, device="cuda", dtype=dt, generator=g) / K ** 0.5
            b = torch.randn(N, device="cuda", dtype=dt, generator=g)
            key = f"{M}x{N}x{K} {str(dt)[6:]}"
            out[key + " inputs"] = digest(x) + digest(w) + digest(b)
            for t in TILES:
                try:
                    with forced_tile(t):
                        y = samebits.dense.linear(x, w, b)
                    torch.cuda.synchronize()
                    out[f"{key} {t or 'default'}"] = digest(y)
                    with forced_tile(t):  # without a bias: the staged entries' lean kernels
                        y = samebits.dense.linear(x, w)
                    torch.cuda.synchronize()
                    out[f"{key} {t or 'default'} nobias"] = digest(y)
                except NotImplementedError as e:
                    built = "SAMEBITS_GEMM_RESEARCH_TILES" not in str(e)
                    out[f"{key} {t or 'default'}"] = "ERR NotImplementedError" if built else "NOT BUILT"
                except Exception as e:  # noqa: BLE001 - recorded, reported by compare
                    out[f"{key} {t or 'default'}"] = "ERR " + type(e).__name__
    json.dump(out, open(path, "w"), indent=1)
    print(len(out), "entries")


def differ(a, b):
    return [k for k in a if a[k] != b.get(k)] + [k for k in b if k not in a]


def compare(pa, pb, aliases=()):
    """aliases: "NEW=OLD" pairs: B's entry NEW is compared with A's entry OLD
    (A's library predates NEW; A's own NEW outputs, errors, are dropped)."""
    a, b = json.load(open(pa)), json.load(open(pb))
    for pair in aliases:
        new, old = pair.split("=")
        a = {k: v for k, v in a.items() if not k.endswith(" " + new)}
        a.update({k[: -len(old)] + new: v for k, v in list(a.items()) if k.endswith(" " + old)})
    absent = [k for k in set(a) | set(b) if "NOT BUILT" in (a.get(k), b.get(k))]
    a = {k: v for k, v in a.items() if k not in absent}
    b = {k: v for k, v in b.items() if k not in absent}
    if absent:
        print(f"{len(absent)} outputs of entries one of the builds leaves out, not compared")
    d = differ(a, b)
    errs = [k for k in a if a[k].startswith("ERR")] + [k for k in b if b[k].startswith("ERR")]
    k0 = next(iter(b))
    control = differ(a, {**b, k0: "0" * 16}) != []  # a changed hash must be found
    ok = not d and not errs and control
    print(f"outputs {len(a)} differ {len(d)} {d[:5]} errors {len(errs)} {errs[:3]} control {control} -> "
          f"{'SAME BITS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4:]))
