"""Tests of customobj/clicks/trust_interventions.py: alpha / beta recovered from randomised, swap and
several rankers' logs within .05 of the truth (synthetic data, the simulation's trust model), the
bootstrap intervals, the deterministic log refused, and bad options."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj.clicks.simulation import trust_defaults
from customobj.clicks.trust_interventions import DOCUMENTS, QUERIES, _dense, _em, _resample_weights, estimate_trust


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
    (dict(resample="sessions"), ValueError, "resample"),
    (dict(resample=1), TypeError, "resample"),
    (dict(callback="print"), TypeError, "callback"),
])
def test_bad_options_are_refused(data, kw, exc, match):
    log = _sim(data, sessions=2, logger="randomised")
    with pytest.raises(exc, match=match):
        estimate_trust(log, **kw)
    with pytest.raises(TypeError, match="logs"):
        estimate_trust("log.csv")


@pytest.mark.parametrize("code", [DOCUMENTS, QUERIES])
def test_resample_weights_refit_as_the_copied_log_does(data, code):
    """The slow reference: a resample's weights in EM give what EM gives on the drawn documents (or every
    document of the drawn queries) copied as often as drawn, with unit weights."""
    Nm, Cm, query = _dense([_sim(data, sessions=4, logger="randomised")], None)
    w = _resample_weights(code, query, np.random.default_rng(5))
    if code == QUERIES:  # a query's documents are drawn together, as often as the query
        for q in np.unique(query):
            assert np.unique(w[query == q]).size == 1
    else:
        assert w.sum() == Nm.shape[0]
    g = np.linspace(0.0, 1.0, 11)
    start = (np.full(Nm.shape[1], 0.1), np.full(Nm.shape[1], 0.6), np.full(g.size, 1.0 / g.size))
    fast = _em(Nm, Cm, w, g, *start, 30, 0.0)
    rows = np.repeat(np.arange(Nm.shape[0]), w.astype(np.int64))
    slow = _em(Nm[rows], Cm[rows], np.ones(rows.size), g, *start, 30, 0.0)
    for a, b in zip(fast[:4], slow[:4]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_the_callback_sees_every_draw_and_the_intervals_are_their_quantiles(data):
    seen = []
    est = estimate_trust(_sim(data, sessions=20, logger="swap"), n_iter=60, bootstrap=12, resample="queries", seed=3,
                         callback=lambda i, a, b: seen.append((i, a, b)))
    assert [s[0] for s in seen] == list(range(1, 13))
    a_draws, b_draws = np.array([s[1] for s in seen]), np.array([s[2] for s in seen])
    np.testing.assert_array_equal(est.alpha_interval, np.quantile(a_draws, [0.025, 0.975], axis=0))
    np.testing.assert_array_equal(est.beta_interval, np.quantile(b_draws, [0.025, 0.975], axis=0))
    assert np.ptp(a_draws, axis=0).max() > 0  # the resamples differ
