"""Tests of customobj/clicks/regression_em.py: the E-step against Bayes' rule, the propensities it
recovers from simulated position-based clicks, both libraries, and checked arguments."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj.clicks.regression_em import RegressionEM, e_step


def test_e_step_is_bayes_rule():
    rng = np.random.default_rng(0)
    theta, gamma = rng.uniform(0.05, 0.95, 50), rng.uniform(0.05, 0.95, 50)
    exam, rel = e_step(np.zeros(50), theta, gamma)
    # joint of (E, R) given no click: (1,0) theta(1-g), (0,1) (1-theta) g, (0,0) (1-theta)(1-g)
    p_no_click = theta * (1 - gamma) + (1 - theta) * gamma + (1 - theta) * (1 - gamma)
    np.testing.assert_allclose(exam, theta * (1 - gamma) / p_no_click)
    np.testing.assert_allclose(rel, (1 - theta) * gamma / p_no_click)
    exam1, rel1 = e_step(np.ones(50), theta, gamma)
    assert np.all(exam1 == 1.0) and np.all(rel1 == 1.0)


@pytest.fixture(scope="module")
def log():
    d = customobj.data.synthetic(60, 20, 5, seed=0)
    return d, customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=12, seed=0)


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_recovers_the_examination_curve(log, library):
    d, clicks = log
    em = RegressionEM(library=library, n_iter=8, n_estimators=10).fit(clicks.X, clicks.y, position=clicks.position)
    truth = 1.0 / np.arange(1, 11)
    assert em.position_bias_[0] == 1.0
    # The curve falls as 1/r does (rank correlation) and stays near it: measured mean error 0.11
    # (lightgbm) / 0.10 (xgboost) here, where each row is always shown at one position, so only
    # the features tell relevance from examination (docs/clicks.md).
    ranks = np.argsort(np.argsort(-em.position_bias_))
    assert np.corrcoef(ranks, np.arange(10))[0, 1] > 0.9
    assert np.abs(em.position_bias_ - truth).mean() < 0.15
    assert np.all((em.position_bias_ > 0) & (em.position_bias_ <= 1.0 + 1e-12))
    assert np.all(np.isfinite(em.predict(d.X)))


def test_params_and_unfitted():
    em = RegressionEM(n_iter=3)
    assert em.get_params()["n_iter"] == 3 and em.set_params(n_iter=4).n_iter == 4
    assert "n_iter=4" in repr(em)
    with pytest.raises(ValueError, match="not fitted"):
        em.predict(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="no parameter"):
        em.set_params(rounds=3)


@pytest.mark.parametrize("kwargs, fit, exc, match", [
    (dict(library="catboost"), {}, ValueError, "library"),
    (dict(n_iter=0), {}, ValueError, "n_iter"),
    (dict(learning_rate=0.0), {}, ValueError, "learning_rate"),
    (dict(params={"objective": "binary"}), {}, ValueError, "params"),
    (dict(params=[("lambda_l2", 1.0)]), {}, TypeError, "params"),
    ({}, dict(y=np.array([0.0, 2.0, 1.0])), ValueError, "clicks"),
    ({}, dict(position=np.array([0, -1, 1])), ValueError, "position"),
    ({}, dict(position=np.array([0, 1])), ValueError, "position"),
    ({}, dict(sample_weight=np.array([1.0, np.nan, 1.0])), ValueError, "sample_weight"),
])
def test_bad_input(kwargs, fit, exc, match):
    args = dict(y=np.array([0.0, 1.0, 1.0]), position=np.array([0, 1, 2]))
    args.update(fit)
    with pytest.raises(exc, match=match):
        RegressionEM(**kwargs).fit(np.zeros((3, 2)), **args)


def test_predict_with_the_first_trees(log):
    d, clicks = log
    em = RegressionEM(n_iter=2, n_estimators=3).fit(clicks.X, clicks.y, position=clicks.position)
    full = em.predict(d.X)
    np.testing.assert_array_equal(em.predict(d.X, num_trees=6), full)
    np.testing.assert_array_equal(em.predict(d.X, num_trees=2), em.ranker_.predict(d.X, raw_score=True, num_iteration=2))
    assert not np.array_equal(em.predict(d.X, num_trees=1), full)
    for bad in (0, 7, 1.5):
        with pytest.raises((ValueError, TypeError), match="num_trees"):
            em.predict(d.X, num_trees=bad)


@pytest.mark.parametrize("library, extra", [("lightgbm", {"lambda_l2": 50.0}), ("xgboost", {"lambda": 50.0})])
def test_params_reach_the_library(log, library, extra):
    d, clicks = log
    plain = RegressionEM(library=library, n_iter=1, n_estimators=2).fit(clicks.X, clicks.y, position=clicks.position)
    shrunk = RegressionEM(library=library, n_iter=1, n_estimators=2, params=extra).fit(
        clicks.X, clicks.y, position=clicks.position)
    # a strong L2 penalty shrinks every leaf towards 0: the scores spread less
    assert np.ptp(shrunk.predict(d.X)) < np.ptp(plain.predict(d.X))


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_predict_uses_every_fitted_tree_whatever_the_parameters_say_now(log, library):
    """Issue 30, point 4: predict counted n_iter * n_estimators of the *current* parameters, so
    set_params after fit scored with a subset (or made XGBoost raise)."""
    d, clicks = log
    em = RegressionEM(library=library, n_iter=2, n_estimators=3).fit(clicks.X, clicks.y, position=clicks.position)
    full = em.predict(d.X)
    assert em.n_trees_ == 6
    em.set_params(n_iter=1)  # fewer than fitted
    np.testing.assert_array_equal(em.predict(d.X), full)
    em.set_params(n_iter=5)  # more than fitted
    np.testing.assert_array_equal(em.predict(d.X), full)


def test_predict_counts_the_trees_params_added(log):
    d, clicks = log
    em = RegressionEM(n_iter=2, n_estimators=3, params={"num_iterations": 4}).fit(
        clicks.X, clicks.y, position=clicks.position)
    assert em.n_trees_ == em.ranker_.current_iteration() == 8  # LightGBM's num_iterations wins: 4 per EM step
    np.testing.assert_array_equal(em.predict(d.X), em.ranker_.predict(d.X, raw_score=True))


def test_one_based_positions_are_refused_or_taken_with_first_position(log):
    """Issue 30, point 1: a 1-based log gave position_bias_ like [1, 8e5, 4.8e5, ...] (no row at 0)."""
    d, clicks = log
    with pytest.raises(ValueError, match="first_position=1"):
        RegressionEM(n_iter=1, n_estimators=2).fit(clicks.X, clicks.y, position=clicks.position + 1)
    zero = RegressionEM(n_iter=2, n_estimators=2).fit(clicks.X, clicks.y, position=clicks.position)
    one = RegressionEM(n_iter=2, n_estimators=2).fit(clicks.X, clicks.y, position=clicks.position + 1, first_position=1)
    np.testing.assert_array_equal(one.position_bias_, zero.position_bias_)
    assert np.all(one.position_bias_ <= 1.0 + 1e-12)
    with pytest.raises(ValueError, match="first_position"):
        RegressionEM(n_iter=1, n_estimators=2).fit(clicks.X, clicks.y, position=clicks.position, first_position=1)


class _Linear:
    """A relevance model of one's own: weighted least squares on the features (counts its fits)."""

    def __init__(self):
        self.fits = 0

    def fit(self, X, y, sample_weight=None):
        assert np.all((y >= 0) & (y <= 1)) and sample_weight is not None
        A = np.c_[X, np.ones(len(X))] * np.sqrt(sample_weight)[:, None]
        self.coef = np.linalg.lstsq(A, y * np.sqrt(sample_weight), rcond=None)[0]
        self.fits += 1
        return self

    def predict(self, X):
        return np.c_[X, np.ones(len(X))] @ self.coef


@pytest.mark.parametrize("cls", [RegressionEM, customobj.clicks.TrustEM])
def test_a_relevance_model_of_ones_own(log, cls):
    """Issue 40 item 5: the learner is an argument; a copy is fitted once per EM iteration."""
    d, clicks = log
    mine = _Linear()
    em = cls(n_iter=3, relevance_model=mine).fit(clicks.X, clicks.y, position=clicks.position)
    assert mine.fits == 0 and em.relevance_model_.fits == 3 and em.ranker_ is em.relevance_model_
    assert em.n_trees_ is None and em.position_bias_[0] == 1.0 and np.all(np.isfinite(em.position_bias_))
    gamma = np.clip(em.relevance_model_.predict(d.X), 1e-6, 1 - 1e-6)
    np.testing.assert_allclose(em.predict(d.X), np.log(gamma / (1 - gamma)))
    with pytest.raises(ValueError, match="num_trees"):
        em.predict(d.X, num_trees=1)
    if cls is not RegressionEM:
        customobj.clicks.Affine(customobj.RankNet(), alpha=em.alpha_, beta=em.beta_)  # accepted


def test_a_relevance_model_is_checked(log):
    _, clicks = log
    with pytest.raises(TypeError, match="relevance_model"):
        RegressionEM(relevance_model="lgbm").fit(clicks.X, clicks.y, position=clicks.position)

    class NaNs(_Linear):
        def predict(self, X):
            return np.full(len(X), np.nan)

    with pytest.raises(ValueError, match="relevance_model.predict.*NaN"):
        RegressionEM(n_iter=1, relevance_model=NaNs()).fit(clicks.X, clicks.y, position=clicks.position)
