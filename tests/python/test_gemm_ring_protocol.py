"""A model of the sm90 GEMM's shared-memory ring protocol, run under random
interleavings (CPU only): the mbarrier semantics the kernel relies on (arrival
count, transaction bytes that may land before the expect_tx, parity waits),
the TMA producer with 2-CTA cluster multicast of B, consumer warps that
release stages on every CTA of the cluster, boxes past M / N that are neither
loaded nor counted, and the ping-pong consumers' order barriers.

It mirrors src/cuda/dense/gemm_mainloop_sm90_tma_wgmma.cuh and
gemm_kernel_sm90_tma_wgmma.cuh (produce_tile, consume_tile, release_stage and
the ping-pong loop) and must change with them. Checked: no deadlock, no
parity wait that passes on a phase two behind (ABA), no TMA write into a
stage a warp still reads, every read sees its own tile's data. Negative
controls: three mutations of the protocol (no turn-taking, a release on the
own CTA only, a skipped box still counted) must each be caught.
"""

import random

import pytest

class Bar:
    """An mbarrier: a phase completes when all `count` arrivals are in and the
    transaction bytes (expect_tx minus complete_tx, which may go negative when
    a peer's multicast lands first) are back at zero."""

    def __init__(self, count):
        self.count = count
        self.pending = count
        self.tx = 0
        self.phase = 0  # completed phases

    def _check(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def arrive(self):
        assert self.pending > 0
        self.pending -= 1
        self._check()

    def expect_tx(self, b):
        self.tx += b

    def complete_tx(self, b):
        self.tx -= b
        self._check()

    def try_wait(self, q):
        """The waiter wants phase q complete but, like mbarrier.try_wait.parity,
        only names its parity: passes whenever the phase in progress has the
        other parity. Passing while phase q is not complete is the ABA bug."""
        ok = (self.phase & 1) != (q & 1)
        if ok and not self.phase > q:
            raise AssertionError(f"ABA: parity wait for phase {q} passed at completed={self.phase}")
        return ok


def run(seed, C, S, tiles_per_cta, k_tiles, pp, a_live_fn, b_live_fn, warps=4, consumers=2, mut=()):
    rng = random.Random(seed)
    readers = 1 if pp else consumers
    ctas = []
    for r in range(C):
        ctas.append({
            "full": [Bar(1) for _ in range(S)],
            "empty": [Bar(warps * readers * C) for _ in range(S)],
            "order": [Bar(warps), Bar(warps)],
            "A": [None] * S, "B": [[None] * C for _ in range(S)],
            "reading": [set() for _ in range(S)],
        })
    A_BYTES, B_HALF = 2, 1
    events = []  # pending TMA completions: (cta, stage, region, tag, bar_cta)

    def producer(r):  # produce_tile: empty wait, arrive.expect_tx, A box, B slice multicast
        cta = ctas[r]
        it = 0
        for l in range(tiles_per_cta):
            a_live = a_live_fn(l, r)
            live = [b_live_fn(l, rr) for rr in range(C)]
            a_counted = a_live or "count_skipped_a" in mut
            nbytes = (A_BYTES if a_counted else 0) + B_HALF * sum(live) if C > 1 else A_BYTES + B_HALF
            for kb in range(k_tiles):
                s, q = it % S, it // S
                while not cta["empty"][s].try_wait((q - 1)):  # parity ^ 1 == phase q-1
                    yield
                cta["full"][s].expect_tx(nbytes)
                cta["full"][s].arrive()
                if C == 1 or a_live:
                    events.append((r, s, "A", (l, kb), r, A_BYTES))
                if C == 1:
                    events.append((r, s, ("B", 0), (l, kb), r, B_HALF))
                elif live[r]:
                    for dst in range(C):
                        events.append((dst, s, ("B", r), (l, kb), dst, B_HALF))
                it += 1
                yield

    def release(r, s, who):
        ctas[r]["reading"][s].discard(who)
        for dst in range(C):
            ctas[r if "release_own_cta_only" in mut else dst]["empty"][s].arrive()

    def consume(r, who, l, it):  # consume_tile: full wait, read, release the previous stage
        cta = ctas[r]
        prev = None
        for kb in range(k_tiles):
            s, q = it % S, it // S
            while not cta["full"][s].try_wait(q):
                yield
            # the read sees tile l's data in every live region
            if C == 1 or a_live_fn(l, r):
                assert cta["A"][s] == (l, kb), ("A", r, s, cta["A"][s], (l, kb))
            for rr in range(C if C > 1 else 1):
                if C == 1 or b_live_fn(l, rr):
                    assert cta["B"][s][rr] == (l, kb), ("B", r, s, rr, cta["B"][s][rr], (l, kb))
            cta["reading"][s].add(who)
            yield
            if prev is not None:
                release(r, prev, who)
            prev = s
            it += 1
            yield
        yield "loads_done"
        if prev is not None:
            release(r, prev, who)

    def consumer_warp(r, c, w):  # one consumer warp (lane 0 arrives), ping-pong turn-taking
        who = (c, w)
        it = 0
        for l in range(tiles_per_cta):
            if pp:
                if (l & 1) != c:
                    it += k_tiles
                    continue
                if l > 0 and "no_order_wait" not in mut:
                    q = (l - 2 + c) // 2
                    while not ctas[r]["order"][c].try_wait(q):
                        yield
            for x in consume(r, who, l, it):
                if x == "loads_done":
                    if pp:
                        ctas[r]["order"][c ^ 1].arrive()
                else:
                    yield
            it += k_tiles
            yield  # epilogue

    actors = []
    for r in range(C):
        actors.append(producer(r))
        for c in range(consumers):
            for w in range(warps):
                actors.append(consumer_warp(r, c, w))
    live_actors = list(actors)
    steps = 0
    while live_actors or events:
        steps += 1
        if steps > 200_000:
            raise AssertionError("deadlock (no progress)")
        if events and (not live_actors or rng.random() < 0.3):
            i = rng.randrange(len(events))
            dst, s, region, tag, bar_cta, nb = events.pop(i)
            cta = ctas[dst]
            assert not cta["reading"][s], ("write into a stage being read", dst, s, cta["reading"][s], tag)
            if region == "A":
                cta["A"][s] = tag
            else:
                cta["B"][s][region[1]] = tag
            ctas[bar_cta]["full"][s].complete_tx(nb)
            continue
        a = rng.choice(live_actors)
        try:
            next(a)
        except StopIteration:
            live_actors.remove(a)
            continue
    return True


def _random_case(seed, mut=()):
    rng = random.Random(seed)
    C = rng.choice([1, 2])
    pp = rng.choice([False, True])
    S = rng.choice([2, 3, 4, 7])
    tiles = rng.choice([1, 2, 3, 5, 8])
    k_tiles = rng.choice([0, 1, 2, 3, 5, 9, 16])
    dead_a = {(l, r) for l in range(tiles) for r in range(C) if C > 1 and r > 0 and rng.random() < 0.3}
    dead_b = {(l, r) for l in range(tiles) for r in range(C) if C > 1 and r > 0 and rng.random() < 0.3}
    run(seed, C, S, tiles, k_tiles, pp, lambda l, r: (l, r) not in dead_a, lambda l, r: (l, r) not in dead_b,
        warps=rng.choice([1, 2, 4]), mut=mut)


def test_ring_protocol_random_interleavings():
    for seed in range(1500):
        _random_case(seed)


@pytest.mark.parametrize("mut", ["no_order_wait", "release_own_cta_only", "count_skipped_a"])
def test_ring_protocol_mutations_are_caught(mut):
    with pytest.raises(AssertionError):
        for seed in range(1500):
            _random_case(seed, mut=(mut,))
