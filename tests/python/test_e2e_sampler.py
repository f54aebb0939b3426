"""End to end, part 2: the continuous-batching sampler over a paged KV cache,
reproducible sampling, and sampler == trainer log-probabilities bit for bit."""
import random

import torch

from samebits.models import (CausalLM, ModelConfig, PageAllocator, Request, Rollout, Sampler, compare_logprobs,
                             token_logprobs)
from samebits.models.sampling import choose, uniform

CFG = ModelConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256)
_MODEL = {}


def model(stock=False):
    if stock not in _MODEL:
        _MODEL[stock] = CausalLM(CFG, stock=stock).init_weights(11)
    return _MODEL[stock]


def traffic(n, seed, max_prompt=20, max_new=10, spread=6):
    rng = random.Random(seed)
    return [Request(1000 + i, [rng.randrange(128) for _ in range(rng.randrange(1, max_prompt))],
                    rng.randrange(1, max_new), seed=rng.choice([None, rng.randrange(2**31)]),
                    arrival=rng.randrange(spread)) for i in range(n)]


def serve(reqs, stock=False, **kw):
    kw = {"num_pages": 128, "page_size": 8, "prefill_chunk": 7, "max_batch_tokens": 40, **kw}
    return Sampler(model(stock), **kw).run(reqs)


def probe(seed=None, arrival=0):
    return Request(1, [5, 9, 2, 77, 31, 8, 8, 100, 3, 64, 12, 1, 90], 12, seed=seed, arrival=arrival)


def test_page_allocator():
    a = PageAllocator(8)
    x = a.allocate(3)
    y = a.allocate(2)
    assert len(set(x + y)) == 5 and a.num_free == 3
    a.release(x)
    assert a.num_free == 6 and set(a.allocate(3)) == set(x)
    try:
        a.allocate(4)
        raise AssertionError("expected MemoryError")
    except MemoryError:
        pass


def test_sampler_equals_trainer_bitwise():
    done = serve(traffic(16, seed=1))
    ro = [Rollout(r.prompt, r.tokens, r.logprobs) for r in done.values()]
    random.Random(0).shuffle(ro)  # trainer packs in another order
    with torch.no_grad():
        lp = token_logprobs(model(), ro)
    c = compare_logprobs(torch.tensor([x for r in ro for x in r.logprobs]), lp)
    assert c["tokens"] > 50 and c["mismatches"] == 0 and c["kl"] == 0.0


def test_sampler_equals_trainer_with_grad():
    """The training forward (autograd on) computes the same bits as the no-grad sampler."""
    done = serve(traffic(6, seed=2))
    ro = [Rollout(r.prompt, r.tokens, r.logprobs) for r in done.values()]
    lp = token_logprobs(model(), ro)
    assert lp.requires_grad
    assert compare_logprobs(torch.tensor([x for r in ro for x in r.logprobs]), lp.detach())["mismatches"] == 0


def test_continuous_batching_invariance():
    """One request alone == the same request amid changing traffic, other
    page sizes, prefill chunks and token budgets (greedy and seeded)."""
    for seed in (None, 4242):
        alone = serve([probe(seed)])[1]
        for t, kw in enumerate([{}, {"page_size": 4, "prefill_chunk": 3}, {"page_size": 16, "prefill_chunk": 64,
                                                                             "max_batch_tokens": 200}]):
            busy = serve(traffic(12, seed=10 + t) + [probe(seed, arrival=2 + t)], **kw)[1]
            assert busy.tokens == alone.tokens
            assert torch.equal(torch.tensor(busy.logprobs), torch.tensor(alone.logprobs))


def test_seeded_sampling_reproducible():
    a = serve([probe(7)] + traffic(5, seed=3))[1]
    b = serve([probe(7)] + traffic(9, seed=4))[1]
    c = serve([probe(8)])[1]
    assert a.tokens == b.tokens and a.logprobs == b.logprobs
    assert c.tokens != a.tokens  # another seed draws another completion


def test_noise_is_a_function_of_seed_and_position():
    u = uniform([1, 2, 1], [5, 5, 5], 1000, "cpu")
    assert torch.equal(u[0], u[2]) and not torch.equal(u[0], u[1])
    assert float(u.min()) > 0 and float(u.max()) < 1
    assert abs(float(u.mean()) - 0.5) < 0.03
    row = torch.log_softmax(torch.randn(1, 50, generator=torch.Generator().manual_seed(0)), -1)
    lp = row.expand(3, 50).contiguous()
    t = choose(lp, [None, 3, 3], [1.0, 1.0, 1.0], [4, 4, 4])
    assert int(t[0]) == int(row.argmax()) and int(t[1]) == int(t[2])


def test_stock_sampler_runs():
    """The negative control serves the same traffic (its bits may differ)."""
    done = serve(traffic(6, seed=5), stock=True)
    assert all(len(r.tokens) == r.max_new_tokens for r in done.values())
