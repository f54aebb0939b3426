"""Do two builds of the library give the same row-op bits? The counterpart
of gemm_bits_dump.py (whose hashing and comparison it uses), one library per
process (SAMEBITS_LIBRARY):

    SAMEBITS_LIBRARY=old.so PYTHONPATH=python python bench/rows_bits_dump.py dump old.json
    SAMEBITS_LIBRARY=new.so PYTHONPATH=python python bench/rows_bits_dump.py dump new.json
    python bench/rows_bits_dump.py compare old.json new.json

`dump` hashes the outputs of rms_norm (with and without weight, unaligned
rows), add_rms_norm, the RMSNorm backward (dx, dw), softmax, log_softmax,
sum and mean over bf16 / fp16 / fp32, N = 64-20000 and M = 1-4096, and the
RMSNorm backward at M = 5000-16416 (bf16 / fp16, N = 1024-8192). An op
that raises is recorded as an error, which `compare` reports as a failure.
Negative controls, checked on every compare: a changed input element
changes rms_norm's hash (recorded by each dump), and a changed output hash
is found (gemm_bits_dump's check).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_bits_dump import differ, digest  # noqa: E402

DEV = os.environ.get("ROWS_DUMP_DEVICE", "cuda")  # "cpu": a dry run of the script


def h(t):
    return digest(t.detach())


def dump(path):
    import torch
    from samebits import dense as D
    out = {}
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for n in (64, 1000, 1024, 4000, 4096, 8192, 16384, 20000):
            for m in (1, 7, 513, 4096):
                g = torch.Generator(device=DEV).manual_seed(n * 7 + m)
                x = torch.randn(m, n, device=DEV, dtype=dt, generator=g) * 2
                r = torch.randn(m, n, device=DEV, dtype=dt, generator=g)
                w = torch.randn(n, device=DEV, dtype=dt, generator=g)
                dy = torch.randn(m, n, device=DEV, dtype=dt, generator=g)
                k = f"{str(dt)[6:]} {m}x{n}"

                def rec(name, fn):
                    try:
                        o = fn()
                        out[f"{name} {k}"] = ",".join(h(t) for t in (o if isinstance(o, tuple) else (o,)))
                    except Exception as e:  # noqa: BLE001 - recorded, reported by compare
                        out[f"{name} {k}"] = "ERR " + type(e).__name__

                rec("rms_norm", lambda: D.rms_norm(x, w, 1e-6))
                rec("rms_norm noweight", lambda: D.rms_norm(x, None, 1e-6))
                if n > 64:  # unaligned row starts (x and weight)
                    rec("rms_norm unaligned", lambda: D.rms_norm(x[:, 1:], w[1:], 1e-6))
                rec("add_rms_norm", lambda: D.add_rms_norm(x, r, w, 1e-6))

                def bwd():
                    xg = x.clone().requires_grad_(True)
                    wg = w.clone().requires_grad_(True)
                    D.rms_norm(xg, wg, 1e-6).backward(dy)
                    return xg.grad, wg.grad
                rec("rms_norm bwd", bwd)
                rec("softmax", lambda: D.softmax(x, -1))
                rec("log_softmax", lambda: D.log_softmax(x, -1))
                rec("sum", lambda: D.sum(x, -1))
                rec("mean", lambda: D.mean(x, -1))
    # the RMSNorm backward where the fused kernel's CTAs take two or more
    # consecutive chunks (above one wave of 32-row chunks)
    for dt in (torch.bfloat16, torch.float16):
        for n in (1024, 4096, 8192):
            for m in (5000, 8232, 16416):
                g = torch.Generator(device=DEV).manual_seed(n * 11 + m)
                xg = torch.randn(m, n, device=DEV, dtype=dt, generator=g).requires_grad_(True)
                wg = torch.randn(n, device=DEV, dtype=dt, generator=g).requires_grad_(True)
                dy = torch.randn(m, n, device=DEV, dtype=dt, generator=g)
                try:
                    D.rms_norm(xg, wg, 1e-6).backward(dy)
                    out[f"rms_norm bwd {str(dt)[6:]} {m}x{n}"] = h(xg.grad) + "," + h(wg.grad)
                except Exception as e:  # noqa: BLE001 - recorded, reported by compare
                    out[f"rms_norm bwd {str(dt)[6:]} {m}x{n}"] = "ERR " + type(e).__name__
    g = torch.Generator(device=DEV).manual_seed(1)
    x = torch.randn(4096, 4096, device=DEV, dtype=torch.bfloat16, generator=g)
    w = torch.randn(4096, device=DEV, dtype=torch.bfloat16, generator=g)
    a = h(D.rms_norm(x, w, 1e-6)); x[4095, 4095] += 1
    out["_control"] = [a, h(D.rms_norm(x, w, 1e-6))]
    json.dump(out, open(path, "w"), indent=0)
    print(len(out), "outputs")


def compare(a, b):
    A, B = json.load(open(a)), json.load(open(b))
    ctl = {"_control"}
    A2, B2 = {k: v for k, v in A.items() if k not in ctl}, {k: v for k, v in B.items() if k not in ctl}
    d = differ(A2, B2)
    errs = [k for k, v in {**A2, **B2}.items() if v.startswith("ERR")]
    k0 = next(iter(B2))
    control = (A["_control"][0] != A["_control"][1] and B["_control"][0] != B["_control"][1]
               and differ(A2, {**B2, k0: "0" * 16}) != [])
    ok = not d and not errs and control
    print(f"outputs {len(A2)} differ {len(d)} {d[:10]} errors {len(errs)} {errs[:5]} control {control} -> "
          + ("SAME BITS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
