"""Tests of customobj/clicks/trust_anchor.py: the least-squares map against a slow reference, exact on
expected clicks, the anchored parameters' affine click metric on the labels' scale, positions given or in
session order alike, and bad input refused."""
from __future__ import annotations

import numpy as np
import pytest

from customobj.clicks.metrics import affine_dcg
from customobj.clicks.trust_anchor import _fit_map, anchor_trust

ALPHA, BETA = np.array([0.35, 0.3, 0.2, 0.12]), np.array([0.6, 0.2, 0.08, 0.03])


def _family(a, b):
    """The estimate a click-only method could give: the member of the truth's family with gamma' = a R + b."""
    return ALPHA / a, BETA - ALPHA * b / a


def _sessions(n, seed):
    rng = np.random.default_rng(seed)
    R = rng.choice([0.1, 0.5, 1.0], size=(n, ALPHA.size))
    c = (rng.random(R.shape) < ALPHA * R + BETA).astype(np.float64)
    return c.ravel(), np.full(n, ALPHA.size), R.ravel()


def test_the_map_equals_a_slow_least_squares():
    rng = np.random.default_rng(1)
    c, R = rng.random(50), rng.random(50)
    a_row, b_row = rng.uniform(0.1, 0.5, 50), rng.uniform(0.0, 0.3, 50)
    slow = np.linalg.lstsq(np.column_stack([a_row * R, a_row]), c - b_row, rcond=None)[0]
    np.testing.assert_allclose(_fit_map(c, R, a_row, b_row), slow, rtol=1e-10)


def test_expected_clicks_give_the_map_exactly():
    R = np.tile([0.1, 0.5, 1.0, 0.5], 3)
    pos = np.tile(np.arange(4), 3)
    a_hat, b_hat = _family(1.3, 0.12)
    scale, offset = _fit_map(ALPHA[pos] * R + BETA[pos], R, a_hat[pos], b_hat[pos])
    assert scale == pytest.approx(1.3, abs=1e-12) and offset == pytest.approx(0.12, abs=1e-12)


def test_the_anchored_metric_is_on_the_labels_scale():
    c, group, R = _sessions(20000, 2)  # the scale's sd is about .023 here (40 seeds: mean 1.408, sd .042 at 6000)
    a_hat, b_hat = _family(1.4, 0.15)
    fit = anchor_trust(a_hat, b_hat, c, group, R)
    assert np.abs(fit.alpha - ALPHA).max() < 0.02 and np.abs(fit.beta - BETA).max() < 0.02
    scores = np.tile([0.0, 3.0, 1.0, 2.0], group.size)
    gains_dcg = float(np.mean([np.sum(R.reshape(-1, 4)[i][[1, 3, 2, 0]] / np.log2(2 + np.arange(4)))
                               for i in range(group.size)]))
    before = affine_dcg(scores, c, group, alpha=a_hat, beta=b_hat)
    after = affine_dcg(scores, c, group, alpha=fit.alpha, beta=fit.beta)
    assert abs(after - gains_dcg) / gains_dcg < 0.03 < abs(before - gains_dcg) / gains_dcg


def test_per_position_maps_equal_a_regression_of_the_clicks_on_the_labels():
    """Per position the anchored parameters are the least squares of the clicks on (R, 1) there, whatever
    the estimate (the slow reference: numpy's polyfit per position); the estimate's shape is mended."""
    c, group, R = _sessions(3000, 5)
    pos = np.tile(np.arange(4), group.size)
    shaped = np.array([1.0, 0.7, 1.3, 0.9])  # an estimate with the wrong ratios between positions
    fit = anchor_trust(ALPHA * shaped, BETA, c, group, R, per_position=True)
    for k in range(4):
        slope, intercept = np.polyfit(R[pos == k], c[pos == k], 1)
        assert fit.alpha[k] == pytest.approx(slope, rel=1e-9) and fit.beta[k] == pytest.approx(intercept, rel=1e-9)
    assert np.abs(fit.alpha - ALPHA).max() < 0.03
    pooled = anchor_trust(ALPHA * shaped, BETA, c, group, R)
    assert np.abs(pooled.alpha - ALPHA).max() > 0.05 and np.ptp(pooled.scale) == 0.0


def test_a_position_with_one_relevance_keeps_the_pooled_map():
    c, group, R = _sessions(400, 6)
    R = R.reshape(-1, 4)
    R[:, 3] = 0.5
    pooled = anchor_trust(ALPHA, BETA, c, group, R.ravel())
    each = anchor_trust(ALPHA, BETA, c, group, R.ravel(), per_position=True)
    assert each.scale[3] == pooled.scale[3] and each.scale[0] != pooled.scale[0]


def test_given_positions_equal_the_session_order():
    c, group, R = _sessions(300, 3)
    a_hat, b_hat = _family(1.2, 0.05)
    flip = np.arange(c.size).reshape(-1, 4)[:, ::-1].ravel()  # rows of each session listed bottom first
    pos = np.tile(np.arange(4), group.size)
    ordered = anchor_trust(a_hat, b_hat, c, group, R)
    given = anchor_trust(a_hat, b_hat, c[flip], group, R[flip], position=pos[flip])
    np.testing.assert_allclose(given.alpha, ordered.alpha, rtol=1e-12)
    np.testing.assert_allclose(given.beta, ordered.beta, rtol=1e-12)
    assert ordered.n_rows == c.size


@pytest.mark.parametrize("change, match", [
    (dict(relevance=np.full(8, 0.5)), "two values"),
    (dict(relevance=np.zeros(7)), "relevance"),
    (dict(clicks=np.full(8, 2.0)), "clicks"),
    (dict(group=[8]), "position"),  # positions 0..7 but alpha has four
    (dict(alpha=[0.0, 0.3, 0.2, 0.1]), "alpha"),
    (dict(position=[0, 0, 1, 2, 0, 1, 2, 3]), "position"),
    (dict(per_position=1), "per_position"),
])
def test_bad_input_is_refused(change, match):
    kw = dict(alpha=ALPHA, beta=BETA, clicks=np.array([1, 0, 0, 1, 1, 1, 0, 0.0]), group=[4, 4],
              relevance=np.array([1.0, 0.1, 0.5, 0.1, 1.0, 0.5, 0.1, 0.1]))
    kw.update(change)
    with pytest.raises(TypeError if match == "per_position" else ValueError, match=match):
        anchor_trust(kw.pop("alpha"), kw.pop("beta"), kw.pop("clicks"), kw.pop("group"), kw.pop("relevance"), **kw)


def test_labels_against_the_clicks_are_refused():
    c, group, R = _sessions(500, 4)
    with pytest.raises(ValueError, match="scale"):
        anchor_trust(ALPHA, BETA, c, group, 1.0 - R)


def test_an_anchored_alpha_near_zero_is_refused_not_returned():
    """At position 2 the labelled clicks do not depend on the relevance (never clicked): its map's scale is 0,
    an anchored alpha the corrected clicks would be divided by; refused, naming the position."""
    rel = np.tile([[1.0, 0.1, 0.1, 1.0], [0.1, 1.0, 1.0, 0.1]], (25, 1)).ravel()
    clicks = (rel > 0.5).astype(np.float64)
    clicks[2::4] = 0.0
    anchor_trust(ALPHA, BETA, clicks, np.full(50, 4), rel)  # one map for all: fine
    with pytest.raises(ValueError, match="position 2"):
        anchor_trust(ALPHA, BETA, clicks, np.full(50, 4), rel, per_position=True)
