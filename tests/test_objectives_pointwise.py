"""Pointwise objectives: finite differences, closed forms, label mapping, extreme scores, options.

Also the tests of the pure kernels customobj/objectives/_pointwise_kernels.py, through the objectives
that wrap them (customobj/objectives/pointwise.py)."""
import math

import numpy as np
import pytest
from scipy.special import log_softmax, softmax

import _oracles as oracles

from customobj.objectives import (
    Logistic, McRank, PreferencePairs, SquaredError, SquaredHinge, Sum,
)

RNG = np.random.default_rng(0)
N = 23
Y01 = RNG.integers(0, 2, N).astype(float)
YG = RNG.integers(0, 4, N).astype(float)  # grades for McRank / squared error
WEIGHT = RNG.uniform(0.2, 2.0, N)
SIZES = [5, 1, 7, 10]


def fd_grad(obj, s, y, **kw):
    return oracles.fd_grad(lambda z: obj.loss(z, y, **kw), s)


def fd_hess_diag(obj, s, y, **kw):
    return oracles.fd_diag(lambda z: obj.grad_hess(z, y, **kw)[0], s)


def hinge_safe_scores(seed):
    s = np.random.default_rng(seed).normal(scale=1.5, size=N)
    t = 2 * Y01 - 1
    near = np.abs(1 - t * s) < 1e-2
    s[near] += 0.1 * t[near]  # step away from the kink t s = 1
    return s


CASES = [
    (SquaredError(), YG), (Logistic(), Y01), (Logistic(sigma=2.5), Y01), (Logistic(balanced=True), Y01),
    (SquaredHinge(), Y01), (SquaredHinge(C=0.3), Y01),
]


@pytest.mark.parametrize("obj, y", CASES, ids=lambda v: repr(v) if not isinstance(v, np.ndarray) else "")
@pytest.mark.parametrize("weighted", [False, True])
def test_grad_hess_match_finite_differences(obj, y, weighted):
    kw = {"weight": WEIGHT} if weighted else {}
    s = hinge_safe_scores(1)
    g, h = obj.grad_hess(s, y, **kw)
    np.testing.assert_allclose(g, fd_grad(obj, s, y, **kw), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, fd_hess_diag(obj, s, y, **kw), rtol=1e-5, atol=1e-6)
    assert np.all(h >= 0)


def test_logistic_matches_burges_formulas():
    sigma = 1.7
    s = RNG.normal(size=N)
    t = 2 * Y01 - 1
    u = 2 * t * sigma / (1 + np.exp(2 * t * sigma * s))
    g, h = Logistic(sigma=sigma).grad_hess(s, Y01, weight=WEIGHT)
    np.testing.assert_allclose(g, -WEIGHT * u, rtol=1e-12)
    np.testing.assert_allclose(h, WEIGHT * np.abs(u) * (2 * sigma - np.abs(u)), rtol=1e-10)
    loss = np.sum(WEIGHT * np.log1p(np.exp(-2 * t * sigma * s)))
    assert Logistic(sigma=sigma).loss(s, Y01, weight=WEIGHT) == pytest.approx(loss, rel=1e-12)


def test_balanced_logistic_weights_by_class_counts_over_the_whole_data():
    s = RNG.normal(size=N)
    n_pos, n_neg = Y01.sum(), N - Y01.sum()
    rw = np.where(Y01 == 1, 1 / n_pos, 1 / n_neg) * WEIGHT
    gb, hb = Logistic(balanced=True).grad_hess(s, Y01, weight=WEIGHT)
    g, h = Logistic().grad_hess(s, Y01, weight=rw)
    np.testing.assert_allclose(gb, g, rtol=1e-12)
    np.testing.assert_allclose(hb, h, rtol=1e-12)
    # The group does not matter: counts are over all rows.
    np.testing.assert_allclose(Logistic(balanced=True).grad_hess(s, Y01, SIZES)[0],
                               Logistic(balanced=True).grad_hess(s, Y01)[0])
    # One class only: its rows get weight 1 / n.
    g1, _ = Logistic(balanced=True).grad_hess(s, np.ones(N))
    np.testing.assert_allclose(g1, Logistic().grad_hess(s, np.ones(N))[0] / N)


def test_squared_hinge_matches_chapelle_formulas():
    C = 0.7
    s = hinge_safe_scores(2)
    t = 2 * Y01 - 1
    m = np.maximum(0, 1 - t * s)
    g, h = SquaredHinge(C=C).grad_hess(s, Y01)
    np.testing.assert_allclose(g, -2 * C * t * m)
    np.testing.assert_array_equal(h, 2 * C * (t * s < 1))
    assert SquaredHinge(C=C).loss(s, Y01) == pytest.approx(np.sum(C * m * m))
    # At the kink the generalised hessian is 0 and the gradient continuous (0).
    g, h = SquaredHinge().grad_hess(np.array([1.0, -1.0]), np.array([1.0, 0.0]))
    assert np.all(g == 0) and np.all(h == 0)


@pytest.mark.parametrize("obj", [Logistic(), Logistic(balanced=True), SquaredHinge()], ids=repr)
def test_minus_one_plus_one_labels_equal_zero_one(obj):
    s = RNG.normal(size=N)
    pm = 2 * Y01 - 1
    for a, b in zip(obj.grad_hess(s, pm, weight=WEIGHT), obj.grad_hess(s, Y01, weight=WEIGHT)):
        np.testing.assert_array_equal(a, b)
    assert obj.loss(s, pm) == obj.loss(s, Y01)


@pytest.mark.parametrize("obj", [Logistic(), SquaredHinge()], ids=repr)
def test_non_binary_labels_raise(obj):
    with pytest.raises(ValueError, match="labels"):
        obj.grad_hess(np.zeros(3), [0, 1, 2])
    with pytest.raises(ValueError, match="labels"):
        obj.grad_hess(np.zeros(3), [-1, 0, 1])


@pytest.mark.parametrize("obj, y", [(Logistic(sigma=100.0), Y01), (Logistic(balanced=True), Y01),
                                    (SquaredHinge(), Y01), (McRank(n_classes=4), YG)], ids=repr)
@pytest.mark.parametrize("magnitude", [1e3, 1e6])
def test_finite_at_extreme_scores(obj, y, magnitude):
    shape = (N, 4) if isinstance(obj, McRank) else (N,)
    s = magnitude * np.random.default_rng(3).choice([-1.0, 1.0], shape)
    g, h = obj.grad_hess(s, y)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
    assert math.isfinite(obj.loss(s, y))


# --- McRank -------------------------------------------------------------------------------------------
def test_mcrank_matches_softmax_formulas():
    k = 4
    f = RNG.normal(scale=2.0, size=(N, k))
    obj = McRank(n_classes=k)
    assert obj.n_outputs == k and not obj.pairwise
    p = softmax(f, axis=1)
    onehot = np.eye(k)[YG.astype(int)]
    g, h = obj.grad_hess(f, YG, weight=WEIGHT)
    assert g.shape == h.shape == (N, k)
    np.testing.assert_allclose(g, WEIGHT[:, None] * (p - onehot), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h, WEIGHT[:, None] * p * (1 - p), rtol=1e-12, atol=1e-15)
    loss = -np.sum(WEIGHT * log_softmax(f, axis=1)[np.arange(N), YG.astype(int)])
    assert obj.loss(f, YG, weight=WEIGHT) == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(obj.predict_relevance(f), p @ np.arange(k), rtol=1e-12)


def test_mcrank_finite_differences():
    obj = McRank(n_classes=4)
    f = RNG.normal(size=(N, 4))
    g, h = obj.grad_hess(f, YG)
    np.testing.assert_allclose(g, fd_grad(obj, f, YG), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, fd_hess_diag(obj, f, YG), rtol=1e-5, atol=1e-6)


def test_mcrank_is_shift_invariant_and_stable():
    obj = McRank(n_classes=3)
    y = np.array([0.0, 1.0, 2.0])
    f = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-5.0, 1.0, 2.0]])
    g, h = obj.grad_hess(f, y)
    g2, h2 = obj.grad_hess(f + 1e6, y)
    np.testing.assert_allclose(g, g2, atol=1e-9)
    np.testing.assert_allclose(h, h2, atol=1e-9)
    assert obj.loss(f + 1e6, y) == pytest.approx(obj.loss(f, y), rel=1e-9)
    big = np.array([[1e6, 0.0, -1e6]])
    assert obj.predict_relevance(big)[0] == 0.0
    assert obj.loss(big, np.array([2.0])) == pytest.approx(2e6)


def test_mcrank_infers_n_classes_at_prepare():
    obj = McRank()
    assert obj.n_outputs is None
    obj.prepare(YG)
    assert obj.n_outputs == int(YG.max()) + 1
    assert repr(obj) == "McRank(n_classes=None)"
    with pytest.raises(ValueError, match="n_classes"):
        obj.prepare(np.array([0.0, 9.0]))
    binary = McRank()
    binary.prepare(np.zeros(4))
    assert binary.n_outputs == 2


def test_mcrank_bad_input():
    obj = McRank(n_classes=3)
    with pytest.raises(ValueError, match="n_classes"):
        obj.grad_hess(np.zeros((3, 3)), [0, 1, 3])
    with pytest.raises(ValueError, match="scores"):
        obj.grad_hess(np.zeros((3, 2)), [0, 1, 2])
    with pytest.raises(ValueError, match="scores"):
        obj.grad_hess(np.zeros(3), [0, 1, 2])
    with pytest.raises(ValueError, match="integer"):
        obj.grad_hess(np.zeros((2, 3)), [0, 1.5])
    with pytest.raises(ValueError, match="raw_scores"):
        obj.predict_relevance(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="n_outputs|different numbers of outputs"):
        McRank(n_classes=3) + SquaredError()


# --- composition and options ------------------------------------------------------------------------
def test_spam_style_composition_and_scaling():
    edges = np.array([[0, 3], [4, 9], [10, 2], [7, 8]])
    s = hinge_safe_scores(4)
    obj = SquaredHinge(C=2.0) + 0.5 * PreferencePairs(edges)
    assert isinstance(obj, Sum) and obj.pairwise and not obj.needs_group
    g, h = obj.grad_hess(s, Y01, weight=WEIGHT)
    g1, h1 = SquaredHinge(C=2.0).grad_hess(s, Y01, weight=WEIGHT)
    g2, h2 = PreferencePairs(edges).grad_hess(s, Y01, weight=WEIGHT)
    np.testing.assert_allclose(g, g1 + 0.5 * g2)
    np.testing.assert_allclose(h, h1 + 0.5 * h2)
    np.testing.assert_allclose(g, fd_grad(obj, s, Y01, weight=WEIGHT), rtol=1e-6, atol=1e-7)
    scaled = 3.0 * Logistic(sigma=0.5)
    np.testing.assert_allclose(scaled.grad_hess(s, Y01)[0], 3.0 * Logistic(sigma=0.5).grad_hess(s, Y01)[0])
    assert scaled.pair_couplings(s, Y01) is None


def test_pointwise_objectives_ignore_query_order():
    s = RNG.normal(size=N)
    perm = RNG.permutation(N)
    for obj, y in CASES:
        g, h = obj.grad_hess(s, y, weight=WEIGHT)
        gp, hp = obj.grad_hess(s[perm], y[perm], weight=WEIGHT[perm])
        np.testing.assert_allclose(gp, g[perm], rtol=1e-13)
        np.testing.assert_allclose(hp, h[perm], rtol=1e-13)


@pytest.mark.parametrize("make, match, exc", [
    (lambda: Logistic(sigma=0.0), "sigma", ValueError),
    (lambda: Logistic(sigma=None), "sigma", TypeError),
    (lambda: Logistic(balanced="yes"), "balanced", TypeError),
    (lambda: Logistic(1.0), "positional", TypeError),
    (lambda: SquaredHinge(C=-1.0), "C", ValueError),
    (lambda: SquaredHinge(C=float("inf")), "C", ValueError),
    (lambda: McRank(n_classes=1), "n_classes", ValueError),
    (lambda: McRank(n_classes=2.5), "n_classes", TypeError),
])
def test_bad_options_raise(make, match, exc):
    with pytest.raises(exc, match=match):
        make()


# --- issue 13 ---------------------------------------------------------------------------------------------
def test_mcrank_class_bound():
    with pytest.raises(ValueError, match=r"n_classes must be <= 1024, got 9223372036854775808"):
        McRank(n_classes=2**63)
    assert McRank(n_classes=1024).n_outputs == 1024
    with pytest.raises(ValueError, match=r"labels has grade 1024 but McRank allows at most 1024 classes"):
        McRank().prepare([0, 1024])
    with pytest.raises(ValueError, match=r"labels must satisfy \|labels\| <= 1e\+100"):
        McRank().prepare([0, 1e300])


def test_mcrank_rechecks_a_prepared_built_by_a_lenient_objective():
    prep = SquaredError().prepare([0.0, 1.0, 20.0])
    with pytest.raises(ValueError, match=r"labels has grade 20 but McRank\(n_classes=3\) allows 0..2"):
        McRank(n_classes=3).grad_hess_prepared(np.zeros((3, 3)), prep)
    with pytest.raises(ValueError, match=r"McRank needs integer grades in labels; found 0.5 at row 1"):
        McRank().loss_prepared(np.zeros((2, 2)), SquaredError().prepare([0.0, 0.5]))
    g, _ = McRank().grad_hess_prepared(np.zeros((3, 21)), prep)  # n_classes=None learns K = 21 from this data
    assert g.shape == (3, 21)


def test_binary_losses_recheck_a_prepared_and_bound_options():
    prep = SquaredError().prepare([0.0, 1.0, 2.0])
    for obj in (Logistic(), SquaredHinge()):
        with pytest.raises(ValueError, match=rf"{type(obj).__name__} needs binary labels .* found 2.0 at row 2"):
            obj.grad_hess_prepared(np.zeros(3), prep)
    for make, name in ((lambda v: Logistic(sigma=v), "sigma"), (lambda v: SquaredHinge(C=v), "C")):
        with pytest.raises(ValueError, match=rf"{name} must be <= 1e\+20"):
            make(1e300)
    g, h = Logistic(sigma=1e20).grad_hess([1e100, -1e100, 0.0], [1.0, 0.0, 1.0], weight=[1e50] * 3)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)


def test_boolean_scores_refused():
    with pytest.raises(TypeError, match=r"scores must be real numbers \(float or int\), got booleans"):
        SquaredError().grad_hess(np.array([True, False]), [0.0, 1.0])
    with pytest.raises(TypeError, match=r"raw_scores must be real numbers"):
        McRank(n_classes=2).predict_relevance(np.ones((2, 2), bool))
