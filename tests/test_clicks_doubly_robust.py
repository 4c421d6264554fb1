"""Tests of customobj/clicks/doubly_robust.py: the doubly robust estimates' and gradient's exact
expectation over every logged ranking and click pattern of a small query, its reduction to the affine
estimate under a deterministic policy, the direct method, the three trainers, and bad input."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import customobj
from customobj import LambdaRank, RankNet, adapters
from customobj.clicks.doubly_robust import DoublyRobust, clip_threshold, dr_data, fit_direct_method
from customobj.clicks.loggers import plackett_luce_marginals
from customobj.clicks.simulation import ClickLog, trust_defaults


def true_params(shown):
    plus, minus = trust_defaults(shown)
    theta = 1.0 / np.arange(1, shown + 1)
    return theta * (plus - minus), theta * minus


def _pl_prob(scores, order, temperature):
    """Exact Plackett-Luce probability of the top of a ranking."""
    w = np.exp(np.asarray(scores) / temperature)
    left, p = list(range(len(scores))), 1.0
    for d in order:
        p *= w[d] / w[left].sum()
        left.remove(d)
    return p


def _one_session(order, clicks, n):
    k = len(order)
    return ClickLog(np.eye(n)[list(order)], np.array(clicks, dtype=float), np.array([k]), np.arange(k),
                    np.zeros(k, dtype=np.int64), np.array(order, dtype=np.int64), np.zeros(k, dtype=np.int64))


def _expected(clip, r_hat, obj=None, s=None, shift=50.0):
    """Exact expectations over the policy's 12 shown rankings (4 candidates, 2 shown, temperature 0.7)
    and their 4 click patterns each: ``(estimates, gradient of obj at s, true relevances, rho)``."""
    n, shown, temperature = 4, 2, 0.7
    alpha, beta = true_params(shown)
    gamma, policy = np.array([0.9, 0.2, 0.6, 0.0]), np.array([0.3, 1.0, -0.5, 0.1])
    rankings = list(itertools.permutations(range(n), shown))
    P = np.zeros((n, shown))
    for order in rankings:
        for k, d in enumerate(order):
            P[d, k] += _pl_prob(policy, order, temperature)
    data = (np.eye(n), np.zeros(n, dtype=np.int64), [n])
    mean_y, mean_g = np.zeros(n), np.zeros(n)
    for order in rankings:
        p_click = alpha * gamma[list(order)] + beta
        for clicks in itertools.product([0.0, 1.0], repeat=shown):
            c = np.array(clicks)
            p = _pl_prob(policy, order, temperature) * np.prod(np.where(c > 0, p_click, 1 - p_click))
            est = dr_data(_one_session(order, clicks, n), data, alpha=alpha, beta=beta, position_prob=P,
                          direct=r_hat, clip=clip)
            assert np.all(est.y >= 0) and np.allclose(est.y - est.shift, est.estimate)
            mean_y += p * est.estimate
            if obj is not None:  # shift larger than any estimate's magnitude here: one objective for every pattern
                mean_g += p * obj.grad_hess(s, est.estimate + shift, est.group)[0]
    return mean_y, mean_g, gamma, P @ alpha


@pytest.mark.parametrize("base", [LambdaRank(), RankNet()])
@pytest.mark.parametrize("query_norm", [False, True])
def test_expected_estimate_and_gradient_are_the_true_ones(base, query_norm):
    """Unclipped (``clip=0``), the DR estimates average to the true relevances whatever the direct
    method, and so does the gradient (it is linear in them; the norm is click-free)."""
    obj = DoublyRobust(base, shift=50.0, query_norm=query_norm)
    s = np.random.default_rng(3).normal(size=4)
    r_hat = np.array([0.5, 0.5, 0.1, 0.8])  # deliberately wrong
    mean_y, mean_g, gamma, _ = _expected(0.0, r_hat, obj, s)
    np.testing.assert_allclose(mean_y, gamma, atol=1e-12)
    np.testing.assert_allclose(mean_g, obj.grad_hess(s, gamma + 50.0, [4])[0], atol=1e-12)
    assert np.abs(mean_g).max() > 1e-3


@pytest.mark.parametrize("clip", [0.1, 0.2, 1.0])
def test_clipped_expectation_is_the_stated_blend(clip):
    """With ``tau`` the expectation is ``r_hat + rho / max(rho, tau) (R - r_hat)`` exactly: the truth where
    ``rho >= tau``, a blend with the direct method below (and the truth everywhere when ``r_hat = R``)."""
    r_hat = np.array([0.5, 0.5, 0.1, 0.8])
    mean_y, _, gamma, rho = _expected(clip, r_hat)
    assert (rho < clip).any() and (clip < 1.0) == (rho >= clip).any()  # both kinds of rows at 0.1 and 0.2
    np.testing.assert_allclose(mean_y, r_hat + rho / np.maximum(rho, clip) * (gamma - r_hat), atol=1e-12)
    np.testing.assert_allclose(mean_y[rho >= clip], gamma[rho >= clip], atol=1e-12)
    assert np.abs(mean_y - gamma).max() > 1e-3  # the clipped rows are biased towards r_hat ...
    np.testing.assert_allclose(_expected(clip, gamma)[0], gamma, atol=1e-12)  # ... unless r_hat is R


def _deterministic_log(sessions):
    """A 12-query synthetic log of ``sessions`` sessions per query under the deterministic logger (5
    shown), the true parameters and its position probabilities."""
    d = customobj.data.synthetic(12, 8, 4, seed=0)
    log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], click_model="trust", sessions=sessions, seed=0, shown=5)
    alpha, beta = true_params(5)
    P = np.zeros((d.y.size, 5))
    P[log.row, log.position] = 1.0
    return d, log, alpha, beta, P


def test_default_clip_is_the_papers_threshold():
    d, log, alpha, beta, P = _deterministic_log(40)
    est = dr_data(log, d, alpha=alpha, beta=beta, position_prob=P)
    assert est.clip == clip_threshold(log.group.size) == min(1.0, 10.0 / np.sqrt(480))
    assert clip_threshold(1) == 1.0 and clip_threshold(10**6) == 0.01
    tau = 0.3
    manual = dr_data(log, d, alpha=alpha, beta=beta, position_prob=P, clip=tau)
    per_row = np.bincount(log.row, weights=log.y - beta[log.position], minlength=d.y.size)[manual.row]
    np.testing.assert_allclose(manual.estimate, per_row / (40 * np.maximum(manual.rho, tau)), atol=1e-12)


def test_deterministic_policy_gives_the_affine_estimate():
    d, log, alpha, beta, P = _deterministic_log(5)
    r_hat = np.random.default_rng(0).random(d.y.size)
    est = dr_data(log, d, alpha=alpha, beta=beta, position_prob=P, direct=r_hat, clip=0.0)
    affine = (log.y - beta[log.position]) / alpha[log.position]
    sums = np.bincount(log.row, weights=affine, minlength=d.y.size)[est.row] / 5.0
    shown = est.rho > 0
    np.testing.assert_allclose(est.estimate[shown], sums[shown], atol=1e-12)  # r_hat cancels: DR = affine
    np.testing.assert_allclose(est.estimate[~shown], r_hat[est.row][~shown])  # never shown: the direct method


def test_stochastic_log_trains_through_lightgbm_xgboost_and_treebooster():
    import lightgbm as lgb
    import xgboost as xgb

    d = customobj.data.synthetic(40, 12, 5, seed=1)
    log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], click_model="trust", sessions=6, seed=1,
                                         logger="stochastic", temperature=0.5, samples=300)
    alpha, beta = true_params(10)
    P = plackett_luce_marginals(d.X[:, 0], d.group, temperature=0.5, shown=10, samples=300, seed=1)
    model = fit_direct_method(log, alpha=alpha, beta=beta, n_estimators=5)
    est = dr_data(log, d, alpha=alpha, beta=beta, position_prob=P, direct=model.predict(d.X))
    obj = DoublyRobust.for_data(LambdaRank(), est)
    b = lgb.train(dict(objective=adapters.lightgbm_objective(obj), verbose=-1, num_leaves=7, num_threads=1),
                  lgb.Dataset(est.X, est.y, group=est.group), 5)
    dm = xgb.DMatrix(est.X, est.y)
    dm.set_group(est.group)
    bx = xgb.train(dict(adapters.xgboost_params(obj), nthread=1), dm, 5, obj=adapters.xgboost_objective(obj))
    tb = customobj.TreeBooster(obj, n_estimators=3, num_leaves=5).fit(est.X, est.y, group=est.group)
    for pred in (b.predict(d.X), bx.predict(xgb.DMatrix(d.X)), tb.predict(d.X)):
        assert np.all(np.isfinite(pred)) and np.std(pred) > 0


def test_bad_input_is_refused():
    d = customobj.data.synthetic(5, 6, 3, seed=0)
    log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=2, seed=0, shown=3)
    alpha, beta = true_params(3)
    with pytest.raises(TypeError, match="log"):
        dr_data((log.X, log.y, log.group), d, alpha=alpha, beta=beta, position_prob=np.zeros((d.y.size, 3)))
    with pytest.raises(ValueError, match="position_prob"):
        dr_data(log, d, alpha=alpha, beta=beta, position_prob=np.zeros((3, 3)))
    for bad in (-0.1, 1.5, np.nan):
        with pytest.raises(ValueError, match="clip"):
            dr_data(log, d, alpha=alpha, beta=beta, position_prob=np.zeros((d.y.size, 3)), clip=bad)
    with pytest.raises(TypeError, match="clip"):
        dr_data(log, d, alpha=alpha, beta=beta, position_prob=np.zeros((d.y.size, 3)), clip="0.1")
    with pytest.raises(ValueError, match="position_prob"):
        dr_data(log, d, alpha=alpha, beta=beta, position_prob=np.full((d.y.size, 3), 2.0))
    with pytest.raises(ValueError, match="labels must be finite"):
        DoublyRobust(RankNet()).check_prepared(type("P", (), {"labels": np.array([np.nan, 1.0])})())
    with pytest.raises(ValueError, match="shift"):
        DoublyRobust(RankNet(), shift=-1.0)
    with pytest.raises(TypeError, match="pairwise"):
        DoublyRobust(customobj.Logistic())
