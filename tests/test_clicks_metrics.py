"""Tests of customobj/clicks/metrics.py: the affine click DCG's exact expectation over every click
pattern of a session equals the true-relevance DCG (IPS's does not under trust bias), the DR metric is
the DCG of the estimates, the early-stopping Metric, and bad input."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from customobj.clicks.metrics import affine_click_metric, affine_dcg, affine_ndcg, dr_dcg, dr_ndcg
from customobj.clicks.simulation import trust_defaults


def _params(n):
    plus, minus = trust_defaults(n)
    theta = 1.0 / np.arange(1, n + 1)
    return theta * (plus - minus), theta * minus


def _true_dcg(scores, gains, k):
    order = np.argsort(-scores, kind="stable")
    return sum(gains[r] / np.log2(2 + i) for i, r in enumerate(order[:k]))


def test_expected_affine_dcg_is_the_true_dcg():
    alpha, beta = _params(5)
    gamma = np.array([0.2, 1.0, 0.0, 0.6, 0.3])
    scores = np.array([0.1, 0.5, 0.9, -1.0, 0.3])
    p = alpha * gamma + beta
    expected = ips = 0.0
    for c in itertools.product([0.0, 1.0], repeat=5):
        c = np.array(c)
        prob = np.prod(np.where(c > 0, p, 1 - p))
        expected += prob * affine_dcg(scores, c, [5], k=3, alpha=alpha, beta=beta)
        ips += prob * _true_dcg(scores, c / (alpha + beta)[0] * 0 + c / np.maximum(alpha + beta, 1e-9), 3)
    truth = _true_dcg(scores, gamma, 3)
    assert abs(expected - truth) < 1e-12
    assert abs(ips - truth) > 0.05  # a click-rate weighting alone stays biased under trust bias


def test_dr_metrics_are_the_dcg_of_the_estimates():
    est = np.array([0.5, -0.2, 1.0, 0.0])
    s = np.array([1.0, 2.0, 0.0, -1.0])
    assert abs(dr_dcg(s, est, [4], k=None) - _true_dcg(s, est, 4)) < 1e-12
    assert 0 < dr_ndcg(s, est, [4]) < 1 and abs(dr_ndcg(np.array([0.5, 0, 1, 0.2]), est, [4]) - 1.0) < 1e-12


def test_affine_ndcg_orders_like_affine_dcg_and_metric_wraps_it():
    alpha, beta = _params(3)
    c = np.array([1.0, 0, 0, 0, 1.0, 0])
    good, bad = np.array([3.0, 2, 1, 1, 3, 2]), np.array([1.0, 2, 3, 3, 1, 2])
    assert affine_ndcg(good, c, [3, 3], alpha=alpha, beta=beta) > affine_ndcg(bad, c, [3, 3], alpha=alpha, beta=beta)
    m = affine_click_metric("affine_ndcg@2", alpha=alpha, beta=beta)
    assert m.name == "affine_ndcg@2" and m.func(good, c, [3, 3]) == affine_ndcg(good, c, [3, 3], 2, alpha=alpha,
                                                                                beta=beta)
    assert affine_dcg(good, c, [3, 3], alpha=alpha, beta=beta, per_query=True).shape == (2,)


@pytest.mark.parametrize("call, exc, match", [
    (lambda a, b: affine_dcg([0, 1], [0, 2], [2], alpha=a, beta=b), ValueError, "clicks"),
    (lambda a, b: affine_dcg([0, 1, 2, 3], [0, 1, 0, 0], [4], alpha=a, beta=b), ValueError, "alpha"),
    (lambda a, b: affine_dcg([0, 1], [0, 1], [2], alpha=[0.0, 0.1, 0.1], beta=b), ValueError, "alpha"),
    (lambda a, b: affine_ndcg([0, 1], [0, 0], [2], alpha=a, beta=np.zeros(3)), ValueError, "no click"),
    (lambda a, b: affine_click_metric("ips_ndcg@3", alpha=a, beta=b), ValueError, "name"),
    (lambda a, b: affine_click_metric(3, alpha=a, beta=b), TypeError, "name"),
    (lambda a, b: affine_dcg([0, 1], [0, 1], [2], k=0, alpha=a, beta=b), ValueError, "k"),
])
def test_bad_input_is_refused(call, exc, match):
    alpha, beta = _params(3)
    with pytest.raises(exc, match=match):
        call(alpha, beta)
