"""The seeded noise of the stochastic objectives (customobj/objectives/_noise.py): LightGBM's
generator and its jump-ahead, the SplitMix64 streams, and the round counter."""
import numpy as np

from customobj.objectives._noise import (RoundCounter, lcg_next, lcg_skip, lightgbm_uniform, query_stream,
                                         splitmix_uniform)


def test_lcg_is_lightgbms_and_skips_ahead():
    x = 5  # LightGBM's Random(5): x = 214013 x + 2531011 mod 2^32, NextFloat = ((x >> 16) & 0x7FFF) / 32768
    want = []
    for _ in range(300):
        x = (214013 * x + 2531011) & 0xFFFFFFFF
        want.append(((x >> 16) & 0x7FFF) / 32768.0)
    state = np.uint64(5)
    got = []
    for _ in range(300):
        state = lcg_next(np.uint64(state))
        got.append(lightgbm_uniform(np.uint64(state)))
    assert got == want
    for k in (0, 1, 2, 7, 299, 300):
        stepped = np.uint64(5)
        for _ in range(k):
            stepped = np.uint64(lcg_next(stepped))
        assert lcg_skip(np.uint64(5), k) == stepped
    assert lcg_skip(np.uint64(0xFFFFFFFF), 10**12) < 2**32


def test_splitmix_streams_are_uniform_and_distinct():
    starts = {query_stream(s, r, q) for s in range(3) for r in range(3) for q in range(3)}
    assert len(starts) == 27
    state = np.uint64(query_stream(1, 0, 0))
    draws = []
    for _ in range(20000):
        u, state = splitmix_uniform(np.uint64(state))
        draws.append(u)
    draws = np.array(draws)
    assert draws.min() > 0.0 and draws.max() < 1.0
    assert abs(draws.mean() - 0.5) < 0.01 and abs(draws.var() - 1 / 12) < 0.005
    assert query_stream(2**63 - 1, 2**40, 2**40) >= 0


def test_round_counter():
    rounds = RoundCounter()
    assert rounds.current == 0  # loss before any grad_hess uses round 0
    assert [rounds.advance() for _ in range(3)] == [0, 1, 2]
    assert rounds.current == 2


def test_splitmix_at_reads_any_draw_of_the_stream():
    # The GPU kernels read a query's k-th draw directly; it must be the k-th sequential draw.
    from customobj.objectives._noise import query_stream, splitmix_at, splitmix_uniform

    state = start = query_stream(7, 3, 11)
    for k in range(50):
        u, state = splitmix_uniform(np.uint64(state))  # as the kernels keep it: uint64
        assert splitmix_at(start, k) == u
