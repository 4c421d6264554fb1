"""QueryRMSE (customobj/objectives/query_rmse.py) through customobj/objectives/_listwise_kernels.py: a
slow reference, finite differences, the exact coupled hessian, shift invariance per query,
degenerate queries, extreme inputs, and a short LightGBM / XGBoost / TreeBooster training run."""
import numpy as np
import pytest

from _peer_cases import LABELS, SIZES, check_derivatives, scores, training_improves

from customobj import QueryRMSE


def reference(s, y, sizes, weight=None):
    """CatBoost's definition: ``1/2 sum w (y - s - mean_q)^2`` and its derivative, query by query."""
    w = np.ones(s.size) if weight is None else np.asarray(weight, float)
    loss, grad = 0.0, np.zeros(s.size)
    lo = 0
    for n in sizes:
        sl = slice(lo, lo + n)
        lo += n
        r = y[sl] - s[sl]
        mu = (w[sl] * r).sum() / w[sl].sum()
        loss += 0.5 * (w[sl] * (r - mu) ** 2).sum()
        grad[sl] = -w[sl] * (r - mu)
    return loss, grad


@pytest.mark.parametrize("weighted", [False, True])
def test_matches_reference_and_finite_differences(weighted):
    s = scores(5)
    w = np.linspace(0.5, 2.0, s.size) if weighted else None
    loss, grad = reference(s, LABELS, SIZES, w)
    g, h = check_derivatives(QueryRMSE(), s, weight=w)
    np.testing.assert_allclose(g, grad, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(QueryRMSE().loss(s, LABELS, SIZES, w), loss, rtol=1e-12)


def test_a_constant_per_query_changes_nothing():
    s = scores(6)
    shifted = s + np.repeat([3.0, -7.0, 0.5, 100.0, -2.0], SIZES)
    a, b = QueryRMSE().grad_hess(s, LABELS, SIZES), QueryRMSE().grad_hess(shifted, LABELS, SIZES)
    np.testing.assert_allclose(a[0], b[0], atol=1e-12)
    np.testing.assert_allclose(QueryRMSE().loss(s, LABELS, SIZES), QueryRMSE().loss(shifted, LABELS, SIZES),
                               rtol=1e-12)


def test_degenerate_queries():
    g, h = QueryRMSE().grad_hess([4.0], [1.0], [1])
    assert g.tolist() == [0.0] and h.tolist() == [0.0] and QueryRMSE().loss([4.0], [1.0], [1]) == 0.0
    # all labels equal: the centred scores are the residuals
    g, _ = QueryRMSE().grad_hess([1.0, 2.0, 6.0], [2.0, 2.0, 2.0], [3])
    assert g.tolist() == [-2.0, -1.0, 3.0]
    g, h = QueryRMSE().grad_hess([1.0, 2.0], [0.0, 1.0], [2], weight=[0.0, 0.0])
    assert not g.any() and not h.any()
    big = np.array([1e100, -1e100])
    g, h = QueryRMSE().grad_hess(big, [0.0, 1.0], [2])
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    assert np.isfinite(QueryRMSE().loss(big, [0.0, 1.0], [2], weight=[1e50, 1e50]))  # 1e250 at the limits
    with pytest.raises(TypeError):
        QueryRMSE(beta=1.0)


@pytest.mark.parametrize("library", ["lightgbm", "xgboost", "ole"])
def test_training_improves_ranking(library):
    training_improves(QueryRMSE(), library)
