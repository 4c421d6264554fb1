"""Tests of customobj/clicks/trust_interventions.py: alpha / beta recovered from randomised, swap and
several rankers' logs within .05 of the truth (synthetic data, the simulation's trust model), the
bootstrap intervals, the deterministic log refused, and bad options."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj.clicks.simulation import trust_defaults
from customobj.clicks.trust_interventions import estimate_trust


def _truth(shown):
    plus, minus = trust_defaults(shown)
    theta = 1.0 / np.arange(1, shown + 1)
    return theta * (plus - minus), theta * minus


@pytest.fixture(scope="module")
def data():
    # grades 0 / 2 only (click_prob 0 and 1 below): relevance spans [0, 1], the estimator's default scale
    d = customobj.data.synthetic(150, 6, 4, seed=1)
    return d.X, np.where(d.y > 0, 2, 0), d.group


def _sim(data, **kw):
    kw.setdefault("seed", 0)
    return customobj.data.simulate_clicks(data, ranker=data[0][:, 0], click_model="trust", shown=6,
                                          click_prob=(0.0, 0.5, 1.0), **kw)


@pytest.mark.parametrize("logger", ["randomised", "swap"])
def test_interventions_recover_the_parameters(data, logger):
    est = estimate_trust(_sim(data, sessions=150, logger=logger), n_iter=200)
    alpha, beta = _truth(6)
    assert np.abs(est.alpha - alpha).max() < 0.05 and np.abs(est.beta - beta).max() < 0.05
    assert est.n_documents > 100


def test_several_rankers_recover_the_parameters_with_intervals(data):
    logs = [customobj.data.simulate_clicks(data, ranker=data[0][:, f], click_model="trust", shown=6, sessions=60,
                                           seed=i, click_prob=(0.0, 0.5, 1.0), ranker_id=i)
            for i, f in enumerate([0, 1, 2, 3])]
    est = estimate_trust(logs, n_iter=200, bootstrap=8, seed=1)
    alpha, beta = _truth(6)
    assert np.abs(est.alpha - alpha).max() < 0.05 and np.abs(est.beta - beta).max() < 0.05
    assert np.all(est.alpha_interval[0] <= est.alpha_interval[1]) and np.all(np.isfinite(est.beta_interval))
    assert np.all(est.alpha_interval[1] - est.alpha_interval[0] > 0)


def test_a_tiny_log_still_gives_parameters_affine_accepts(data):
    est = estimate_trust(_sim(data, sessions=2, logger="randomised"), n_iter=50)
    customobj.Affine(customobj.RankNet(), alpha=est.alpha, beta=est.beta)  # no ValueError
    assert np.all(est.alpha > 0) and np.all(est.alpha + est.beta <= 1.0)


def test_a_deterministic_log_is_refused(data):
    with pytest.raises(ValueError, match="randomised or swap"):
        estimate_trust(_sim(data, sessions=3))


@pytest.mark.parametrize("kw, exc, match", [
    (dict(relevance_range=(0.5, 0.2)), ValueError, "relevance_range"),
    (dict(relevance_range=0.5), TypeError, "relevance_range"),
    (dict(grid=2), ValueError, "grid"),
    (dict(min_mass=1.5), ValueError, "min_mass"),
    (dict(bootstrap=-1), ValueError, "bootstrap"),
])
def test_bad_options_are_refused(data, kw, exc, match):
    log = _sim(data, sessions=2, logger="randomised")
    with pytest.raises(exc, match=match):
        estimate_trust(log, **kw)
    with pytest.raises(TypeError, match="logs"):
        estimate_trust("log.csv")
