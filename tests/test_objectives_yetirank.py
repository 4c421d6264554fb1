"""YetiRank (customobj/objectives/yetirank.py) through customobj/objectives/_sampled_pairs_kernels.py:
the sampled pairs against a slow Python loop over the same noise, finite differences within a
round, determinism per seed and round whatever the thread count, the expected pair weights,
degenerate queries, bad options, and a short LightGBM / XGBoost / TreeBooster training run."""
import math

import numpy as np
import pytest

from _peer_cases import LABELS, SIZES, check_degenerate_queries, check_derivatives, rounds_per_thread_count, scores, training_improves

from customobj import YetiRank
from customobj.objectives._noise import query_stream, splitmix_uniform


def reference_weights(s, y, sizes, permutations, decay, seed, rnd, weight=None):
    """``{(winner, loser): weight}`` of one round, CatBoost's loop written out in Python."""
    w = np.ones(s.size) if weight is None else np.asarray(weight, float)
    out = {}
    lo = 0
    for q, n in enumerate(sizes):
        rows = list(range(lo, lo + n))
        lo += n
        if n < 2:
            continue
        state = query_stream(seed, rnd, q)
        wq = w[rows].mean()
        for _ in range(permutations):
            noisy = []
            for t in rows:
                u, state = splitmix_uniform(np.uint64(state))  # a Python int above 2**63 would not pass
                noisy.append(s[t] + math.log(u / (1.000001 - u)))
            order = [rows[k] for k in sorted(range(n), key=lambda k: (-noisy[k], k))]
            for r in range(1, n):
                a, b = order[r - 1], order[r]
                if y[a] == y[b]:
                    continue
                if y[a] < y[b]:
                    a, b = b, a
                out[(a, b)] = out.get((a, b), 0.0) + 0.15 * decay ** (r - 1) * abs(y[a] - y[b]) * wq / permutations
    return out


def reference_grad(s, pairs):
    g = np.zeros(s.size)
    for (a, b), W in pairs.items():
        rho = 1.0 / (1.0 + math.exp(s[a] - s[b]))
        g[a] -= W * rho
        g[b] += W * rho
    return g


@pytest.mark.parametrize("permutations, decay, seed", [(10, 0.85, 0), (3, 0.5, 77), (1, 1.0, 2**40)])
def test_matches_reference_round_by_round(permutations, decay, seed):
    s = scores(9)
    w = np.linspace(0.5, 2.0, s.size)
    obj = YetiRank(permutations=permutations, decay=decay, seed=seed)
    prep = obj.prepare(LABELS, SIZES, w)
    for rnd in range(3):
        got = obj.grad_hess_prepared(s, prep)[0]
        want = reference_grad(s, reference_weights(s, LABELS, SIZES, permutations, decay, seed, rnd, w))
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)


def test_gradient_is_the_derivative_of_the_rounds_loss():
    check_derivatives(YetiRank(), scores(10))
    check_derivatives(YetiRank(permutations=4, seed=5), scores(11), weight=np.linspace(1.0, 2.0, LABELS.size))


def test_deterministic_per_seed_and_round_whatever_the_threads():
    s = scores(12)
    obj = YetiRank(seed=42)
    runs = rounds_per_thread_count(lambda prep: obj.grad_hess_couplings_prepared(s, prep), obj)
    for a, b in zip(*runs):
        assert all(np.array_equal(x, y) for x, y in zip(a[:2], b[:2]))
        assert all(np.array_equal(x, y) for x, y in zip(a[2], b[2]))
    assert not np.array_equal(runs[0][0][0], runs[0][1][0])  # a new round samples new pairs
    assert np.array_equal(runs[0][0][0], obj.grad_hess(s, LABELS, SIZES)[0])  # a fresh prepare is round 0
    assert not np.array_equal(runs[0][0][0], YetiRank(seed=43).grad_hess(s, LABELS, SIZES)[0])


def test_expected_weights():
    """One permutation per round, averaged over rounds, tends to the many-permutation weights."""
    s = np.array([0.4, 0.0, -0.3, 0.2])
    y = np.array([2.0, 0.0, 1.0, 1.0])
    one = YetiRank(permutations=1, seed=3)
    prep = one.prepare(y, [4])
    mean = np.mean([one.grad_hess_prepared(s, prep)[0] for _ in range(4000)], axis=0)
    many = YetiRank(permutations=4000, seed=8).grad_hess(s, y, [4])[0]
    np.testing.assert_allclose(mean, many, atol=4e-3)
    # two rows: the better-labelled row is first with probability P(s_0 + L_0 > s_1 + L_1), L logistic
    g = YetiRank(permutations=1, seed=0)
    prep = g.prepare([1.0, 0.0], [2])
    got = np.mean([g.grad_hess_prepared(np.zeros(2), prep)[0][0] for _ in range(200)])
    np.testing.assert_allclose(got, -0.15 * 0.5, rtol=1e-12)  # neighbours in every order: weight 0.15


def test_degenerate_queries():
    check_degenerate_queries(YetiRank())


@pytest.mark.parametrize("options, error", [
    ({"permutations": 0}, ValueError), ({"decay": 0.0}, ValueError), ({"decay": 1.5}, ValueError),
    ({"seed": -3}, ValueError), ({"permutations": 2.0}, TypeError),
])
def test_bad_options(options, error):
    with pytest.raises(error, match=next(iter(options))):
        YetiRank(**options)


@pytest.mark.parametrize("library", ["lightgbm", "xgboost", "ole"])
def test_training_improves_ranking(library):
    training_improves(YetiRank(), library)


def test_cost_is_the_loss_at_the_rounds_own_pairs():
    """``_grad_hess_loss`` (MultiObjective's per-label cost): one sampling for a new round, the gradients'
    bits of that round's ``grad_hess`` and its loss at that round's pairs: ``loss`` after the round to
    rounding (it adds the pairs in one running sum, the cost query by query), round after round."""
    s = scores(12)
    w = np.linspace(0.5, 2.0, s.size)
    obj = YetiRank(permutations=4, seed=9)
    pc, pg = obj.prepare(LABELS, SIZES, w), obj.prepare(LABELS, SIZES, w)
    costs = []
    for _ in range(3):
        g, h = np.zeros(s.size), np.zeros(s.size)
        costs.append(obj._grad_hess_loss(s, pc, pc.state_for(obj), g, h))
        want_g, want_h = obj.grad_hess_prepared(s, pg)
        np.testing.assert_array_equal(g, want_g)
        np.testing.assert_array_equal(h, want_h)
        assert costs[-1] == pytest.approx(obj.loss_prepared(s, pg), rel=1e-13, abs=0)
        assert costs[-1] == pytest.approx(obj.loss_prepared(s, pc), rel=1e-13, abs=0)  # the round's pairs
    assert len(set(costs)) == 3  # each round its own pairs
