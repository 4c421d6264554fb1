"""ListNet and QuerySoftMax (customobj/objectives/softmax.py) through their kernels
customobj/objectives/_listwise_kernels.py and their pair helpers customobj/objectives/_query_arrays.py: slow NumPy references (ListNet as rax's ``softmax_loss``
defines it), finite differences, the exact coupled hessian, weights, degenerate queries, extreme
scores, bad options, and a short LightGBM / XGBoost / TreeBooster training run."""
import numpy as np
import pytest

from _peer_cases import LABELS, SIZES, check_derivatives, scores, training_improves

from customobj import ListNet, QuerySoftMax, Sum
from customobj._validation import MAX_PAIRS


def _log_softmax(z):
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


def listnet_reference(s, y, sizes, weight=None):
    """rax's ``softmax_loss`` per list, ``-sum (y / sum y) log_softmax(s)``, times the mean row weight;
    lists without a positive label masked out. Returns (loss, grad, hess) from the textbook formulas."""
    loss, grad, hess = 0.0, np.zeros(s.size), np.zeros(s.size)
    w = np.ones(s.size) if weight is None else np.asarray(weight, float)
    lo = 0
    for n in sizes:
        hi = lo + n
        yq = y[lo:hi]
        if n >= 2 and yq.sum() > 0:
            t = yq / yq.sum()
            wq = w[lo:hi].mean()
            lp = _log_softmax(s[lo:hi])
            p = np.exp(lp)
            loss += wq * -(t * lp).sum()
            grad[lo:hi] = wq * (p - t)
            hess[lo:hi] = wq * p * (1 - p)
        lo = hi
    return loss, grad, hess


def querysoftmax_reference(s, y, sizes, beta, weight=None):
    """CatBoost's definition, term by term: ``-sum_{y_i > 0} w_i y_i log(w_i e^{beta s_i} / sum_j w_j e^{beta s_j})``."""
    w = np.ones(s.size) if weight is None else np.asarray(weight, float)
    loss, grad, hess = 0.0, np.zeros(s.size), np.zeros(s.size)
    lo = 0
    for n in sizes:
        hi = lo + n
        if n >= 2:
            e = w[lo:hi] * np.exp(beta * (s[lo:hi] - s[lo:hi].max()))
            p = e / e.sum()
            m = np.where(y[lo:hi] > 0, w[lo:hi] * y[lo:hi], 0.0)
            for t in range(n):
                if m[t] > 0:
                    loss -= m[t] * np.log(p[t])
            grad[lo:hi] = beta * (m.sum() * p - m)
            hess[lo:hi] = beta ** 2 * m.sum() * p * (1 - p)
        lo = hi
    return loss, grad, hess


@pytest.mark.parametrize("weighted", [False, True])
def test_listnet_matches_reference_and_finite_differences(weighted):
    s = scores(1)
    w = np.linspace(0.5, 2.0, s.size) if weighted else None
    ref_loss, ref_g, ref_h = listnet_reference(s, LABELS, SIZES, w)
    g, h = check_derivatives(ListNet(), s, weight=w)
    np.testing.assert_allclose(ListNet().loss(s, LABELS, SIZES, w), ref_loss, rtol=1e-12)
    np.testing.assert_allclose(g, ref_g, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(h, ref_h, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_querysoftmax_matches_reference_and_finite_differences(beta, weighted):
    s = scores(2)
    w = np.linspace(2.0, 0.5, s.size) if weighted else None
    obj = QuerySoftMax(beta=beta)
    ref_loss, ref_g, ref_h = querysoftmax_reference(s, LABELS, SIZES, beta, w)
    g, h = check_derivatives(obj, s, weight=w)
    np.testing.assert_allclose(obj.loss(s, LABELS, SIZES, w), ref_loss, rtol=1e-12)
    np.testing.assert_allclose(g, ref_g, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(h, ref_h, rtol=1e-10, atol=1e-14)


def test_listnet_is_querysoftmax_on_normalised_labels():
    s = scores(3)
    lo = np.concatenate([[0], np.cumsum(SIZES)])
    y = LABELS.copy()
    for a, b in zip(lo[:-1], lo[1:]):
        if y[a:b].sum() > 0:
            y[a:b] /= y[a:b].sum()
    for part in (0, 1):
        np.testing.assert_allclose(ListNet().grad_hess(s, LABELS, SIZES)[part],
                                   QuerySoftMax().grad_hess(s, y, SIZES)[part], rtol=1e-12, atol=1e-15)


def test_degenerate_queries_contribute_nothing():
    # one row; all labels 0 (ListNet, QuerySoftMax); equal labels still pull towards uniform p.
    for obj in (ListNet(), QuerySoftMax()):
        g, h = obj.grad_hess([3.0], [2.0], [1])
        assert g.tolist() == [0.0] and h.tolist() == [0.0] and obj.loss([3.0], [2.0], [1]) == 0.0
        g, h = obj.grad_hess([1.0, -1.0, 0.5], [0.0, 0.0, 0.0], [3])
        assert not g.any() and not h.any() and obj.loss([1.0, -1.0, 0.5], [0.0, 0.0, 0.0], [3]) == 0.0
        assert obj.pair_couplings([1.0, -1.0, 0.5], [0.0, 0.0, 0.0], [3])[0].size == 0
        g, _ = obj.grad_hess([0.0, 0.0], [1.0, 1.0], [2])
        assert not g.any()  # equal scores already give the target distribution
    # a zero-weight row leaves QuerySoftMax's softmax (and its target)
    g, _ = QuerySoftMax().grad_hess([5.0, 0.0, 0.0], [2.0, 1.0, 0.0], [3], weight=[0.0, 1.0, 1.0])
    assert g[0] == 0.0 and g[1] < 0 < g[2]


def test_extreme_scores_stay_finite():
    s = np.array([1e100, -1e100, 0.0, 1e100])
    y = np.array([0.0, 2.0, 1.0, 0.0])
    for obj in (ListNet(), QuerySoftMax(beta=1e20)):
        g, h = obj.grad_hess(s, y, [4])
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        assert np.isfinite(obj.loss(s, y, [4]))
        assert np.all(np.isfinite(obj.pair_couplings(s, y, [4])[2]))


def test_composes_and_couplings_count_pairs():
    s = scores(4)
    obj = ListNet() + 0.5 * QuerySoftMax(beta=2.0)
    assert isinstance(obj, Sum) and obj.pairwise
    i, j, c = obj.pair_couplings(s, LABELS, SIZES)
    # every pair of the queries with a positive label: 4, 5 and 3 rows (twice, once per part)
    assert i.size == 2 * (6 + 10 + 3) and np.all(i < j)
    check_derivatives(obj, s)


def test_bad_options_and_pair_budget(monkeypatch):
    with pytest.raises(ValueError, match="beta"):
        QuerySoftMax(beta=0.0)
    with pytest.raises(TypeError, match="beta"):
        QuerySoftMax(beta="1")
    with pytest.raises(TypeError):
        ListNet(beta=2.0)
    with pytest.raises(ValueError, match="group"):
        ListNet().grad_hess([0.0, 1.0], [1.0, 0.0])
    import customobj._validation as V
    monkeypatch.setattr(V, "MAX_PAIRS", 5)
    with pytest.raises(ValueError, match="ListNet couplings"):
        ListNet().pair_couplings(scores(), LABELS, SIZES)
    assert MAX_PAIRS > 5


@pytest.mark.parametrize("library", ["lightgbm", "xgboost", "ole"])
@pytest.mark.parametrize("obj", [ListNet(), QuerySoftMax()], ids=repr)
def test_training_improves_ranking(obj, library):
    training_improves(obj, library)


def test_range_sum_accumulates_in_float64_in_order():
    from customobj.objectives._listwise_kernels import range_sum

    v = np.full(5000, 0.1, dtype=np.float32)
    want = 0.0
    for x in v[7:4000]:
        want += float(x)
    assert range_sum(v, 7, 4000) == want  # float64 accumulation (float32 would drift)
    assert range_sum(v, 3, 3) == 0.0 and range_sum(np.arange(6.0), 1, 4) == 6.0


def _decimal_softmax_ce(s, mass, v, beta):
    """Slow reference of one query's ``-sum_i m_i log(v_i e^{beta s_i} / sum_j v_j e^{beta s_j})`` in
    600-digit decimal arithmetic: logits ``beta s + log v`` of scores up to 1e100 keep hundreds of
    fractional digits, so nothing cancels."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 600
        a = [Decimal(beta) * Decimal(si) + Decimal(vi).ln() for si, vi in zip(s, v) if vi > 0]
        top = max(a)
        log_z = top + sum((ai - top).exp() for ai in a).ln()
        terms = [Decimal(mi) * (log_z - Decimal(beta) * Decimal(si) - Decimal(vi).ln())
                 for si, mi, vi in zip(s, mass, v) if mi > 0]
        return float(sum(terms))


@pytest.mark.parametrize("s, y, w, beta, exact", [
    ([1e36, 1e36], [1.0, 0.0], [1.0, np.e - 1.0], 1.0, 1.0),          # issue 30: was 0.0
    ([0.0, 0.0], [1.0, 0.0], [1e-30, 1e30], 1.0, None),             # log(1 + 1e60): 138.2
    ([1e20, 1e20 + 1.0, 3.0], [2.0, 1.0, 0.0], [1e50, 1e-40, 1.0], 0.5, None),
    ([-7.5e33, -7.5e33], [1.0, 1.0], [1e8, 1e-53], 0.1, None),       # was -1.8e9
    ([1.2e22, 3.4e21], [1.0, 2.0], [8.9e-13, 2.4e-155], 100.0, None),
])
def test_query_softmax_loss_is_log_sum_exp_stable(s, y, w, beta, exact):
    """Issue 30: extreme weight ratios (within WEIGHT_LIMIT) or large scores made ``log Z - beta s_i``
    cancel (0.0 for 1.0, -1.4e36 for 116.6); the loss now matches a 600-digit reference."""
    s, y, w = np.array(s), np.array(y), np.array(w)
    got = QuerySoftMax(beta=beta).loss(s, y, [s.size], weight=w)
    want = _decimal_softmax_ce(s, y * w, w, beta)
    if exact is not None:
        assert want == pytest.approx(exact, rel=1e-12)
    assert got >= 0.0
    assert got == pytest.approx(want, rel=1e-9, abs=1e-250)


def test_softmax_losses_match_high_precision_reference_on_hostile_draws():
    rng = np.random.default_rng(30)
    for _ in range(60):
        n = int(rng.integers(2, 5))
        s = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 40)
        if rng.random() < 0.5:
            s[:] = s[0]
        w = 10.0 ** rng.uniform(-300, 50, n)
        y = rng.integers(0, 3, n).astype(float)
        y[0] = max(y[0], 1.0)
        beta = float(10.0 ** rng.integers(-2, 3))
        got = QuerySoftMax(beta=beta).loss(s, y, [n], weight=w)
        assert got == pytest.approx(_decimal_softmax_ce(s, y * w, w, beta), rel=1e-9, abs=1e-250), (s, y, w, beta)
        got = ListNet().loss(s, y, [n])
        assert got == pytest.approx(_decimal_softmax_ce(s, y / y.sum(), np.ones(n), 1.0), rel=1e-9, abs=1e-250)


def test_query_softmax_loss_keeps_its_digits_at_weight_ratios_up_to_1e50():
    """Issue 39: with its mass on the heaviest row and the others lighter by up to 1e50, a query's loss
    ``w_0 log(1 + sum_j w_j / w_0)`` is well conditioned (about 1), yet ``log w_j - log w_0`` carried
    the rounding of two logs of ~57 into ``e^r``: up to 1.0e-14 relative error measured on these draws (46 ulp).
    The weight ratio taken first and multiplied into ``e^{beta (s_j - s_0)}`` keeps it within a few ulp."""
    rng = np.random.default_rng(39)
    worst = 0.0
    for _ in range(40):
        n = int(rng.integers(2, 6))
        top = 10.0 ** rng.uniform(-25.0, 25.0)
        w = np.minimum(top * 10.0 ** -rng.uniform(0.0, 50.0, n), 1e50)
        w[0] = top
        y = np.zeros(n)
        y[0] = 1.0
        got = QuerySoftMax().loss(np.zeros(n), y, [n], weight=w)
        want = _decimal_softmax_ce(np.zeros(n), y * w, w, 1.0)
        worst = max(worst, abs(got - want) / want)
    assert worst <= 4 * np.finfo(float).eps, worst
