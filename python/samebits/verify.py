"""`samebits verify`: the invariance suite of the numerics contract.

Every check is bitwise (SHA-256 of the raw bytes, or torch.equal), never a
tolerance. Each property is also run against a path that is known not to be
invariant (the negative control) so that the suite can be seen to fail.

Sizes are chosen per device: on the CPU the whole suite finishes in about
two minutes on two cores; on a GPU it uses the lengths of docs/numerics.md's
suite (up to 4097 keys per sequence, decode batches up to 256).
"""
from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from dataclasses import dataclass, field

import torch

import samebits


@dataclass
class Result:
    name: str
    cases: int = 0
    failures: list = field(default_factory=list)
    expect_differ: bool = False  # negative control: a difference is the pass
    seconds: float = 0.0
    error: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and not self.failures

    @property
    def verdict(self) -> str:
        if self.error.startswith("NotImplementedError"):
            return "NOT BUILT"
        if self.error:
            return "ERROR"
        if self.expect_differ:
            return "DIFFERS (expected)" if self.passed else "FAIL (did not differ)"
        return "PASS" if self.passed else "FAIL"


def digest(*tensors: torch.Tensor) -> str:
    h = hashlib.sha256()
    for t in tensors:
        t = t.detach().contiguous().cpu()
        h.update(str((t.dtype, tuple(t.shape))).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN payloads included)."""
    return a.dtype == b.dtype and a.shape == b.shape and digest(a) == digest(b)


class Suite:
    """The invariance properties; one method per row of the report."""

    def __init__(self, device: str, seed: int):
        self.device = device
        self.gpu = device == "cuda"
        self.rng = random.Random(seed)
        self.gen = torch.Generator(device="cpu").manual_seed(seed)

    # --- inputs -----------------------------------------------------------
    def randn(self, *shape, dtype=torch.bfloat16):
        return torch.randn(*shape, generator=self.gen).to(dtype).to(self.device)

    def qkv(self, lq, lk, h=2, hk=None, d=64, dtype=torch.bfloat16):
        hk = hk or h
        return self.randn(lq, h, d, dtype=dtype), self.randn(lk, hk, d, dtype=dtype), \
            self.randn(lk, hk, d, dtype=dtype)

    def cu(self, lens):
        out = [0]
        for n in lens:
            out.append(out[-1] + n)
        return torch.tensor(out, dtype=torch.int32, device=self.device)

    def varlen(self, seqs, **kw):
        """Packs [(q, k, v), ...] in the given order and runs attention_varlen."""
        q = torch.cat([s[0] for s in seqs])
        k = torch.cat([s[1] for s in seqs])
        v = torch.cat([s[2] for s in seqs])
        cq, ck = self.cu([s[0].shape[0] for s in seqs]), self.cu([s[1].shape[0] for s in seqs])
        out, lse = samebits.attention_varlen(
            q, k, v, cq, ck, max(s[0].shape[0] for s in seqs), max(s[1].shape[0] for s in seqs),
            return_lse=True, **kw)
        rows = cq.tolist()
        return [(out[rows[i]:rows[i + 1]], lse[:, rows[i]:rows[i + 1]]) for i in range(len(seqs))]

    def alone(self, s, **kw):
        return self.varlen([s], **kw)[0]

    # --- properties -------------------------------------------------------
    def runs(self, r: Result):
        """N forward+backward runs of one case give one hash of (O, LSE, dQ, dK, dV)."""
        n = 50
        L, H, D = (2048, 16, 128) if self.gpu else (256, 2, 64)
        q, k, v = (self.randn(1, L, H, D) for _ in range(3))
        g = self.randn(1, L, H, D)
        hashes = set()
        for _ in range(n):
            qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
            out, lse = samebits.attention(qq, kk, vv, causal=True, return_lse=True)
            out.backward(g)
            hashes.add(digest(out, lse, qq.grad, kk.grad, vv.grad))
            r.cases += 1
        if len(hashes) != 1:
            r.failures.append(f"{len(hashes)} distinct hashes over {n} runs")

    def batch(self, r: Result):
        """Sequence i alone == sequence i inside batches of random neighbours."""
        lengths = [1, 7, 128, 500, 1000, 2048, 4097]
        sizes = [2, 8, 64]
        for L in lengths:
            target = self.qkv(L, L, h=4 if self.gpu else 1)
            ref = self.alone(target, causal=True)
            for B in sizes:
                big = 4097 if self.gpu else (1200 if B <= 8 else 200)  # CPU: keep it ~2 minutes
                nb = [self.qkv(n, n, h=target[0].shape[1]) for n in
                      (self.rng.randint(1, big) for _ in range(B - 1))]
                pos = self.rng.randrange(B)
                got = self.varlen(nb[:pos] + [target] + nb[pos:], causal=True)[pos]
                r.cases += 1
                if not (same(got[0], ref[0]) and same(got[1], ref[1])):
                    r.failures.append(f"L={L} batch={B}")
        # dense layout: same length, different neighbours
        for B in [2, 8]:
            q, k, v = (self.randn(B, 300, 2, 64) for _ in range(3))
            full = samebits.attention(q, k, v, causal=True)
            for i in range(B):
                r.cases += 1
                one = samebits.attention(q[i:i + 1], k[i:i + 1], v[i:i + 1], causal=True)
                if not same(one[0], full[i]):
                    r.failures.append(f"dense batch={B} row {i}")

    def varlen_packing(self, r: Result):
        """Random packings and orders: each sequence == itself alone."""
        for trial in range(4):
            seqs = [self.qkv(n, n) for n in (self.rng.randint(1, 600) for _ in range(6))]
            refs = [self.alone(s, causal=True) for s in seqs]
            order = list(range(len(seqs)))
            for _ in range(2):
                self.rng.shuffle(order)
                got = self.varlen([seqs[i] for i in order], causal=True)
                for slot, i in enumerate(order):
                    r.cases += 1
                    if not (same(got[slot][0], refs[i][0]) and same(got[slot][1], refs[i][1])):
                        r.failures.append(f"trial {trial} seq {i} at slot {slot}")

    def _prefill(self, T, h=4, hk=1, d=64):
        q, k, v = self.qkv(T, T, h=h, hk=hk, d=d)
        out, lse = self.alone((q, k, v), causal=True)
        return q, k, v, (out, lse)

    def _paged(self, ks, vs, lens, page, cap):
        """Builds a scattered paged cache holding ks[b][:lens[b]] for each b."""
        B = len(ks)
        hk, d = ks[0].shape[1], ks[0].shape[2]
        pages_per = (cap + page - 1) // page
        num_pages = B * pages_per + 3
        perm = list(range(num_pages))
        self.rng.shuffle(perm)
        table = torch.tensor(perm[:B * pages_per], dtype=torch.int32).view(B, pages_per)
        # NaN in every slot a sequence does not own: a kernel that multiplies
        # an invisible key or value poisons the row and fails the check.
        kc = torch.full((num_pages, page, hk, d), float("nan"), dtype=ks[0].dtype, device=self.device)
        vc = torch.full_like(kc, float("nan"))
        for b in range(B):
            for j in range(0, lens[b], page):
                n = min(page, lens[b] - j)
                kc[table[b, j // page], :n] = ks[b][j:j + n]
                vc[table[b, j // page], :n] = vs[b][j:j + n]
        return kc, vc, table.to(self.device)

    def decode(self, r: Result):
        """Decode at position t == prefill row t, in batches of neighbours, any page size."""
        T = 4097 if self.gpu else 1500
        q, k, v, ref = self._prefill(T)
        batches = [1, 7, 64, 256] if self.gpu else [1, 7, 64]
        for page in [16, 64, 256]:
            for B in batches:
                t = self.rng.randrange(T)
                slot = self.rng.randrange(B)
                lens, qs, kn, vn, ks, vs = [], [], [], [], [], []
                for b in range(B):
                    if b == slot:
                        lens.append(t)
                        qs.append(q[t:t + 1]); kn.append(k[t:t + 1]); vn.append(v[t:t + 1])
                        ks.append(k); vs.append(v)
                    else:
                        n = self.rng.randint(0, T - 1)
                        nq, nk, nv = self.qkv(1, n + 1, h=4, hk=1)
                        lens.append(n)
                        qs.append(nq); kn.append(nk[n:]); vn.append(nv[n:]); ks.append(nk); vs.append(nv)
                kc, vc, table = self._paged(ks, vs, lens, page, T)
                seqlens = torch.tensor(lens, dtype=torch.int32, device=self.device)
                out, lse = samebits.attention_with_kvcache(
                    torch.stack(qs), kc, vc, torch.stack(kn), torch.stack(vn),
                    cache_seqlens=seqlens, block_table=table, causal=True, return_lse=True)
                r.cases += 1
                if not (same(out[slot, 0], ref[0][t]) and same(lse[slot, :, 0], ref[1][:, t])):
                    r.failures.append(f"page={page} batch={B} t={t}")
        if self.gpu:
            self._decode_graph(r, q, k, v, ref, T)

    def _decode_graph(self, r, q, k, v, ref, T):
        """The same decode step captured in a CUDA graph and replayed."""
        t = T - 1
        kc, vc, table = self._paged([k], [v], [t], 64, T)
        seqlens = torch.tensor([t], dtype=torch.int32, device=self.device)
        qs, kn, vn = q[t:t + 1][None].clone(), k[t:t + 1][None].clone(), v[t:t + 1][None].clone()
        kw = dict(cache_seqlens=seqlens, block_table=table, causal=True)
        samebits.attention_with_kvcache(qs, kc, vc, kn, vn, **kw)  # warm up
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = samebits.attention_with_kvcache(qs, kc, vc, kn, vn, **kw)
        for _ in range(3):
            graph.replay()
            torch.cuda.synchronize()
            r.cases += 1
            if not same(out[0, 0], ref[0][t]):
                r.failures.append("CUDA graph replay")

    def chunked_prefill(self, r: Result):
        """Chunked prefill with chunk sizes 1, 17, 128, 1000 == one-shot prefill."""
        T = 2000 if self.gpu else 1100
        q, k, v, ref = self._prefill(T)
        cap = T
        for chunk in [1, 17, 128, 1000]:
            n_tokens = T
            kc = torch.zeros(1, cap, k.shape[1], k.shape[2], dtype=k.dtype, device=self.device)
            vc = torch.zeros_like(kc)
            outs = []
            for s in range(0, n_tokens, chunk):
                e = min(s + chunk, n_tokens)
                seqlens = torch.tensor([s], dtype=torch.int32, device=self.device)
                outs.append(samebits.attention_with_kvcache(
                    q[None, s:e], kc, vc, k[None, s:e], v[None, s:e], cache_seqlens=seqlens,
                    causal=True)[0])
            r.cases += 1
            if not same(torch.cat(outs), ref[0][:n_tokens]):
                r.failures.append(f"chunk={chunk}")

    def features(self, r: Result):
        """Batch invariance for every dtype x head dim x GQA ratio x mask variant."""
        masks = {"causal": dict(causal=True), "window": dict(causal=True, window_size=(100, 0)),
                 "softcap": dict(softcap=30.0), "noncausal-window": dict(window_size=(64, 32))}
        L = 600 if self.gpu else 200
        for dtype in [torch.bfloat16, torch.float16]:
            for d in [64, 128, 256]:
                for h, hk in [(4, 4), (8, 2), (16, 2), (8, 1)]:  # GQA 1, 4, 8 and MQA
                    for mname, kw in masks.items():
                        target = self.qkv(L, L, h=h, hk=hk, d=d, dtype=dtype)
                        nb = [self.qkv(n, n, h=h, hk=hk, d=d, dtype=dtype)
                              for n in (self.rng.randint(1, L) for _ in range(2))]
                        ref = self.alone(target, **kw)
                        got = self.varlen([nb[0], target, nb[1]], **kw)[1]
                        r.cases += 1
                        if not (same(got[0], ref[0]) and same(got[1], ref[1])):
                            r.failures.append(f"{dtype} d={d} gqa={h}:{hk} {mname}")

    def backward_batch(self, r: Result):
        """dQ, dK, dV of a sequence alone == inside a varlen batch, GQA included."""
        for h, hk in [(4, 4), (4, 1), (8, 2)]:
            for L in [1, 129, 700]:
                target = self.qkv(L, L, h=h, hk=hk)
                gt = self.randn(L, h, 64)
                nbs = [self.qkv(n, n, h=h, hk=hk) for n in (self.rng.randint(1, 500) for _ in range(3))]
                gn = [self.randn(s[0].shape[0], h, 64) for s in nbs]

                def grads(seqs, gs, idx):
                    leaves = [[t.clone().requires_grad_() for t in s] for s in seqs]
                    q = torch.cat([s[0] for s in leaves]); k = torch.cat([s[1] for s in leaves])
                    v = torch.cat([s[2] for s in leaves])
                    cq = self.cu([s[0].shape[0] for s in seqs]); ck = self.cu([s[1].shape[0] for s in seqs])
                    out = samebits.attention_varlen(q, k, v, cq, ck, causal=True)
                    out.backward(torch.cat(gs))
                    return [t.grad for t in leaves[idx]]

                ref = grads([target], [gt], 0)
                got = grads([nbs[0], target, nbs[1], nbs[2]], [gn[0], gt, gn[1], gn[2]], 1)
                r.cases += 1
                if not all(same(a, b) for a, b in zip(ref, got)):
                    r.failures.append(f"gqa={h}:{hk} L={L}")

    def compile(self, r: Result):
        """A small attention block under torch.compile == eager, bit for bit."""
        torch.manual_seed(0)

        class Block(torch.nn.Module):
            def __init__(self, dim=128, heads=2):
                super().__init__()
                self.heads = heads
                self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
                self.proj = torch.nn.Linear(dim, dim, bias=False)

            def forward(self, x):
                b, n, c = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).unbind(2)
                return self.proj(samebits.attention(q, k, v, causal=True).reshape(b, n, c))

        block = Block().to(self.device, torch.bfloat16)
        x = self.randn(2, 64, 128)
        eager = block(x)
        compiled = torch.compile(block, fullgraph=True)(x)
        r.cases += 1
        if not same(eager, compiled):
            r.failures.append("compiled output differs from eager")

    def negative_control(self, r: Result):
        """A split-KV decode whose split count follows the batch (the peers' heuristic).

        The same row decoded alone and inside a batch of 64 must come out
        different, proving that the bitwise checks above can fail."""
        r.expect_differ = True
        T, D = 3000, 64
        q = torch.randn(1, D, generator=self.gen)
        k = torch.randn(T, D, generator=self.gen)
        v = torch.randn(T, D, generator=self.gen)

        def split_count_decode(batch):
            n_split = max(1, 132 // batch)  # "fill the SMs": splits follow the batch
            bounds = [round(i * T / n_split) for i in range(n_split + 1)]
            parts = []
            for a, b in zip(bounds[:-1], bounds[1:]):
                s = (q @ k[a:b].T) / D ** 0.5
                m = s.max(dim=-1).values
                p = torch.exp(s - m[:, None])
                parts.append((m, p.sum(-1), p @ v[a:b]))
            m = torch.stack([p[0] for p in parts]).max(0).values
            w = [torch.exp(p[0] - m) for p in parts]
            num = sum(wi[:, None] * p[2] for wi, p in zip(w, parts))
            den = sum(wi * p[1] for wi, p in zip(w, parts))
            return num / den[:, None]

        alone, batched = split_count_decode(1), split_count_decode(64)
        r.cases += 1
        if same(alone, batched):
            r.failures.append("the split-count decode gave equal bits alone and batched")
        # a one-ulp change of one key must change samebits' own hash too
        q1, k1, v1 = self.qkv(200, 200)
        base = self.alone((q1, k1, v1), causal=True)[0]
        k2 = k1.clone()
        k2.view(torch.int16)[100, 0, 0] += 1
        r.cases += 1
        if same(self.alone((q1, k2, v1), causal=True)[0], base):
            r.failures.append("a one-ulp key change did not change the output hash")


PROPERTIES = [
    ("runs", "50 fwd+bwd runs -> 1 hash"),
    ("batch", "alone == inside batches of neighbours"),
    ("varlen_packing", "random varlen packings and orders"),
    ("decode", "decode(t) == prefill row t, batches, pages"),
    ("chunked_prefill", "chunks 1/17/128/1000 == one shot"),
    ("features", "dtype x hdim x GQA x mask, batched"),
    ("backward_batch", "dQ/dK/dV alone == in a batch"),
    ("compile", "torch.compile == eager"),
    ("negative_control", "split count from batch size"),
]


def pick_device(device: str) -> str:
    if device != "auto":
        return device
    if torch.cuda.is_available() and samebits.cuda_supported():
        return "cuda"
    return "cpu"


def info() -> str:
    lines = [f"samebits {samebits.__version__}",
             f"CUDA kernels built: {'sm_%d' % samebits.cuda_built() if samebits.cuda_built() else 'no'}",
             f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}"]
    if torch.cuda.is_available():
        lines.append(f"GPU: {torch.cuda.get_device_name()} (samebits supported: "
                     f"{bool(samebits.cuda_supported())})")
    return "\n".join(lines)


def run(device="auto", seed=0, only=None, json_path=None) -> int:
    device = pick_device(device)
    print(info())
    print(f"running the invariance suite on: {device}\n")
    suite = Suite(device, seed)
    results = []
    for name, desc in PROPERTIES:
        if only and name not in only:
            continue
        r = Result(name)
        t0 = time.perf_counter()
        try:
            getattr(suite, name)(r)
        except Exception as e:  # a crash is a failure of the property, reported as such
            r.error = f"{type(e).__name__}: {e}"
        r.seconds = time.perf_counter() - t0
        results.append((r, desc))
        print(f"  {name:<18} {r.verdict:<22} {r.cases:>4} cases  {r.seconds:6.1f}s", flush=True)

    print("\n| property | what | cases | result |\n|---|---|---|---|")
    for r, desc in results:
        print(f"| {r.name} | {desc} | {r.cases} | {r.verdict} |")
    failed = [r for r, _ in results if not r.passed]
    for r in failed:
        print(f"\n{r.name}: {r.error or '; '.join(r.failures[:10])}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": device, "seed": seed, "results": [
                {"property": r.name, "cases": r.cases, "verdict": r.verdict,
                 "seconds": round(r.seconds, 2), "failures": r.failures, "error": r.error}
                for r, _ in results]}, f, indent=2)
    print(f"\n{len(results) - len(failed)}/{len(results)} properties hold"
          + ("" if not failed else f"; FAILED: {', '.join(r.name for r in failed)}"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run())
