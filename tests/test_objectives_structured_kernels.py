"""StructuredDCG (customobj/objectives/structured_dcg.py) through its kernels
customobj/objectives/_structured_kernels.py: the exact assignment against brute force over
permutations and SciPy's assignment solver, the subgradient against finite differences, weights."""
import itertools

import numpy as np
import pytest

from _objective_cases import random_queries
from _oracles import fd_grad

from customobj import StructuredDCG


def brute_structured(s, y, k):
    """(loss, grad or None when the maximiser is not unique) over all injective top-k assignments."""
    n = len(s)
    m = min(k, n)
    G = 2.0 ** y - 1
    A = k - np.arange(m)
    D = 1.0 / np.log2(2.0 + np.arange(m))
    star = np.lexsort((np.arange(n), -s, -y))[:m]
    v_star = np.sum(s[star] * A - G[star] * D)
    vals = sorted(((np.sum(s[list(p)] * A - G[list(p)] * D), p) for p in itertools.permutations(range(n), m)),
                  reverse=True)
    loss = vals[0][0] - v_star
    grad = np.zeros(n)
    if loss < 1e-12:
        return 0.0, grad
    if len(vals) > 1 and vals[0][0] - vals[1][0] < 1e-9:
        return loss, None
    np.add.at(grad, list(vals[0][1]), A)
    np.add.at(grad, star, -A)
    return loss, grad


@pytest.mark.parametrize("k", [1, 2, 3])
def test_structured_dcg_matches_brute_force(k):
    rng = np.random.default_rng(k)
    checked = 0
    for _ in range(40):
        n = int(rng.integers(1, 7))
        y = rng.integers(0, 3, size=n).astype(float)
        s = rng.normal(scale=0.6, size=n)
        obj = StructuredDCG(k=k)
        want_loss, want_grad = brute_structured(s, y, k)
        assert obj.loss(s, y, [n]) == pytest.approx(want_loss, abs=1e-10)
        g, h = obj.grad_hess(s, y, [n])
        np.testing.assert_array_equal(h, np.ones(n))
        if want_grad is not None:
            np.testing.assert_allclose(g, want_grad, atol=1e-12)
            checked += 1
    assert checked > 20


def test_structured_dcg_grad_is_derivative_and_weights():
    rng = np.random.default_rng(2)
    s, y, sizes = random_queries(rng, n_queries=5, max_size=9)
    w = np.repeat(rng.uniform(0.5, 2.0, size=len(sizes)), sizes)  # per-query weights
    obj = StructuredDCG(k=4, hess=0.5)
    prep = obj.prepare(y, sizes, w)
    g, h = obj.grad_hess_prepared(s, prep)
    assert np.any(g != 0)
    np.testing.assert_allclose(g, fd_grad(lambda z: obj.loss_prepared(z, prep), s, 1e-7), atol=1e-6)
    np.testing.assert_allclose(h, 0.5 * w)
    total = sum(w[a] * StructuredDCG(k=4).loss(s[a:b], y[a:b], [b - a])
                for a, b in zip(np.cumsum(sizes) - sizes, np.cumsum(sizes)))
    assert obj.loss(s, y, sizes, w) == pytest.approx(total, rel=1e-12)
    assert obj.pairwise is False and obj.pair_couplings(s, y, sizes) is None


def test_structured_dcg_zero_when_scores_rank_perfectly_with_margin():
    y = np.array([2.0, 1.0, 0.0, 0.0])
    s = np.array([30.0, 20.0, 10.0, 0.0])  # margins dominate the DCG differences
    assert StructuredDCG(k=3).loss(s, y, [4]) == 0.0
    assert np.all(StructuredDCG(k=3).grad_hess(s, y, [4])[0] == 0.0)


def test_structured_dcg_matches_scipy_assignment_on_larger_queries():
    from scipy.optimize import linear_sum_assignment
    rng = np.random.default_rng(21)
    for trial in range(30):
        n = int(rng.integers(5, 60))
        k = int(rng.integers(1, 12))
        y = rng.choice(5, size=n, p=[0.5, 0.25, 0.13, 0.08, 0.04]).astype(float)
        s = rng.normal(scale=[0.1, 1.0, 5.0][trial % 3], size=n)
        m = min(k, n)
        A = k - np.arange(m)
        D = 1.0 / np.log2(2.0 + np.arange(m))
        G = 2.0 ** y - 1
        w = s[None, :] * A[:, None] - G[None, :] * D[:, None]
        r, c = linear_sum_assignment(w, maximize=True)
        star = np.lexsort((np.arange(n), -s, -y))[:m]
        want = max(w[r, c].sum() - np.sum(s[star] * A - G[star] * D), 0.0)
        assert StructuredDCG(k=k).loss(s, y, [n]) == pytest.approx(want, rel=1e-10, abs=1e-9)


def test_one_pass_cost_is_the_loss_from_the_gradients_assignments():
    """``_grad_hess_loss`` (MultiObjective's per-label cost): the gradients' and hessians' bits of ``grad_hess``
    and the loss's of ``loss`` (each query's from the gradient's assignment, added in query order), one pass."""
    rng = np.random.default_rng(7)
    s, y, sizes = random_queries(rng, n_queries=6, max_size=9)
    w = rng.uniform(0.5, 2.0, size=s.size)
    obj = StructuredDCG(k=3, hess=0.5)
    prep = obj.prepare(y, sizes, w)
    g, h = np.zeros(s.size), np.zeros(s.size)
    cost = obj._grad_hess_loss(3.0 * s, prep, prep.state_for(obj), g, h)
    want_g, want_h = obj.grad_hess_prepared(3.0 * s, prep)
    np.testing.assert_array_equal(g, want_g)
    np.testing.assert_array_equal(h, want_h)
    assert cost == obj.loss_prepared(3.0 * s, prep) and cost > 0
