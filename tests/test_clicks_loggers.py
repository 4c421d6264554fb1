"""Tests of customobj/clicks/loggers.py through simulate_clicks: each logger's orders, randomisation
marks and logging probabilities (exact ones against counts, Plackett-Luce marginals against the exact
probabilities of a small query), the deterministic logger unchanged, and bad options."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import customobj
from customobj.clicks.loggers import plackett_luce_marginals


@pytest.fixture(scope="module")
def data():
    return customobj.data.synthetic(30, 8, 4, seed=0)


def _log(data, **kw):
    return customobj.data.simulate_clicks(data, ranker=data.X[:, 0], click_model="trust", sessions=400, seed=2,
                                          shown=5, **kw)


def test_deterministic_logger_is_the_production_order(data):
    log = _log(data)
    assert not log.randomised.any() and np.all(log.logging_prob == 1.0) and np.all(log.ranker_id == 0)
    plain = customobj.data.simulate_clicks(data, ranker=data.X[:, 0], click_model="trust", sessions=400, seed=2, shown=5)
    np.testing.assert_array_equal(log.row, plain.row)
    np.testing.assert_array_equal(log.y, plain.y)


@pytest.mark.parametrize("logger", ["randomised", "swap"])
def test_interventions_mark_their_sessions_and_their_probabilities_match_the_counts(data, logger):
    log = _log(data, logger=logger, explore=0.4)
    det = _log(data)
    share = log.randomised.reshape(-1, 5)[:, 0].mean()
    assert abs(share - 0.4) < 0.05
    moved = log.row != det.row
    assert not moved[~log.randomised].any() and moved[log.randomised].any()
    # a document's frequency at each position matches its logging probability
    first = log.qid == 0
    for r, k in set(zip(log.row[first].tolist(), log.position[first].tolist())):
        freq = np.mean(log.row[first & (log.position == k)] == r)
        p = log.logging_prob[first & (log.row == r) & (log.position == k)][0]
        assert abs(freq - p) < 0.08


def test_plackett_luce_marginals_match_the_exact_probabilities():
    s, temperature = np.array([1.0, 0.2, -0.5, 0.0]), 0.8
    w = np.exp(s / temperature)
    exact = np.zeros((4, 2))
    for order in itertools.permutations(range(4), 2):
        left, p = list(range(4)), 1.0
        for d in order:
            p *= w[d] / w[left].sum()
            left.remove(d)
        for k, d in enumerate(order):
            exact[d, k] += p
    est = plackett_luce_marginals(s, [4], temperature=temperature, shown=2, samples=40000, seed=0)
    np.testing.assert_allclose(est, exact, atol=0.01)


def test_stochastic_logger_varies_the_shown_rows(data):
    log = _log(data, logger="stochastic", temperature=0.3, samples=500)
    assert len({tuple(log.row[i * 5:(i + 1) * 5]) for i in range(400)}) > 1
    assert np.all((log.logging_prob > 0) & (log.logging_prob <= 1))
    hot = _log(data, logger="stochastic", temperature=100.0, samples=500)
    assert hot.logging_prob.mean() < log.logging_prob.mean()  # hotter: closer to uniform


@pytest.mark.parametrize("kw, exc, match", [
    (dict(logger="random"), ValueError, "logger"),
    (dict(logger="swap", explore=1.5), ValueError, "explore"),
    (dict(logger="stochastic", temperature=0.0), ValueError, "temperature"),
    (dict(ranker_id=-1), ValueError, "ranker_id"),
    (dict(samples=0), ValueError, "samples"),
])
def test_bad_options_are_refused(data, kw, exc, match):
    with pytest.raises(exc, match=match):
        _log(data, **kw)
