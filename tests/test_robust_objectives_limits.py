"""Robustness of the objectives at numeric extremes (issues 7 and 13): scores, weights, labels and
options at their limits give finite gradients, hessians and losses (or a ValueError, never inf,
NaN or a hang)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import customobj as co
from customobj import _validation as V
from _objective_cases import S10, Y10, ranking_objectives


def _extreme_scores(rng, n):
    return {
        "+-1e6": rng.choice([-1e6, 1e6], n),
        "normal(0, 1e6)": rng.normal(0.0, 1e6, n),
        "all equal": np.full(n, 3.0),
        "+-1e100 (the limit)": rng.choice([-1e100, 1e100], n),
    }


@pytest.mark.parametrize("obj", ranking_objectives(), ids=repr)
def test_extremes_stay_finite(obj):
    rng = np.random.default_rng(0)
    n = 60
    sizes = [1, 20, 39]  # a one-row query, and queries with ties
    labels = {"graded": rng.integers(0, 3, n).astype(float), "all equal": np.ones(n)}
    for lname, y in labels.items():
        prep = obj.prepare(y, sizes)
        for sname, s in _extreme_scores(rng, n).items():
            g, h = obj.grad_hess_prepared(s, prep)
            assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)), (lname, sname)
            assert np.all(h >= 0), (lname, sname)
            if abs(s).max() <= 1e6:  # quadratic losses of 1e100 margins overflow: only grads promised there
                assert np.isfinite(obj.loss_prepared(s, prep)), (lname, sname)
            if lname == "all equal":
                # listwise targets move equal-labelled rows too: the softmax losses pull them to equal
                # scores, XENDCG's noise separates them, QueryRMSE centres them
                listwise = (co.ListNet, co.QuerySoftMax, co.XENDCG, co.QueryRMSE)
                assert not np.any(g) or isinstance(obj, (co.Sum, co.QBRank) + listwise), \
                    "equal labels: no pair gradient"
            pc = obj.pair_couplings_prepared(s, prep)
            if pc is not None:
                assert np.all(np.isfinite(pc[2])) and np.all(pc[2] >= 0)


@pytest.mark.parametrize("obj", [co.SquaredError(), co.Logistic(sigma=100.0), co.Logistic(sigma=100.0, balanced=True),
                                 co.SquaredHinge(C=100.0)], ids=repr)
def test_pointwise_extremes_stay_finite(obj):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 50).astype(float)
    for s in _extreme_scores(rng, 50).values():
        g, h = obj.grad_hess(s, y)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        if abs(s).max() <= 1e6:
            assert np.isfinite(obj.loss(s, y))


def test_mcrank_extremes_stay_finite():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 40).astype(float)
    for s in (rng.choice([-1e6, 1e6], (40, 3)), rng.choice([-1e100, 1e100], (40, 3)), np.zeros((40, 3))):
        g, h = co.McRank().grad_hess(s, y)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        assert np.isfinite(co.McRank().loss(s, y))
        assert np.all(np.isfinite(co.McRank(n_classes=3).predict_relevance(s)))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(-1e6, 1e6)), min_size=1, max_size=25),
       st.floats(1e-3, 100.0), st.integers(1, 4))
def test_hypothesis_ranknet_mpboost_finite(rows, sigma, n_groups):
    y = np.array([r[0] for r in rows], dtype=float)
    s = np.array([r[1] for r in rows])
    n = y.size
    cuts = np.linspace(0, n, min(n_groups, n) + 1).astype(int)
    sizes = np.diff(cuts)
    for obj in (co.RankNet(sigma=sigma), co.MPBoost(ddf="ldd", alpha=sigma), co.RankSVM(margin=sigma)):
        g, h = obj.grad_hess(s, y, sizes)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        assert np.isfinite(obj.loss(s, y, sizes))
        # Each pair term is antisymmetric: gradients of a query sum to 0 (up to rounding).
        assert abs(g.sum()) <= 1e-9 * max(1.0, np.abs(g).sum())


def test_structured_dcg_huge_labels_refused_not_hanging():
    """Labels >= 1024 made the assignment spin forever on inf gains: run where a hang is a timeout."""
    from _isolated import run_isolated

    out = run_isolated("""
        import numpy as np, customobj as co
        try:
            co.StructuredDCG().grad_hess(np.arange(5.0), [0, 1100, 2, 1, 0], [5])
        except ValueError as exc:
            print(exc)
    """, timeout=120)
    assert "labels reach 1100 (row 1) but the exponential gain 2**y - 1 needs labels <= 700" in out


def test_structured_dcg_assignment_stops_on_nonfinite_costs():
    from customobj.objectives import _structured_kernels as SK

    A, D = np.array([2.0, 1.0]), np.array([1.0, 0.63])
    at, ok = SK.assign_max(np.array([0.0, 1.0, 2.0]), np.full(3, np.inf), A, D)  # spun forever before
    assert not ok
    at, ok = SK.assign_max(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 1.0]), A, D)
    assert ok and sorted(at.tolist()) == [1, 2]


@pytest.mark.parametrize("obj", [co.StructuredDCG(), co.LambdaRank(), co.LambdaRank(norm=True, k=3)], ids=repr)
def test_exponential_gain_at_the_bound_stays_finite(obj):
    y = np.array([0.0, 700.0, 699.0, 1.0, 0.0, 700.0])
    w = np.array([1.0, V.WEIGHT_LIMIT, 1.0, 2.0, 1.0, 1.0])
    for s in (np.linspace(0, 1, 6), np.array([1e100, -1e100, 1e100, 0, 0, -1e100])):
        g, h = obj.grad_hess(s, y, [6], w)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.any(g != 0)
        assert np.isfinite(obj.loss(s, y, [6], w))
    with pytest.raises(ValueError, match=r"labels reach 1024 \(row 1\) .* needs labels <= 700"):
        obj.grad_hess(np.zeros(3), [0, 1024, 1], [3])


def test_lambdarank_err_label_bound():
    """R = (2**y - 1) / 2**y_max rounds to 1 from y = 54 on (division by zero in Burges' formula)."""
    obj = co.LambdaRank(metric="err")
    g, h = obj.grad_hess(np.arange(5.0), [0, 53, 52, 1, 0], [5])
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.any(g != 0)
    for bad in (54, 60, 1024):
        with pytest.raises(ValueError, match=rf"labels reach {bad} \(row 1\) but LambdaRank\(metric='err'\).*<= 53"):
            obj.grad_hess(np.zeros(5), [0, bad, 52, 1, 0], [5])
    # A gain table lifts the grade limit but its largest gain must stay below 2**53.
    g, _ = co.LambdaRank(metric="err", gain=[0, 1, 2.0**53 - 1]).grad_hess(np.arange(3.0), [0, 2, 1], [3])
    assert np.all(np.isfinite(g)) and np.any(g != 0)
    with pytest.raises(ValueError, match=r"gain entries must be <= 2\*\*53 - 1 with metric='err'"):
        co.LambdaRank(metric="err", gain=[0, 1, 2.0**53])


@pytest.mark.parametrize("obj", ranking_objectives(), ids=repr)
def test_gradients_finite_at_every_limit_at_once(obj):
    """Scores +-1e100, weights up to WEIGHT_LIMIT, labels with a 1e5 spread: finite gradients; the loss
    is finite or a ValueError (a sum of squared 1e100 margins overflows float64)."""
    rng = np.random.default_rng(6)
    n = 40
    y = rng.integers(0, 4, n).astype(float)
    w = rng.choice([1.0, V.WEIGHT_LIMIT], n)
    s = rng.choice([-V.SCORE_LIMIT, V.SCORE_LIMIT], n)
    for scaled in (obj, V.PARAM_LIMIT * obj):
        g, h = scaled.grad_hess(s, y, [10, 30], w)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        try:
            assert np.isfinite(scaled.loss(s, y, [10, 30], w))
        except ValueError as exc:
            assert "loss of these scores overflows float64" in str(exc)


@pytest.mark.parametrize("obj", [co.RankNet(sigma=V.PARAM_LIMIT), co.RankSVM(margin=V.PARAM_LIMIT),
                                 co.MPBoost(ddf="ldd", alpha=V.PARAM_LIMIT / 3), co.MPBoost(lam=V.PARAM_LIMIT, ddf="logdd"),
                                 co.LambdaRank(sigma=V.PARAM_LIMIT, norm=True), co.Logistic(sigma=V.PARAM_LIMIT),
                                 co.SquaredHinge(C=V.PARAM_LIMIT), co.StructuredDCG(hess=V.PARAM_LIMIT, k=V.MAX_ROWS)],
                         ids=repr)
def test_options_at_their_limit_stay_finite(obj):
    y = Y10 if not isinstance(obj, (co.Logistic, co.SquaredHinge)) else (Y10 > 0).astype(float)
    w = np.full(10, V.WEIGHT_LIMIT)
    for s in (S10, np.where(np.arange(10) % 2, V.SCORE_LIMIT, -V.SCORE_LIMIT)):
        g, h = obj.grad_hess(s, y, [4, 6], w)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)


def test_loss_overflow_is_a_value_error_not_inf(monkeypatch):
    """Under the limits losses stay finite (the worst pair term is ~1e271); the guard behind them turns
    an overflow into a ValueError. Lift the weight limit to reach it."""
    s = np.where(Y10 > 1, -V.SCORE_LIMIT, V.SCORE_LIMIT)
    assert np.isfinite((V.PARAM_LIMIT * co.SquaredError()).loss(s, Y10, None, np.full(10, V.WEIGHT_LIMIT)))
    monkeypatch.setattr(V, "WEIGHT_LIMIT", 1e300)
    with pytest.raises(ValueError, match=r"the SquaredError loss of these scores overflows float64 \(largest \|scores\| "
                                         r"1e\+100, largest weight 1e\+300\)"):
        co.SquaredError().loss(s, Y10, None, np.full(10, 1e300))
