"""customobj.objectives.pairwise (and customobj/objectives/preference_pairs.py): finite differences, the slow NumPy reference (tests/_oracles.py),
couplings, degenerate data, options. The pure kernels' own tests: test_objectives_pairwise_kernels.py."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import _oracles as oracles
from _objective_cases import LABELS, N, PTR, SIZES
from _oracles import pairwise_reference as reference, qbrank_mask, ref_label_pairs

from customobj import Groups
from customobj.objectives import (
    MPBoost, PreferencePairs, QBRank, RankNet, RankSVM, SquaredError, Sum,
)

DEGENERATE_ROWS = np.arange(5, 10)  # the one-row query and the all-equal query
EXPLICIT = np.array([[0, 12], [15, 3], [7, 8], [5, 18], [9, 1], [0, 12]])  # across queries, one duplicate


def kink_distance(obj, scores, labels=LABELS, ptr=PTR):
    """Smallest |d - tau| over the pairs of a hinge objective (inf for smooth ones)."""
    items = []
    if isinstance(obj, RankSVM):
        items = [(i, j, obj.margin) for i, j in ref_label_pairs(labels, ptr)]
    elif isinstance(obj, PreferencePairs):
        items = [(i, j, obj.margin) for i, j in obj.pairs]
    elif isinstance(obj, QBRank):
        grade = obj.margin == "grade"
        use_lp = obj.pairs is None if obj.label_pairs is None else obj.label_pairs
        if use_lp:
            items += [(i, j, labels[i] - labels[j] if grade else obj.margin) for i, j in ref_label_pairs(labels, ptr)]
        if obj.pairs is not None:
            items += [(i, j, 1.0 if grade else obj.margin) for i, j in obj.pairs]
    return min((abs(scores[i] - scores[j] - t) for i, j, t in items), default=np.inf)


def smooth_scores(obj, seed, scale=1.5):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        s = rng.normal(scale=scale, size=N)
        if kink_distance(obj, s) > 1e-2:
            return s
    raise AssertionError("could not find scores away from the kinks")


OBJECTIVES = [
    RankNet(), RankNet(sigma=3.0), RankSVM(), RankSVM(margin=0.5),
    MPBoost(), MPBoost(ddf="ldd", alpha=0.7), MPBoost(ddf="logdd", lam=2.0), MPBoost(ddf="logitdd", beta=0.5),
    QBRank(), QBRank(w=0.3, margin=0.8, labeled="single_label_queries"),
    QBRank(w=0.7, pairs=EXPLICIT), QBRank(w=0.6, pairs=EXPLICIT, label_pairs=True, labeled="none"),
    QBRank(w=1.0, labeled=np.arange(N) % 3 == 0), QBRank(w=0.0),
    PreferencePairs(EXPLICIT), PreferencePairs(EXPLICIT, margin=1.0, weight=np.arange(1.0, 7.0)),
]
WEIGHT = np.random.default_rng(7).uniform(0.2, 2.0, N)


def fd_grad(obj, s, **kw):
    return oracles.fd_grad(lambda z: obj.loss(z, LABELS, SIZES, **kw), s)


def fd_hess_diag(obj, s, **kw):
    return oracles.fd_diag(lambda z: obj.grad_hess(z, LABELS, SIZES, **kw)[0], s)


@pytest.mark.parametrize("obj", OBJECTIVES, ids=repr)
@pytest.mark.parametrize("weighted", [False, True])
def test_grad_hess_match_finite_differences(obj, weighted):
    kw = {"weight": WEIGHT} if weighted else {}
    s = smooth_scores(obj, 1)
    g, h = obj.grad_hess(s, LABELS, SIZES, **kw)
    np.testing.assert_allclose(g, fd_grad(obj, s, **kw), rtol=1e-6, atol=1e-6)
    if not (isinstance(obj, QBRank) and obj.hessian == "upper_bound"):
        np.testing.assert_allclose(h, fd_hess_diag(obj, s, **kw), rtol=1e-5, atol=1e-5)
    assert np.all(h >= 0)


@pytest.mark.parametrize("obj", OBJECTIVES, ids=repr)
@pytest.mark.parametrize("weighted", [False, True])
def test_kernels_match_slow_reference(obj, weighted):
    w = WEIGHT if weighted else None
    s = np.random.default_rng(2).normal(scale=2.0, size=N)
    loss, grad, hess, coup = reference(obj, s, weight=w)
    g, h = obj.grad_hess(s, LABELS, SIZES, weight=w)
    np.testing.assert_allclose(g, grad, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, hess, rtol=1e-12, atol=1e-12)
    assert obj.loss(s, LABELS, SIZES, weight=w) == pytest.approx(loss, rel=1e-12)
    prep = obj.prepare(LABELS, SIZES, w)
    i, j, c = obj.pair_couplings_prepared(s, prep)
    assert i.dtype == np.int64 and j.dtype == np.int64 and c.dtype == np.float64
    got = sorted(zip(i.tolist(), j.tolist(), c.tolist()))
    want = sorted(coup)
    assert [p[:2] for p in got] == [p[:2] for p in want]
    np.testing.assert_allclose([p[2] for p in got], [p[2] for p in want], rtol=1e-12, atol=1e-15)


def pair_part_hess(obj, s, weight=None):
    """The hessian minus QBRank's squared-error part (the whole hessian for the others)."""
    h = obj.grad_hess(s, LABELS, SIZES, weight=weight)[1]
    if isinstance(obj, QBRank):
        rw = np.ones(N) if weight is None else weight
        h = h - (1 - obj.w) * rw * qbrank_mask(obj, LABELS, PTR)
    return h


@pytest.mark.parametrize("obj", OBJECTIVES, ids=repr)
def test_couplings_sum_to_hessian_and_match_2x2_block(obj):
    s = smooth_scores(obj, 3)
    i, j, c = obj.pair_couplings(s, LABELS, SIZES)
    assert np.all(c >= 0)
    per_row = np.bincount(i, c, minlength=N) + np.bincount(j, c, minlength=N)
    np.testing.assert_allclose(per_row, pair_part_hess(obj, s), rtol=1e-12, atol=1e-12)
    # Off-diagonal block entry d2L / ds_a ds_b = -sum of couplings between a and b.
    h = 1e-5
    for a, b in {(int(x), int(y)) for x, y in zip(i, j)}:
        e = np.zeros(N)
        e[b] = h
        fd = (obj.grad_hess(s + e, LABELS, SIZES)[0][a] - obj.grad_hess(s - e, LABELS, SIZES)[0][a]) / (2 * h)
        between = c[((i == a) & (j == b)) | ((i == b) & (j == a))].sum()
        assert fd == pytest.approx(-between, rel=1e-5, abs=1e-6)


def test_qbrank_upper_bound_doubles_active_pair_hessian_without_couplings():
    s = np.random.default_rng(4).normal(size=N)
    exact = QBRank(w=0.4, pairs=EXPLICIT, label_pairs=True)
    bound = QBRank(w=0.4, pairs=EXPLICIT, label_pairs=True, hessian="upper_bound")
    ge, he = exact.grad_hess(s, LABELS, SIZES)
    gb, hb = bound.grad_hess(s, LABELS, SIZES)
    np.testing.assert_array_equal(ge, gb)
    se = 0.6 * np.ones(N)
    np.testing.assert_allclose(hb - se, 2 * (he - se), rtol=1e-12, atol=1e-14)
    assert np.all(hb >= he)
    i, j, c = bound.pair_couplings(s, LABELS, SIZES)
    assert i.size == j.size == c.size == 0 and i.dtype == np.int64 and c.dtype == np.float64
    assert bound.loss(s, LABELS, SIZES) == exact.loss(s, LABELS, SIZES)


PAIR_ONLY = [o for o in OBJECTIVES if not isinstance(o, (QBRank, PreferencePairs))]


@pytest.mark.parametrize("obj", PAIR_ONLY, ids=repr)
def test_one_row_and_all_equal_queries_get_zero_gradient(obj):
    s = np.random.default_rng(5).normal(size=N)
    g, h = obj.grad_hess(s, LABELS, SIZES)
    assert np.all(g[DEGENERATE_ROWS] == 0) and np.all(h[DEGENERATE_ROWS] == 0)
    assert g.any()
    # A data set of such queries only: zero everywhere, zero loss, no pairs.
    y, grp = np.array([1.0, 2, 2, 2, 0, 0]), [1, 3, 2]
    g, h = obj.grad_hess(np.arange(6.0), y, grp)
    assert np.all(g == 0) and np.all(h == 0) and obj.loss(np.arange(6.0), y, grp) == 0
    assert obj.pair_couplings(np.arange(6.0), y, grp)[0].size == 0


@pytest.mark.parametrize("obj", OBJECTIVES, ids=repr)
def test_invariant_to_permuting_whole_queries(obj):
    if getattr(obj, "pairs", None) is not None:
        pytest.skip("explicit pairs name rows, which move with the permutation")
    if not isinstance(getattr(obj, "labeled", "all"), str):
        pytest.skip("a row mask moves with the permutation")
    s = np.random.default_rng(6).normal(size=N)
    perm_q = np.array([3, 0, 4, 2, 1])
    rows, grp = Groups.from_sizes(SIZES).subset(perm_q)
    g, h = obj.grad_hess(s, LABELS, SIZES, weight=WEIGHT)
    gp, hp = obj.grad_hess(s[rows], LABELS[rows], grp, weight=WEIGHT[rows])
    np.testing.assert_allclose(gp, g[rows], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(hp, h[rows], rtol=1e-13, atol=1e-15)
    assert obj.loss(s[rows], LABELS[rows], grp) == pytest.approx(obj.loss(s, LABELS, SIZES), rel=1e-12)


EXTREME = [RankNet(sigma=100.0), RankNet(), RankSVM(), MPBoost(), MPBoost(ddf="ldd", alpha=3.0),
           MPBoost(ddf="logdd"), MPBoost(ddf="logitdd"), QBRank(pairs=EXPLICIT, label_pairs=True),
           QBRank(hessian="upper_bound"), PreferencePairs(EXPLICIT, margin=1.0)]


@pytest.mark.parametrize("obj", EXTREME, ids=repr)
@pytest.mark.parametrize("magnitude", [1e3, 1e6])
def test_finite_at_extreme_scores(obj, magnitude):
    s = magnitude * np.random.default_rng(8).choice([-1.0, 1.0], N)
    g, h = obj.grad_hess(s, LABELS, SIZES)
    i, j, c = obj.pair_couplings(s, LABELS, SIZES)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
    assert np.all(np.isfinite(c)) and math.isfinite(obj.loss(s, LABELS, SIZES))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=6), st.integers(0, 2**31 - 1),
       st.sampled_from([RankNet(sigma=2.0), RankSVM(), MPBoost(ddf="ldd")]))
def test_random_queries_match_reference(sizes, seed, obj):
    rng = np.random.default_rng(seed)
    sizes = np.array(sizes)
    n = int(sizes.sum())
    y = rng.integers(0, 3, n).astype(float)
    s = rng.normal(size=n)
    w = rng.uniform(0.1, 1.0, n)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    loss, grad, hess, _ = reference(obj, s, labels=y, ptr=ptr, weight=w)
    g, h = obj.grad_hess(s, y, sizes, weight=w)
    np.testing.assert_allclose(g, grad, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, hess, rtol=1e-12, atol=1e-12)
    assert obj.loss(s, y, sizes, weight=w) == pytest.approx(loss, rel=1e-12, abs=1e-300)


def assert_same(a, b, s, weight=None, group=SIZES):
    ga, ha = a.grad_hess(s, LABELS, group, weight=weight)
    gb, hb = b.grad_hess(s, LABELS, group, weight=weight)
    np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ha, hb, rtol=1e-12, atol=1e-12)
    assert a.loss(s, LABELS, group, weight=weight) == pytest.approx(b.loss(s, LABELS, group, weight=weight), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_qbrank_composition(weighted):
    w8 = WEIGHT if weighted else None
    s = np.random.default_rng(10).normal(size=N)
    # Explicit pairs replace label pairs: preference part + squared error on every row.
    assert_same(QBRank(w=0.3, pairs=EXPLICIT), 0.3 * PreferencePairs(EXPLICIT, margin=1.0) + 0.7 * SquaredError(), s, w8)
    # Label pairs with a constant margin are half a RankSVM.
    assert_same(QBRank(w=0.8, margin=0.5, labeled="none"), 0.4 * RankSVM(margin=0.5), s, w8)
    # label_pairs=True adds them to explicit pairs.
    both = QBRank(w=0.5, margin=2.0, pairs=EXPLICIT, label_pairs=True)
    parts = 0.25 * RankSVM(margin=2.0) + 0.5 * PreferencePairs(EXPLICIT, margin=2.0) + 0.5 * SquaredError()
    assert_same(both, parts, s, w8)
    i, j, c = both.pair_couplings(s, LABELS, SIZES)
    pi, pj, pc = parts.pair_couplings(s, LABELS, SIZES)
    assert sorted(zip(i.tolist(), j.tolist(), np.round(c, 12).tolist())) == \
        sorted(zip(pi.tolist(), pj.tolist(), np.round(pc, 12).tolist()))
    # No preference data at all: GBT.
    assert_same(QBRank(w=0.0), SquaredError(), s, w8)


def test_qbrank_explicit_pairs_only_does_not_need_groups():
    obj = QBRank(pairs=EXPLICIT, label_pairs=False)
    assert not obj.needs_group and QBRank().needs_group and QBRank(pairs=EXPLICIT, labeled="single_label_queries").needs_group
    s = np.random.default_rng(11).normal(size=N)
    np.testing.assert_allclose(obj.grad_hess(s, LABELS)[0], obj.grad_hess(s, LABELS, SIZES)[0])
    with pytest.raises(ValueError, match="group"):
        QBRank().grad_hess(s, LABELS)


def test_qbrank_single_label_queries_are_the_labelled_rows():
    obj = QBRank(w=0.5, labeled="single_label_queries")
    s = np.zeros(N)
    g, _ = obj.grad_hess(s, LABELS, SIZES)
    pairs = QBRank(w=0.5, labeled="none").grad_hess(s, LABELS, SIZES)[0]
    extra = g - pairs
    expected = np.zeros(N)
    expected[DEGENERATE_ROWS] = -0.5 * LABELS[DEGENERATE_ROWS]
    np.testing.assert_allclose(extra, expected, atol=1e-15)


def test_weights_scale_pair_terms_by_mean_row_weight():
    s = np.random.default_rng(12).normal(size=N)
    for obj in (RankNet(), MPBoost(ddf="logdd"), PreferencePairs(EXPLICIT, margin=1.0)):
        g1, h1 = obj.grad_hess(s, LABELS, SIZES)
        g3, h3 = obj.grad_hess(s, LABELS, SIZES, weight=np.full(N, 3.0))
        np.testing.assert_allclose(g3, 3 * g1)
        np.testing.assert_allclose(h3, 3 * h1)
        c1 = obj.pair_couplings(s, LABELS, SIZES)[2]
        c3 = obj.pair_couplings_prepared(s, obj.prepare(LABELS, SIZES, np.full(N, 3.0)))[2]
        np.testing.assert_allclose(c3, 3 * c1)


def test_sum_and_scaled_with_pairwise_objectives():
    s = np.random.default_rng(13).normal(size=N)
    combo = 2.0 * RankNet() + RankSVM() + 0.5 * PreferencePairs(EXPLICIT)
    assert isinstance(combo, Sum) and combo.pairwise and combo.needs_group
    g, h = combo.grad_hess(s, LABELS, SIZES)
    parts = [(2.0, RankNet()), (1.0, RankSVM()), (0.5, PreferencePairs(EXPLICIT))]
    np.testing.assert_allclose(g, sum(f * o.grad_hess(s, LABELS, SIZES)[0] for f, o in parts))
    np.testing.assert_allclose(h, sum(f * o.grad_hess(s, LABELS, SIZES)[1] for f, o in parts))
    i, j, c = combo.pair_couplings(s, LABELS, SIZES)
    np.testing.assert_allclose(np.bincount(i, c, minlength=N) + np.bincount(j, c, minlength=N), h)


def test_preference_pairs_is_half_the_graph_regulariser():
    s = np.random.default_rng(14).normal(size=N)
    edges = EXPLICIT[:4]
    omega = sum(max(0.0, s[j] - s[i]) ** 2 for i, j in edges)
    assert 2 * PreferencePairs(edges).loss(s, LABELS) == pytest.approx(omega)
    assert not PreferencePairs(edges).needs_group


def test_cached_pairs_and_state_reuse():
    obj = RankNet()
    prep = obj.prepare(LABELS, SIZES)
    s = np.random.default_rng(15).normal(size=N)
    first = obj.pair_couplings_prepared(s, prep)
    again = obj.pair_couplings_prepared(s + 1.0, prep)
    assert first[0] is again[0]  # the label pair list is built once per data set
    assert not first[0].flags.writeable and not first[1].flags.writeable
    np.testing.assert_allclose(first[2], again[2])  # couplings depend on differences only


@pytest.mark.parametrize("make, match, exc", [
    (lambda: RankNet(sigma=0), "sigma", ValueError),
    (lambda: RankNet(sigma="1"), "sigma", TypeError),
    (lambda: RankNet(1.0), "positional", TypeError),
    (lambda: RankSVM(margin=-1), "margin", ValueError),
    (lambda: MPBoost(ddf="huber"), "ddf", ValueError),
    (lambda: MPBoost(alpha=0), "alpha", ValueError),
    (lambda: MPBoost(lam=-1), "lam", ValueError),
    (lambda: MPBoost(beta=float("nan")), "beta", ValueError),
    (lambda: QBRank(w=1.5), "w", ValueError),
    (lambda: QBRank(w="a"), "w", TypeError),
    (lambda: QBRank(margin="big"), "margin", ValueError),
    (lambda: QBRank(margin=-0.1), "margin", ValueError),
    (lambda: QBRank(hessian="newton"), "hessian", ValueError),
    (lambda: QBRank(pairs=[[0, 1, 2]]), "pairs", ValueError),
    (lambda: QBRank(pairs=[[1, 1]]), "pairs", ValueError),
    (lambda: QBRank(labeled="some"), "labeled", ValueError),
    (lambda: QBRank(labeled=[1, 0, 1]), "labeled", TypeError),
    (lambda: QBRank(label_pairs="yes"), "label_pairs", TypeError),
    (lambda: PreferencePairs([[0, -1]]), "pairs", ValueError),
    (lambda: PreferencePairs([[0, 1]], weight=[1.0, 2.0]), "weight", ValueError),
    (lambda: PreferencePairs([[0, 1]], weight=[-1.0]), "weight", ValueError),
    (lambda: PreferencePairs([[0, 1]], margin=float("inf")), "margin", ValueError),
])
def test_bad_options_raise(make, match, exc):
    with pytest.raises(exc, match=match):
        make()


def test_bad_data_raises():
    s = np.zeros(N)
    with pytest.raises(ValueError, match="pairs"):
        PreferencePairs([[0, N]]).grad_hess(s, LABELS)
    with pytest.raises(ValueError, match="pairs"):
        QBRank(pairs=[[0, N + 3]]).grad_hess(s, LABELS, SIZES)
    with pytest.raises(ValueError, match="labeled"):
        QBRank(labeled=np.ones(3, bool)).grad_hess(s, LABELS, SIZES)
    with pytest.raises(ValueError, match="scores"):
        RankNet().grad_hess(np.zeros(N + 1), LABELS, SIZES)
    with pytest.raises(ValueError, match="group"):
        RankSVM().grad_hess(s, LABELS)


# --- issue 13: option types, pair weights that cannot overflow, MPBoost's distance bound ------------------
def test_ddf_must_be_a_string_name():
    with pytest.raises(TypeError, match=r"ddf must be one of \['binary', 'ldd', 'logdd', 'logitdd'\] \(a string\), "
                                        r"got list \['ldd'\]"):
        MPBoost(ddf=["ldd"])
    with pytest.raises(ValueError, match=r"ddf must be one of .* got 'LDD'"):
        MPBoost(ddf="LDD")


def test_mpboost_ldd_distance_bound():
    """D = alpha (y_i - y_j) enters the hessian squared: alpha times the label spread is capped."""
    s = np.zeros(N)
    g, h = MPBoost(ddf="ldd", alpha=1e20 / 3).grad_hess(s, LABELS, SIZES)  # spread 3: D = 1e20 at the bound
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    with pytest.raises(ValueError, match=r"alpha \* \(max label - min label\) = 3e\+20 exceeds 1e\+20"):
        MPBoost(ddf="ldd", alpha=1e20).grad_hess(s, LABELS, SIZES)
    MPBoost(ddf="logdd", lam=1e20).grad_hess(s, LABELS, SIZES)  # log1p keeps D small: no bound needed


def test_real_options_have_the_shared_maximum():
    for make, name in ((lambda v: RankNet(sigma=v), "sigma"), (lambda v: RankSVM(margin=v), "margin"),
                       (lambda v: QBRank(margin=v), "margin"), (lambda v: MPBoost(beta=v), "beta"),
                       (lambda v: PreferencePairs([[0, 1]], margin=v), "margin")):
        make(1e20)
        with pytest.raises(ValueError, match=rf"{name} must be <= 1e\+20"):
            make(1e21)
    with pytest.raises(ValueError, match=r"w must be finite"):
        QBRank(w=10**400)
