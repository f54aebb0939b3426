"""CUDA tensors through the same ops (skipped without a GPU). Where the build
has no kernel for a configuration, the op must raise NotImplementedError
naming it; these tests then xfail with that message."""

import pytest
import torch

import samebits
from conftest import bound, max_err, ref_attention
from numerics_ref import lane16_row_sums, rmsnorm_dw_in_order, row_ops_in_order, tree256_row_sums

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _call(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except NotImplementedError as e:
        assert "samebits" in str(e)
        pytest.xfail(f"no CUDA kernel yet: {e}")


def _qkv(B, L, H, Hk, D, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, L, h, D, generator=g).to(dtype).cuda() for h in (H, Hk, Hk)]


@pytest.mark.parametrize("D", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_accuracy(D, causal):
    q, k, v = _qkv(2, 300, 8, 2, D)
    out, lse = _call(samebits.attention, q, k, v, causal=causal, return_lse=True)
    window = (-1, 0) if causal else (-1, -1)
    qc, kc, vc = q.cpu(), k.cpu(), v.cpu()
    ro, rl = ref_attention(qc, kc, vc, scale=D**-0.5, window=window)
    po, pl = ref_attention(qc, kc, vc, scale=D**-0.5, window=window, dtype=torch.bfloat16)
    assert max_err(out.cpu(), ro) <= bound(max_err(po, ro), ro, torch.bfloat16)
    assert max_err(lse.cpu(), rl) <= bound(max_err(pl, rl), rl, torch.bfloat16)


def test_batch_invariance_and_runs():
    q, k, v = _qkv(6, 777, 8, 2, 128)
    full = _call(samebits.attention, q, k, v, causal=True, return_lse=True)
    for _ in range(3):
        again = samebits.attention(q, k, v, causal=True, return_lse=True)
        assert all(torch.equal(a, b) for a, b in zip(full, again))
    alone = samebits.attention(q[3:4], k[3:4], v[3:4], causal=True, return_lse=True)
    assert all(torch.equal(a, b[3:4]) for a, b in zip(alone, full))


def test_decode_equals_prefill_and_graph_replay():
    L, t = 600, 433
    q, k, v = _qkv(1, L, 8, 1, 128)
    prefill = _call(samebits.attention, q, k, v, causal=True)
    kc, vc = torch.zeros_like(k), torch.zeros_like(v)
    kc[:, :t], vc[:, :t] = k[:, :t], v[:, :t]
    lens = torch.tensor([t], dtype=torch.int32, device="cuda")
    args = (q[:, t:t + 1], kc, vc, k[:, t:t + 1], v[:, t:t + 1])
    out = _call(samebits.attention_with_kvcache, *args, cache_seqlens=lens, causal=True)
    assert torch.equal(out[0, 0], prefill[0, t])
    # CUDA graph: value checks are skipped during capture; replay gives the same bits
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        samebits.attention_with_kvcache(*args, cache_seqlens=lens, causal=True)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = samebits.attention_with_kvcache(*args, cache_seqlens=lens, causal=True)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, out)


def test_decode_caller_workspace():
    # a paged cache of 3 splits: the caller's workspace (exact minimum, and
    # the one-pass size) gives the bits of the forward row; too small names it
    L, t, page = 3000, 2777, 64
    q, k, v = _qkv(1, L, 8, 1, 128)
    prefill = _call(samebits.attention, q, k, v, causal=True)
    pages = torch.randperm(L // page + 8, device="cuda", dtype=torch.int32)
    table = pages[: (L + page - 1) // page].view(1, -1).contiguous()
    kc = torch.full((pages.numel(), page, 1, 128), float("nan"), dtype=q.dtype, device="cuda")
    vc = kc.clone()
    for j in range(t):
        kc[table[0, j // page], j % page], vc[table[0, j // page], j % page] = k[0, j], v[0, j]
    lens = torch.tensor([t], dtype=torch.int32, device="cuda")
    args = (q[:, t:t + 1], kc, vc, k[:, t:t + 1], v[:, t:t + 1])
    one_pass, least = samebits.kvcache_workspace_size(args[0], kc, table)
    assert 0 < least <= one_pass
    for n in (least, one_pass):
        ws = torch.empty(n, dtype=torch.uint8, device="cuda")
        out = _call(samebits.attention_with_kvcache, *args, cache_seqlens=lens, block_table=table, causal=True,
                    workspace=ws)
        assert torch.equal(out[0, 0], prefill[0, t])
    with pytest.raises(ValueError, match="^workspace: .*at least"):
        samebits.attention_with_kvcache(*args, cache_seqlens=lens, block_table=table, causal=True,
                                        workspace=torch.empty(least - 1, dtype=torch.uint8, device="cuda"))
    # captured with its workspace at once, replayed
    ws = torch.empty(one_pass, dtype=torch.uint8, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = samebits.attention_with_kvcache(*args, cache_seqlens=lens, block_table=table, causal=True,
                                                   workspace=ws)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured[0, 0], prefill[0, t])


def _scattered_cache(k, v, L, t, page):
    """A paged cache of sequence 0's first t keys of k, v (1, L, Hk, D) on
    pages in random order, NaN in every other slot: (pages, table, k_cache,
    v_cache)."""
    pages = torch.randperm(L // page + 8, device="cuda", dtype=torch.int32)
    table = pages[: (L + page - 1) // page].view(1, -1).contiguous()
    kc = torch.full((pages.numel(), page) + tuple(k.shape[2:]), float("nan"), dtype=k.dtype, device="cuda")
    vc = kc.clone()
    j = torch.arange(t, device="cuda")
    kc[table[0, j // page].long(), j % page] = k[0, :t]
    vc[table[0, j // page].long(), j % page] = v[0, :t]
    return pages, table, kc, vc


@pytest.mark.parametrize("variant", ["0", "4", "8", "9"])
def test_decode_schedules_equal_forward_row(monkeypatch, variant):
    # every pass-1 schedule (8 and 9: one split on a cluster of CTAs) gives
    # the forward's row, with one split (pass 1 writes the output) and with
    # three (the combine), from a scattered paged cache whose unused slots
    # are NaN; flipping the sign bit of one element of a visible cached key
    # changes the output (a last-mantissa-bit change can vanish in bf16);
    # the split and fold kernels' lean twins (the default for a paged cache
    # by TMA) and the generic kernels (SAMEBITS_DECODE_LEAN=0) alike
    monkeypatch.setenv("SAMEBITS_DECODE_VARIANT", variant)
    page = 64
    for L, t in ((700, 613), (2600, 2399)):
        q, k, v = _qkv(1, L, 8, 1, 128, seed=L)
        prefill = _call(samebits.attention, q, k, v, causal=True)
        pages, table, kc, vc = _scattered_cache(k, v, L, t, page)
        lens = torch.tensor([t], dtype=torch.int32, device="cuda")
        new = (k[:, t:t + 1], v[:, t:t + 1])
        monkeypatch.setenv("SAMEBITS_DECODE_LEAN", "0")
        generic = _call(samebits.attention_with_kvcache, q[:, t:t + 1], kc, vc, *new, cache_seqlens=lens,
                        block_table=table, causal=True)
        monkeypatch.delenv("SAMEBITS_DECODE_LEAN")
        out = _call(samebits.attention_with_kvcache, q[:, t:t + 1], kc, vc, *new, cache_seqlens=lens,
                    block_table=table, causal=True)
        assert torch.equal(out[0, 0], prefill[0, t]) and torch.equal(generic, out)
        kc.view(torch.int16)[table[0, (t // 2) // page].long(), (t // 2) % page, 0, 3] ^= -32768
        flipped = samebits.attention_with_kvcache(q[:, t:t + 1], kc, vc, *new, cache_seqlens=lens,
                                                  block_table=table, causal=True)
        assert not torch.equal(flipped, out)


def test_decode_fold_in_pass_one_equals_combine(monkeypatch):
    # a cache of 3 and 7 splits: the splits folded inside pass 1 (a cluster
    # per KV head; main's schedule and SAMEBITS_DECODE_FOLD=force, as the
    # default rule spreads grids this small over clusters of 8 and folds only
    # grids of 32 clusters or more) give the bits of the combine
    # kernel (0), of the default, and of the forward row, alone and inside a
    # batch whose long neighbour (12 splits) sends the whole batch to the
    # combine; flipping the sign bit of one visible key in the row's last
    # split changes the folded output
    page, hk, g = 64, 2, 8
    monkeypatch.setenv("SAMEBITS_DECODE_VARIANT", "0")
    for L, t in ((2600, 2399), (7000, 6811)):
        q, k, v = _qkv(1, L, hk * g, hk, 128, seed=L)
        prefill = _call(samebits.attention, q, k, v, causal=True)
        pages, table, kc, vc = _scattered_cache(k, v, L, t, page)
        lens = torch.tensor([t], dtype=torch.int32, device="cuda")
        new = (k[:, t:t + 1], v[:, t:t + 1])
        outs = {}
        for fold in ("force", "0", ""):
            monkeypatch.setenv("SAMEBITS_DECODE_FOLD", fold)
            outs[fold] = _call(samebits.attention_with_kvcache, q[:, t:t + 1], kc, vc, *new, cache_seqlens=lens,
                               block_table=table, causal=True, return_lse=True)
            assert torch.equal(outs[fold][0][0, 0], prefill[0, t]), fold
            assert all(torch.equal(a, b) for a, b in zip(outs[fold], outs["force"])), fold
        monkeypatch.delenv("SAMEBITS_DECODE_FOLD")
        # inside a batch with a 12-split neighbour (its own pages, NaN elsewhere)
        L2 = 12 * 1024 - 100
        q2, k2, v2 = _qkv(1, L2, hk * g, hk, 128, seed=L + 1)
        n2 = (L2 + page - 1) // page
        pages2 = torch.arange(pages.numel(), pages.numel() + n2, device="cuda", dtype=torch.int32)
        kcb = torch.cat([kc, torch.full((n2, page, hk, 128), float("nan"), dtype=q.dtype, device="cuda")])
        vcb = torch.cat([vc, kcb[pages.numel():].clone()])
        j2 = torch.arange(L2 - 1, device="cuda")
        kcb[pages2[j2 // page].long(), j2 % page] = k2[0, :L2 - 1]
        vcb[pages2[j2 // page].long(), j2 % page] = v2[0, :L2 - 1]
        width = max(table.shape[1], n2)
        tb = torch.zeros((2, width), dtype=torch.int32, device="cuda")
        tb[0, :table.shape[1]] = table[0]
        tb[1, :n2] = pages2
        qb = torch.cat([q[:, t:t + 1], q2[:, L2 - 1:L2]])
        nb = (torch.cat([new[0], k2[:, L2 - 1:L2]]), torch.cat([new[1], v2[:, L2 - 1:L2]]))
        lensb = torch.tensor([t, L2 - 1], dtype=torch.int32, device="cuda")
        batched = _call(samebits.attention_with_kvcache, qb, kcb, vcb, *nb, cache_seqlens=lensb, block_table=tb,
                        causal=True, return_lse=True)
        assert torch.equal(batched[0][0], outs["force"][0][0]) and torch.equal(batched[1][0], outs["force"][1][0])
        # negative control: one visible key of the last split, sign flipped, folded
        key = (t // 1024) * 1024 + 5
        kc.view(torch.int16)[table[0, key // page].long(), key % page, 1, 3] ^= -32768
        monkeypatch.setenv("SAMEBITS_DECODE_FOLD", "force")
        flipped = samebits.attention_with_kvcache(q[:, t:t + 1], kc, vc, *new, cache_seqlens=lens, block_table=table,
                                                  causal=True)
        monkeypatch.delenv("SAMEBITS_DECODE_FOLD")
        assert not torch.equal(flipped, outs["force"][0])


def test_decode_walk_equals_combine(monkeypatch):
    # every split of a tile walked and folded in one CTA
    # (SAMEBITS_DECODE_WALK=force; the default rule walks only grids of 264
    # tiles or more) gives the bits of the combine kernel (walk 0, fold 0)
    # and of the forward row, out and lse, with 3 and 7 splits, for a
    # speculative verify of 3 rows and under a sliding window; flipping the
    # sign bit of one visible key in the row's last split changes the
    # walked output
    page, hk = 64, 2
    monkeypatch.setenv("SAMEBITS_DECODE_FOLD", "0")
    for L, t, nq, window in ((2600, 2399, 1, None), (7000, 6811, 1, None), (7000, 6811, 3, None),
                             (7000, 6811, 1, (3000, 0))):
        g = 8 if nq == 1 else 4  # the walk runs where a tile is <= 16 packed rows (the mma consumer)
        q, k, v = _qkv(1, L, hk * g, hk, 128, seed=L + nq)
        kw = {"window_size": window} if window else {}
        prefill = _call(samebits.attention, q, k, v, causal=True, **kw)
        pages, table, kc, vc = _scattered_cache(k, v, L, t, page)
        lens = torch.tensor([t], dtype=torch.int32, device="cuda")
        new = (k[:, t:t + nq], v[:, t:t + nq])
        outs = {}
        for walk in ("force", "0"):
            monkeypatch.setenv("SAMEBITS_DECODE_WALK", walk)
            outs[walk] = _call(samebits.attention_with_kvcache, q[:, t:t + nq], kc, vc, *new, cache_seqlens=lens,
                               block_table=table, causal=True, return_lse=True, **kw)
        assert torch.equal(outs["force"][0][0], prefill[0, t:t + nq])
        assert all(torch.equal(a, b) for a, b in zip(outs["force"], outs["0"]))
        if nq == 1 and window is None:  # negative control: one visible key of the last split, sign flipped
            key = (t // 1024) * 1024 + 5
            kc.view(torch.int16)[table[0, key // page].long(), key % page, 1, 3] ^= -32768
            monkeypatch.setenv("SAMEBITS_DECODE_WALK", "force")
            flipped = samebits.attention_with_kvcache(q[:, t:t + nq], kc, vc, *new, cache_seqlens=lens,
                                                      block_table=table, causal=True)
            assert not torch.equal(flipped, outs["force"][0])
    monkeypatch.delenv("SAMEBITS_DECODE_WALK")


@pytest.mark.parametrize("d", [128, 256])
def test_decode_combine_column_parts_equal(monkeypatch, d):
    # the combine with each row's columns cut into 2 or 4 CTAs
    # (SAMEBITS_DECODE_COMBINE_PARTS; the rule cuts rows of >= 16 splits)
    # gives the bits of one CTA a row and of the forward row, out and lse,
    # at 20 splits (plus a partial one) and at 3 under a window; flipping
    # the sign bit of one visible key changes the output
    page, hk, g = 64, 2, 8
    monkeypatch.setenv("SAMEBITS_DECODE_FOLD", "0")
    monkeypatch.setenv("SAMEBITS_DECODE_WALK", "0")
    for L, t, window in ((21000, 20599, None), (7000, 6811, (2500, 0))):
        q, k, v = _qkv(1, L, hk * g, hk, d, seed=L + d)
        kw = {"window_size": window} if window else {}
        prefill = _call(samebits.attention, q, k, v, causal=True, **kw)
        pages, table, kc, vc = _scattered_cache(k, v, L, t, page)
        lens = torch.tensor([t], dtype=torch.int32, device="cuda")
        new = (k[:, t:t + 1], v[:, t:t + 1])
        outs = {}
        for parts in ("1", "2", "4"):
            monkeypatch.setenv("SAMEBITS_DECODE_COMBINE_PARTS", parts)
            outs[parts] = _call(samebits.attention_with_kvcache, q[:, t:t + 1], kc, vc, *new, cache_seqlens=lens,
                                block_table=table, causal=True, return_lse=True, **kw)
        assert torch.equal(outs["1"][0][0], prefill[0, t:t + 1])
        for parts in ("2", "4"):
            assert all(torch.equal(a, b) for a, b in zip(outs[parts], outs["1"]))
        if window is None:  # negative control: one visible key of a middle split, sign flipped
            key = 5 * 1024 + 7
            kc.view(torch.int16)[table[0, key // page].long(), key % page, 1, 3] ^= -32768
            flipped = samebits.attention_with_kvcache(q[:, t:t + 1], kc, vc, *new, cache_seqlens=lens,
                                                      block_table=table, causal=True)
            assert not torch.equal(flipped, outs["4"][0])
    monkeypatch.delenv("SAMEBITS_DECODE_COMBINE_PARTS")


def test_backward_runs_and_is_deterministic():
    q, k, v = (t.requires_grad_() for t in _qkv(2, 257, 4, 2, 128))
    dout = torch.randn_like(q)
    out = _call(samebits.attention, q, k, v, causal=True)
    g1 = _call(torch.autograd.grad, out, (q, k, v), dout)
    g2 = torch.autograd.grad(samebits.attention(q, k, v, causal=True), (q, k, v), dout)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2))


@pytest.mark.parametrize("case", ["causal_lq_gt_lk", "window", "d256_gqa", "varlen", "varlen_unchecked"])
def test_backward_writes_every_gradient_element(case):
    """dq, dk, dv come from torch.empty (no zero fill), for dense and packed
    batches, with the value checks on or off: the kernels must write every
    element. The caching allocator is poisoned with NaN blocks of the
    gradients' sizes first, and the gradients must equal those of a run on
    clean memory. Cases with rows that see no key (Lq > Lk under causal),
    keys no row sees (a window), and a packed batch of odd lengths (also
    with set_value_checks(False)). Negative control: the poisoned blocks do
    come back from torch.empty."""
    D, Lq, Lk, H, Hk, kw = 128, 300, 200, 4, 2, dict(causal=True)
    if case == "window":
        Lq, Lk, kw = 257, 257, dict(window_size=(16, 3))
    if case == "d256_gqa":
        D, Lq, Lk, H, Hk, kw = 256, 130, 190, 8, 2, dict(causal=True)
    q = _qkv(2, Lq, H, H, D, seed=5)[0]
    k, v = _qkv(2, Lk, Hk, Hk, D, seed=6)[1:]
    fn = samebits.attention
    if case.startswith("varlen"):
        lens = [77, 1, 300, 129]
        cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device="cuda")
        q = _qkv(1, sum(lens), H, H, D, seed=5)[0][0]
        k, v = (t[0] for t in _qkv(1, sum(lens), Hk, Hk, D, seed=6)[1:])
        fn = lambda q, k, v, **kw: samebits.attention_varlen(q, k, v, cu, cu, **kw)
    dout = torch.randn_like(q)

    def grads():
        qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
        out = _call(fn, qg, kg, vg, **kw)
        return torch.autograd.grad(out, (qg, kg, vg), dout)

    clean = grads()
    torch.cuda.synchronize()

    def poison():
        blocks = [torch.full_like(t, float("nan")) for t in (q, k, v) for _ in range(4)]
        torch.cuda.synchronize()
        del blocks

    poison()
    probe = torch.empty_like(q)
    assert torch.isnan(probe).all()  # negative control: empty hands back a poisoned block
    del probe
    poison()
    samebits.set_value_checks(case != "varlen_unchecked")
    try:
        dirty = grads()
    finally:
        samebits.set_value_checks(True)
    assert all(not torch.isnan(g).any() for g in dirty)
    assert all(torch.equal(a, b) for a, b in zip(clean, dirty))


def test_compiled_training_step_equals_eager():
    """Issue 4, item 4: a torch.compile'd training step (samebits attention
    forward + backward inside a transformer block, then AdamW) gives the
    gradients and weights of the eager step bit for bit. Negative control:
    the same step from an input one ulp away gives other gradients."""
    from test_compile import Block
    torch._dynamo.reset()

    def step(block, x, g, compiled):
        opt = torch.optim.AdamW(block.parameters(), lr=1e-3, foreach=False, fused=False)
        f = torch.compile(block, fullgraph=True) if compiled else block
        out = f(x)
        out.backward(g)
        grads = [p.grad.clone() for p in block.parameters()]
        opt.step()
        return grads + [p.detach().clone() for p in block.parameters()]

    torch.manual_seed(0)
    base = Block(dim=256, heads=4, kv_heads=2).cuda().to(torch.bfloat16)
    x = torch.randn(2, 300, 256, device="cuda", dtype=torch.bfloat16)
    g = torch.randn_like(x)
    import copy
    eager = _call(step, copy.deepcopy(base), x, g, False)
    compiled = step(copy.deepcopy(base), x, g, True)
    assert all(torch.equal(a, b) for a, b in zip(eager, compiled))
    x2 = x.clone()
    x2.view(torch.int16).view(-1)[12345] += 1  # one bf16 ulp
    assert not torch.equal(x2, x)
    other = step(copy.deepcopy(base), x2, g, False)
    assert not all(torch.equal(a, b) for a, b in zip(eager, other))
    torch._dynamo.reset()


# Every entry of the GEMM tile table (src/cuda/dense/gemm_tile_configs.h;
# the same list as bench/bench_dense.py's GEMM_TILES), forced through
# SAMEBITS_GEMM_TILE: the bits of the default choice, for rows alone and in a
# batch. Shapes with partial M, N and K tiles, M = 1 and 300 (the second CTA
# of a 2-CTA cluster past M) and N = 520 (a multicast B half past N).
GEMM_TILES = ["64x32", "64x64", "64x128", "64x256", "128x128", "128x256", "64x128c2", "128x256m2", "128x128m2",
              "128x128pp", "128x128ppm2", "16x32s", "16x64s", "32x64s", "192x128", "128x224", "128x192", "128x160",
              "192x192", "256x160", "128x96", "192x192w3", "192x128w3", "128x168", "64x96", "16x112s"]
# The measurement entries (gemm_tile_configs.h, kGemmResearchCfg): built
# only with -DSAMEBITS_GEMM_RESEARCH_TILES=ON. Their checks run where the
# library has them and are skipped where it does not (the default build).
GEMM_RESEARCH_TILES = {"64x256", "128x256m2", "128x128m2", "128x128pp", "128x128ppm2", "32x64s", "192x128", "192x192"}


def _gemm_research_tile_built(tile, monkeypatch):
    from samebits import dense as D

    x = torch.zeros(1, 64, device="cuda", dtype=torch.bfloat16)
    with monkeypatch.context() as m:
        m.setenv("SAMEBITS_GEMM_TILE", tile)
        try:
            D.linear(x, x)
            return True
        except NotImplementedError as e:
            assert "SAMEBITS_GEMM_RESEARCH_TILES" in str(e), e
            return False


def _require_gemm_tile(tile, monkeypatch):
    if tile in GEMM_RESEARCH_TILES and not _gemm_research_tile_built(tile, monkeypatch):
        pytest.skip(f"GEMM entry {tile}: a measurement entry this build leaves out")


# Forcing a measurement entry the library was built without is an error that
# names the build option, never a silent fall back to the rule's choice; the
# rule's entries are always there. (With -DSAMEBITS_GEMM_RESEARCH_TILES=ON
# every entry runs.)
def test_gemm_research_entries_are_built_or_refused(monkeypatch):
    from samebits import dense as D

    built = {t: _gemm_research_tile_built(t, monkeypatch) for t in sorted(GEMM_RESEARCH_TILES)}
    assert len(set(built.values())) == 1, built  # one build option decides all of them
    x = torch.randn(8, 64, device="cuda", dtype=torch.bfloat16)
    for tile in GEMM_TILES:
        if tile in GEMM_RESEARCH_TILES:
            continue
        monkeypatch.setenv("SAMEBITS_GEMM_TILE", tile)
        D.linear(x, x)  # never refused
    if not built["128x128pp"]:
        monkeypatch.setenv("SAMEBITS_GEMM_TILE", "128x128pp")
        with pytest.raises(NotImplementedError, match="SAMEBITS_GEMM_RESEARCH_TILES=ON"):
            D.linear(x, x)


@pytest.mark.parametrize("tile", GEMM_TILES)
def test_gemm_tile_entry_gives_default_bits(tile, monkeypatch):
    from samebits import dense as D

    _require_gemm_tile(tile, monkeypatch)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(605, 1000, generator=g).to(torch.bfloat16).cuda()
    w = (torch.randn(520, 1000, generator=g) / 32).to(torch.bfloat16).cuda()
    bias = torch.randn(520, generator=g).to(torch.bfloat16).cuda()
    full = D.linear(x, w, bias)
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", tile)
    for M in (1, 7, 300, 600):
        for off in (0, 5):
            assert torch.equal(D.linear(x[off:off + M], w, bias), full[off:off + M]), (tile, M, off)


# An in-place addmm through the C ABI (out = bias, a full m x n matrix)
# equals the out-of-place one bit for bit. The GEMM moves a part-empty last
# tile back inside the operand, computing the rows it shares with the tile
# before twice; that would re-read bias rows already overwritten, so the
# launcher keeps the plain tiles where out and bias share memory. M = 288
# and N = 520 leave the last 128-row and 96..256-column tiles part-empty.
# The check can fail: with a library without the guard, 2 of the 4 cases
# failed on an H100 (elements in columns shared by a moved last tile).
@pytest.mark.parametrize("tile", [None, "128x96", "128x256", "64x128"])
def test_gemm_in_place_bias_equals_out_of_place(tile, monkeypatch):
    import ctypes

    from samebits import _lib
    from samebits import dense as D

    if tile:
        monkeypatch.setenv("SAMEBITS_GEMM_TILE", tile)
    g = torch.Generator().manual_seed(17)
    m, n, k = 288, 520, 256
    a = torch.randn(m, k, generator=g).to(torch.bfloat16).cuda()
    w = (torch.randn(n, k, generator=g) / 16).to(torch.bfloat16).cuda()
    c = torch.randn(m, n, generator=g).to(torch.bfloat16).cuda()
    ref = D.addmm(c, a, w.t(), beta=0.5, alpha=2.0)
    out = c.clone()
    p = D.SbGemmParams()
    p.dtype = p.bias_dtype = p.out_dtype = D._dt(torch.bfloat16)
    p.device, p.stream = D._device(a)
    p.batch, p.m, p.n, p.k = 1, m, n, k
    p.a, p.a_batch_stride, p.a_row_stride = a.data_ptr(), 0, k
    p.b, p.b_layout, p.b_row_stride, p.b_batch_stride = w.data_ptr(), 0, k, 0  # SB_B_NK: w is (n, k)
    p.bias, p.bias_batch_stride, p.bias_row_stride = out.data_ptr(), 0, n
    p.alpha, p.beta = 2.0, 0.5
    p.out, p.out_batch_stride, p.out_row_stride = out.data_ptr(), m * n, n
    with D._cuda_guard(a):
        _lib.check(D._clib().sb_gemm(ctypes.byref(p)), "gemm")
    torch.cuda.synchronize()
    assert torch.equal(out, ref), (out != ref).nonzero()[:4]


# The small-M entries issue the k16 steps as mma.sync.m16n8k16 instead of
# wgmma: their bits must equal the wgmma entries' also on values whose
# exponents span most of the format (alignment and truncation inside a step
# would show there), in both 16-bit dtypes. (tests/cuda/
# experiment_mma_sync_vs_wgmma.cu compares the f32 accumulators themselves.)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("tile", ["16x32s", "16x64s", "32x64s", "16x112s"])
def test_gemm_mma_sync_entry_equals_wgmma_on_wide_values(tile, dtype, monkeypatch):
    from samebits import dense as D

    _require_gemm_tile(tile, monkeypatch)
    g = torch.Generator().manual_seed(11)
    lo, hi = (-24, 8) if dtype == torch.float16 else (-40, 40)  # fp16: subnormals; sums stay finite in f32

    def wide(*shape):
        e = torch.randint(lo, hi, shape, generator=g).to(torch.float32)
        s = torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0)
        return (s * (1 + torch.rand(shape, generator=g)) * torch.exp2(e)).to(dtype).cuda()

    x, w = wide(64, 1024), wide(96, 1024)
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", "64x32")
    ref = D.linear(x, w)
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", tile)
    for M in (1, 16, 64):
        assert torch.equal(D.linear(x[:M], w), ref[:M]), (tile, M)


# The entries with the staged epilogue (TileConfig kTmaStore): required
# through SAMEBITS_GEMM_EPILOGUE=staged (an error where it cannot run, so this
# test cannot pass on the direct path), their output equals the direct
# epilogue's bit for bit: bias, partial row and column blocks (N = 520 ends
# 8 columns into a 64-column block, which the TMA clips), fp16 and a batched
# bmm. Both staged forms: the columns past a fragment's last whole 64-column
# block (128x96, 128x160, 128x168, ...) through their own TMA store (the
# default) and straight from the accumulators (staged-rem-direct). The
# negative control: a changed input row changes that row's staged output,
# and only that row's.
GEMM_STAGED_TILES = ["128x128", "128x256", "128x256m2", "128x128m2", "192x128", "128x192", "128x224", "128x160", "192x192",
                     "256x160", "128x96", "192x192w3", "192x128w3", "128x168"]


def _gemm_epilogue_cases(g, dt, with_bias):
    """x (605 x 1000), w (520 x 1000), the bias (or None) and the calls the
    epilogue tests compare: linear at M = 1, 7, 300, 605 (partial row and
    column blocks: N = 520 ends 8 columns into a 64-column block) and a
    batched matmul with B in the (k, n) layout."""
    from samebits import dense as D

    x = torch.randn(605, 1000, generator=g).to(dt).cuda()
    w = (torch.randn(520, 1000, generator=g) / 32).to(dt).cuda()
    bias = torch.randn(520, generator=g).to(dt).cuda() if with_bias else None
    a = torch.randn(3, 77, 256, generator=g).to(dt).cuda()
    b = torch.randn(3, 256, 136, generator=g).to(dt).cuda()
    cases = [(lambda M=M: D.linear(x[:M], w, bias)) for M in (1, 7, 300, 605)] + [lambda: D.matmul(a, b)]
    return x, w, bias, cases


@pytest.mark.parametrize("tile", GEMM_STAGED_TILES)
def test_gemm_staged_epilogue_equals_direct(tile, monkeypatch):
    from samebits import dense as D

    _require_gemm_tile(tile, monkeypatch)
    g = torch.Generator().manual_seed(7)
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", tile)
    for dt in (torch.bfloat16, torch.float16):
        x, w, bias, cases = _gemm_epilogue_cases(g, dt, with_bias=True)
        monkeypatch.setenv("SAMEBITS_GEMM_EPILOGUE", "direct")
        ref = [f() for f in cases]
        for staged in ("staged-rem-direct", "staged"):
            monkeypatch.setenv("SAMEBITS_GEMM_EPILOGUE", staged)
            for i, f in enumerate(cases):
                assert torch.equal(f(), ref[i]), (tile, dt, staged, i)
        x2 = x.clone()
        x2[3, :64] += 0.5  # row 3 only
        y2 = D.linear(x2[:7], w, bias)
        assert not torch.equal(y2, ref[1]) and torch.equal(y2[:3], ref[1][:3])


# The epilogue instantiates one element loop per bias dtype (chosen once per
# tile): a bias of another dtype holding the same values gives the same bits,
# on a staged entry, a direct one (64x128, 128x128pp) and the default, with
# the 2-D bias of addmm too. Negative control: one changed bias element
# changes that column only.
@pytest.mark.parametrize("tile", ["128x256", "128x128pp", "64x128", ""])
def test_gemm_bias_dtypes_give_the_same_bits(tile, monkeypatch):
    from samebits import dense as D

    _require_gemm_tile(tile, monkeypatch)
    g = torch.Generator().manual_seed(11)
    if tile:
        monkeypatch.setenv("SAMEBITS_GEMM_TILE", tile)
    x = torch.randn(300, 512, generator=g).to(torch.bfloat16).cuda()
    w = (torch.randn(520, 512, generator=g) / 16).to(torch.bfloat16).cuda()
    b16 = (torch.randint(-64, 64, (520,), generator=g).float() / 8).to(torch.bfloat16).cuda()  # exact in f16 too
    ref = D.linear(x, w, b16)
    for other in (torch.float32, torch.float16):
        assert torch.equal(D.linear(x, w, b16.to(other)), ref), (tile, other)
    b2 = (torch.randint(-64, 64, (300, 520), generator=g).float() / 8).to(torch.bfloat16).cuda()
    ref2 = D.addmm(b2, x, w.t())
    assert torch.equal(D.addmm(b2.float(), x, w.t()), ref2), tile
    b_changed = b16.clone()
    b_changed[5] += 1.0
    y = D.linear(x, w, b_changed)
    assert not torch.equal(y[:, 5], ref[:, 5])
    keep = torch.ones(520, dtype=torch.bool, device="cuda")
    keep[5] = False
    assert torch.equal(y[:, keep], ref[:, keep])


# The lean kernels (each entry's kernel with only the common call's
# epilogue compiled in: no bias, the output in the operands' dtype, staged
# where the entry stages) give the generic kernel's bits, on partial row and
# column blocks, fp16 and bf16, and a batched bmm. SAMEBITS_GEMM_LEAN=require makes a call that
# cannot run the lean kernel an error, so the comparison cannot pass on the
# generic kernel twice. Negative control: a changed input row changes that
# row's output, and only that row's.
@pytest.mark.parametrize("tile", GEMM_STAGED_TILES + ["64x32", "64x64", "64x96", "64x128", "64x256", "64x128c2", "16x32s",
                                  "16x64s", "32x64s", "16x112s"])
def test_gemm_lean_kernel_equals_generic(tile, monkeypatch):
    from samebits import dense as D

    _require_gemm_tile(tile, monkeypatch)
    g = torch.Generator().manual_seed(13)
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", tile)
    for dt in (torch.bfloat16, torch.float16):
        x, w, _, cases = _gemm_epilogue_cases(g, dt, with_bias=False)
        monkeypatch.setenv("SAMEBITS_GEMM_LEAN", "0")
        ref = [f() for f in cases]
        monkeypatch.setenv("SAMEBITS_GEMM_EPILOGUE", "direct")
        assert all(torch.equal(f(), r) for f, r in zip(cases, ref)), (tile, dt, "generic staged != direct")
        monkeypatch.delenv("SAMEBITS_GEMM_EPILOGUE")
        monkeypatch.setenv("SAMEBITS_GEMM_LEAN", "require")
        for i, f in enumerate(cases):
            assert torch.equal(f(), ref[i]), (tile, dt, i)
        x2 = x.clone()
        x2[3, :64] += 0.5  # row 3 only
        y2 = D.linear(x2[:7], w)
        assert not torch.equal(y2, ref[1]) and torch.equal(y2[:3], ref[1][:3])
        monkeypatch.delenv("SAMEBITS_GEMM_LEAN")


# The calls the lean kernel does not take are refused under
# SAMEBITS_GEMM_LEAN=require (a bias, a ping-pong entry) and
# run the generic kernel otherwise; an unknown value is an error.
def test_gemm_lean_kernel_refused_where_it_cannot_run(monkeypatch):
    from samebits import dense as D

    pp_built = _gemm_research_tile_built("128x128pp", monkeypatch)
    x = torch.randn(8, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(128, 64, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(128, device="cuda", dtype=torch.bfloat16)
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", "128x256")
    ref = D.linear(x, w, bias)
    monkeypatch.setenv("SAMEBITS_GEMM_LEAN", "require")
    D.linear(x, w)
    with pytest.raises(ValueError, match="lean kernel"):
        D.linear(x, w, bias)
    if pp_built:  # the ping-pong entries have no lean kernel
        monkeypatch.setenv("SAMEBITS_GEMM_TILE", "128x128pp")
        with pytest.raises(ValueError, match="lean kernel"):
            D.linear(x, w)
    monkeypatch.setenv("SAMEBITS_GEMM_LEAN", "sideways")
    with pytest.raises(ValueError, match="SAMEBITS_GEMM_LEAN"):
        D.linear(x, w)
    monkeypatch.setenv("SAMEBITS_GEMM_LEAN", "0")
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", "128x256")
    assert torch.equal(D.linear(x, w, bias), ref)


def test_gemm_staged_epilogue_refused_where_it_cannot_run(monkeypatch):
    from samebits import dense as D

    x = torch.randn(8, 64, device="cuda", dtype=torch.bfloat16)
    monkeypatch.setenv("SAMEBITS_GEMM_EPILOGUE", "staged")
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", "128x256")
    with pytest.raises(ValueError, match="TMA store target"):
        D.linear(x, x[:7])  # N = 7: rows of 14 bytes
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", "64x32")
    with pytest.raises(ValueError, match="no staged epilogue"):
        D.linear(x, x)
    monkeypatch.setenv("SAMEBITS_GEMM_EPILOGUE", "sideways")
    with pytest.raises(ValueError, match="unknown epilogue"):
        D.linear(x, x)


def test_gemm_unknown_tile_entry_is_an_error(monkeypatch):
    from samebits import dense as D

    x = torch.randn(8, 64, device="cuda", dtype=torch.bfloat16)
    monkeypatch.setenv("SAMEBITS_GEMM_TILE", "no_such_tile")
    with pytest.raises(ValueError, match="unknown tile entry"):
        D.linear(x, x)


# RMSNorm dx + dw: the fused kernel with the fold inline (a cooperative
# launch, where every 32-row chunk has a resident CTA: M = 3000, 4096, 4097,
# 4100 on an H100 or H200), the fused kernel with the fold kernel
# (SAMEBITS_RMSNORM_DW_FOLD=kernel; the default above the resident CTAs: M =
# 5000, 40000) and the split kernels must give the same bits; 40000 folds
# over 10 rounds; 16384 columns re-read the stage after the row sum, 3000
# columns leave the last slot of a row part-empty. Also under CUDA-graph
# replay. Negative control: one changed dy element changes dw and only its
# own row of dx.
DW_LAUNCHES = ({"SAMEBITS_RMSNORM_DW_FOLD": "kernel"}, {"SAMEBITS_RMSNORM_DW_PATH": "split"})


@pytest.mark.parametrize("M,N,dtype,wdtype", [(4096, 4096, torch.bfloat16, torch.bfloat16),
                                              (3000, 8192, torch.bfloat16, torch.bfloat16),
                                              (4097, 2048, torch.float16, torch.float16),
                                              (4096, 16384, torch.bfloat16, torch.bfloat16),
                                              (4100, 3000, torch.bfloat16, torch.bfloat16),
                                              (5000, 4096, torch.bfloat16, torch.bfloat16),
                                              (40000, 1024, torch.bfloat16, torch.float32)])
def test_rmsnorm_dw_inline_fold_equals_fold_kernel_and_split(M, N, dtype, wdtype, monkeypatch):
    from samebits import dense as D

    g = torch.Generator().manual_seed(11)
    x = torch.randn(M, N, generator=g).to(dtype).cuda()
    dy = torch.randn(M, N, generator=g).to(dtype).cuda()
    w = (1 + torch.randn(N, generator=g) / 4).to(wdtype).cuda()
    rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)[2]
    for var in ("SAMEBITS_RMSNORM_DW_FOLD", "SAMEBITS_RMSNORM_DW_PATH"):
        monkeypatch.delenv(var, raising=False)
    dx, dw = D._rms_norm_bwd_op(dy, x, w, rstd, True)
    for env in DW_LAUNCHES:
        for var, val in env.items():
            monkeypatch.setenv(var, val)
        dx2, dw2 = D._rms_norm_bwd_op(dy, x, w, rstd, True)
        for var in env:
            monkeypatch.delenv(var)
        assert torch.equal(dx2, dx), env
        assert torch.equal(dw2, dw), env
    # CUDA-graph replay
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        D._rms_norm_bwd_op(dy, x, w, rstd, True)
        with torch.cuda.graph(graph, stream=s):
            gdx, gdw = D._rms_norm_bwd_op(dy, x, w, rstd, True)
    torch.cuda.current_stream().wait_stream(s)
    gdx.zero_()
    gdw.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(gdx, dx) and torch.equal(gdw, dw)
    # negative control
    dy_p = dy.clone()
    r = 3 * 32 + 5
    dy_p[r, 7] += 1
    dx3, dw3 = D._rms_norm_bwd_op(dy_p, x, w, rstd, True)
    assert not torch.equal(dw3, dw)
    changed = (dx3 != dx).any(dim=1).nonzero().flatten().tolist()
    assert changed == [r]


# The CUDA weight gradient follows the order docs/numerics_dense.md writes
# down, on every launch path (the fused kernel with the fold inline or as its
# own kernel, the split kernels): equal bit for bit to an fp32
# re-computation in that order on the CPU (numerics_ref.rmsnorm_dw_in_order, the
# check test_dense.py makes of the CPU backend). Negative control: the
# re-computation in chunks of 16 rows differs.
@pytest.mark.parametrize("M,N", [(513, 1024), (4096, 8192), (5000, 4096)])
def test_rmsnorm_dw_follows_the_documented_order(M, N, monkeypatch):
    from samebits import dense as D

    g = torch.Generator().manual_seed(M + N)
    x = (torch.randn(M, N, generator=g) * 2).to(torch.bfloat16).cuda()
    dy = torch.randn(M, N, generator=g).to(torch.bfloat16).cuda()
    w = (1 + torch.randn(N, generator=g) / 4).cuda()  # fp32: dw keeps the fp32 fold's bits
    rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)[2]
    ref = rmsnorm_dw_in_order(x, dy, rstd, torch.float32)
    assert not torch.equal(ref, rmsnorm_dw_in_order(x, dy, rstd, torch.float32, chunk=16))
    for env in ({}, {"SAMEBITS_RMSNORM_DW_PATH": "fused"}, *DW_LAUNCHES):
        for var in ("SAMEBITS_RMSNORM_DW_FOLD", "SAMEBITS_RMSNORM_DW_PATH"):
            monkeypatch.delenv(var, raising=False)
        for var, val in env.items():
            monkeypatch.setenv(var, val)
        _, dw = D._rms_norm_bwd_op(dy, x, w, rstd, True)
        assert torch.equal(dw.cpu(), ref), env


# The sm90 row ops follow docs/numerics_dense.md to the bit: sum and mean (in
# fp32), RMSNorm's rstd, y and dx (and, with a residual, h, rstd and y) equal
# a re-computation by the documented formulas and the 256-thread tree
# (numerics_ref.tree256_row_sums), for rows held in registers and rows
# re-read by the loop kernels (20000 columns), and dx of 4096 rows on every
# RMSNorm backward path. Negative control: the CPU's lane-16 order differs
# somewhere.
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_row_ops_follow_the_documented_tree(dtype, monkeypatch):
    from samebits import dense as D

    vec = 16 // torch.tensor([], dtype=dtype).element_size()
    other = False
    for M, N in ((5, 64), (5, 1000), (5, 4096), (5, 8192), (3, 20000), (4096, 8192)):
        g = torch.Generator().manual_seed(N + M)
        x = (torch.randn(M, N, generator=g) * 2).to(dtype).cuda()
        dy = torch.randn(M, N, generator=g).to(dtype).cuda()
        w = (1 + torch.randn(N, generator=g) / 4).to(dtype).cuda()
        want = row_ops_in_order(lambda t: tree256_row_sums(t, vec), x, w, dy, 1e-6)
        y, _, rstd = D._rmsnorm_fwd_impl(x, None, w, 1e-6)
        got = {"sum": D.reduce_rows(x, False, torch.float32), "mean": D.reduce_rows(x, True, torch.float32),
               "rstd": rstd, "y": y}
        for env in ({}, {"SAMEBITS_RMSNORM_DW_PATH": "fused"}, {"SAMEBITS_RMSNORM_DW_PATH": "split"}):
            for var in ("SAMEBITS_RMSNORM_DW_FOLD", "SAMEBITS_RMSNORM_DW_PATH"):
                monkeypatch.delenv(var, raising=False)
            for var, val in env.items():
                monkeypatch.setenv(var, val)
            got[f"dx {env}"] = D._rms_norm_bwd_op(dy, x, w, rstd, True)[0]
            got[f"dx no dw {env}"] = D._rms_norm_bwd_op(dy, x, w, rstd, False)[0]
        for k, v in got.items():
            assert torch.equal(v.cpu(), want[k.split(" ")[0]]), (k, M, N)
        r = torch.randn(M, N, generator=g).to(dtype).cuda()  # add + RMSNorm: h = round(x + r) normalized
        want_r = row_ops_in_order(lambda t: tree256_row_sums(t, vec), x, w, dy, 1e-6, residual=r)
        y, h, rstd = D._rmsnorm_fwd_impl(x, r, w, 1e-6)
        for k, v in (("h", h), ("rstd", rstd), ("y", y)):
            assert torch.equal(v.cpu(), want_r[k]), (k, "residual", M, N)
        alt = row_ops_in_order(lane16_row_sums, x, w, dy, 1e-6)
        other |= any(not torch.equal(got[k].cpu(), alt[k]) for k in ("sum", "mean", "rstd"))
    assert other
