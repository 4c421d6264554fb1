"""Robustness of the click package at its documented edges (issue 39 items 1-3): every numeric argument
of ``customobj.clicks`` and the click metrics checked before use (the floor ``MIN_PROPENSITY`` of what
a click is divided by, ``simulate_clicks``' ``shown``, grades beyond the click table), finite outputs at
the edges, estimators handing their partners only what the partners accept (``TrustEM`` -> ``Affine``,
harvesting -> ``Unbiased``, and its advice), the EM estimators on logs no tree can split, and the public
calls' cache never holding a stale view of the caller's labels."""
import numpy as np
import pytest

import customobj
from customobj import adapters  # noqa: F401  (before lightgbm: OpenMP wait policy)
from customobj._validation import MAX_PROPENSITY, MIN_PROPENSITY, PARAM_LIMIT, WEIGHT_LIMIT
from customobj.clicks import Affine, RegressionEM, TrustEM, Unbiased, harvest_propensities, simulate_clicks
from customobj.clicks._inputs import MAX_POSITION
from customobj.clicks.regression_em import ConstantRelevance
from customobj.clicks.simulation import trust_defaults
from customobj.metrics import click_metric, ips_dcg, ips_ndcg
from customobj.objectives._pairwise_terms import TINY_PROPENSITY

S = np.array([0.3, -1.0, 2.0, 0.1, 0.5, -0.2])
CLICKS = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
G = [3, 3]
PAIR_LOSSES = [customobj.RankNet(), customobj.MPBoost(), customobj.RankSVM(), customobj.LambdaRank(),
               customobj.LambdaRank(norm=True), PARAM_LIMIT * customobj.RankNet(),
               customobj.RankNet() + 2.0 * customobj.MPBoost()]
TINY = [1e-300, 1e-320, 5e-324, MIN_PROPENSITY / 2]


def test_one_floor_for_every_division_by_a_propensity():
    assert TINY_PROPENSITY == MIN_PROPENSITY == 1e-16 and MAX_PROPENSITY == PARAM_LIMIT


# --- Affine's alpha / beta ------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", TINY)
def test_affine_refuses_alpha_below_the_floor(alpha):
    with pytest.raises(ValueError, match=r"alpha must be finite and in \[1e-16, 1e\+20\].*position 1"):
        Affine(customobj.RankNet(), alpha=[1.0, alpha, 0.5], beta=[0.0, 0.0, 0.0])


@pytest.mark.parametrize("loss", PAIR_LOSSES, ids=repr)
@pytest.mark.parametrize("beta", [0.0, 5e-324, 1.0 - MIN_PROPENSITY])
def test_affine_finite_at_the_alpha_floor_with_the_largest_weights_and_scores(loss, beta):
    obj = Affine(loss, alpha=[MIN_PROPENSITY] * 3, beta=[beta] * 3)
    for scores in (S, np.zeros(6), np.array([1e100, -1e100, 0.0, 5e-324, -1e100, 1e100])):
        for weight in (None, np.full(6, WEIGHT_LIMIT), np.array([WEIGHT_LIMIT, 5e-324, 0.0, 1.0, 0.0, 0.0])):
            for clicks in (CLICKS, np.zeros(6), np.ones(6)):
                g, h = obj.grad_hess(scores, clicks, G, weight)
                assert np.isfinite(g).all() and np.isfinite(h).all() and (h >= 0).all()
                i, j, c = obj.pair_couplings(scores, clicks, G)
                assert np.isfinite(c).all()


def test_affine_refuses_beta_denormal_negative_and_a_relevant_click_rate_above_one():
    Affine(customobj.RankNet(), alpha=[1.0, 0.5], beta=[0.0, 5e-324])  # the smallest beta above 0: accepted
    with pytest.raises(ValueError, match="beta must be finite and >= 0"):
        Affine(customobj.RankNet(), alpha=[1.0, 0.5], beta=[0.0, -5e-324])
    with pytest.raises(ValueError, match="alpha \\+ beta .* <= 1"):
        Affine(customobj.RankNet(), alpha=[1.0, 0.5], beta=[1e-9, 0.0])


# --- Unbiased's propensity --------------------------------------------------------------------------
@pytest.mark.parametrize("p", TINY + [1e21, np.inf])
def test_unbiased_refuses_a_propensity_outside_its_range(p):
    with pytest.raises(ValueError, match=r"propensity must be finite and in \[1e-16, 1e\+20\]"):
        Unbiased(customobj.LambdaRank(), propensity=[1.0, p, 0.5])


@pytest.mark.parametrize("p", [MIN_PROPENSITY, MAX_PROPENSITY])
def test_unbiased_finite_at_the_propensity_edges(p):
    obj = Unbiased(customobj.RankNet() + customobj.LambdaRank(), propensity=[p, p, p])
    g, h = obj.grad_hess(np.array([1e100, -1e100, 0.0, 0, 0, 0]), CLICKS, G, np.full(6, WEIGHT_LIMIT))
    assert np.isfinite(g).all() and np.isfinite(h).all()


# --- the click metrics --------------------------------------------------------------------------------
@pytest.mark.parametrize("clip", TINY)
@pytest.mark.parametrize("metric", [ips_dcg, ips_ndcg])
def test_click_metrics_refuse_clip_below_the_floor(metric, clip):
    with pytest.raises(ValueError, match=r"clip must be in \[1e-16, 1\]"):
        metric(S, CLICKS, G, propensity=[0.0, 0.0, 0.0], clip=clip)
    with pytest.raises(ValueError, match=r"clip must be in \[1e-16, 1\]"):
        click_metric("ips_ndcg@3", propensity=[1.0], clip=clip)


@pytest.mark.parametrize("rho", [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [5e-324] * 3, [MAX_PROPENSITY] * 3,
                                 [MAX_PROPENSITY, 0.0, 5e-324]])
@pytest.mark.parametrize("scores", [S, np.zeros(6), np.full(6, 1e100)])
def test_click_metrics_finite_at_the_clip_floor(rho, scores):
    for clicks in (CLICKS, np.ones(6)):
        d = ips_dcg(scores, clicks, G, propensity=rho, clip=MIN_PROPENSITY, per_query=True)
        n = ips_ndcg(scores, clicks, G, propensity=rho, clip=MIN_PROPENSITY)
        assert np.isfinite(d).all() and 0.0 <= n <= 1.0 + 1e-12


def test_click_metrics_refuse_a_propensity_above_the_limit():
    with pytest.raises(ValueError, match=r"propensity must be .* in \[0, 1e\+20\]"):
        ips_dcg(S, CLICKS, G, propensity=[1.0, 1e21, 1.0])


# --- simulate_clicks -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    return customobj.data.synthetic(4, 5, 3, seed=0)


@pytest.mark.parametrize("shown", [10**12, MAX_POSITION + 1])
def test_simulate_clicks_refuses_shown_before_allocating(small, shown):
    with pytest.raises(ValueError, match="shown must be <= 10000"):
        simulate_clicks(small, ranker=small.X[:, 0], shown=shown, click_model="trust")
    with pytest.raises(ValueError, match="shown must be <= 10000"):
        trust_defaults(shown)


def test_simulate_clicks_at_the_largest_shown(small):
    log = simulate_clicks(small, ranker=small.X[:, 0], shown=MAX_POSITION, click_model="trust", sessions=2)
    assert log.position.max() == 4 and np.isin(log.y, [0.0, 1.0]).all()


@pytest.mark.parametrize("grade", [1e20, 2.0**63, 1e100])
def test_simulate_clicks_grades_beyond_a_short_table_use_its_last_entry(small, grade):
    y = np.array(small.y, dtype=np.float64)
    y[y > 0] = grade
    capped = np.where(y > 0, 1.0, 0.0)
    for model in ("pbm", "cascade", "trust", "dcm", "ubm"):
        got = simulate_clicks((small.X, y, small.group), ranker=small.X[:, 0], click_prob=(0.0, 1.0),
                              click_model=model, seed=3)
        want = simulate_clicks((small.X, capped, small.group), ranker=small.X[:, 0], click_prob=(0.0, 1.0),
                               click_model=model, seed=3)
        np.testing.assert_array_equal(got.y, want.y)


# --- estimators feeding estimators ----------------------------------------------------------------------
def _always_clicked_top(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    pos = np.tile(np.arange(4), n // 4)
    clicks = np.where(pos == 0, 1.0, (rng.random(n) < 0.2).astype(np.float64))
    return X, clicks, pos


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_trust_em_on_an_always_clicked_top_gives_what_affine_accepts(library):
    X, clicks, pos = _always_clicked_top()
    em = TrustEM(library=library, n_iter=3, n_estimators=3).fit(X, clicks, position=pos)
    assert (em.alpha_ + em.beta_ <= 1.0).all() and (em.alpha_ > 0).all() and (em.beta_ >= 0).all()
    obj = Affine.from_log(customobj.RankNet(), X, clicks, position=pos, em=TrustEM(library=library, n_iter=3,
                                                                                   n_estimators=3))
    np.testing.assert_array_equal(obj.alpha, em.alpha_)


def _harvest_logs(zero_top: bool):
    d = customobj.data.synthetic(60, 6, 3, seed=1)
    rng = np.random.default_rng(0)
    logs = [simulate_clicks(d, ranker=d.y + rng.normal(0, 2, d.y.size), sessions=6, shown=4, seed=s) for s in range(3)]
    if zero_top:
        logs = [log._replace(y=np.where(log.position == 0, 0.0, log.y)) for log in logs]
    return logs


def test_harvest_never_advises_fewer_than_two_positions():
    with pytest.raises(ValueError, match="no click at position 1") as info:
        harvest_propensities(_harvest_logs(zero_top=True))
    assert "n_positions=0" not in str(info.value) and "n_positions=1" not in str(info.value)


def test_harvested_propensities_are_what_unbiased_accepts():
    p = harvest_propensities(_harvest_logs(zero_top=False))
    obj = Unbiased(customobj.LambdaRank(), propensity=p)
    np.testing.assert_array_equal(obj.propensity, p)


def test_regression_em_propensities_are_what_unbiased_accepts():
    X, clicks, pos = _always_clicked_top()
    em = RegressionEM(n_iter=2, n_estimators=2).fit(X, 1.0 - clicks, position=pos)  # the top never clicked
    Unbiased(customobj.LambdaRank(), propensity=em.position_bias_)


# --- logs no tree can split ------------------------------------------------------------------------------
def _unsplittable():
    X, clicks, pos = _always_clicked_top(40)
    return {"one row": (X[:1], clicks[:1], pos[:1]), "constant": (np.ones((40, 3)), clicks, pos),
            "identical rows": (np.tile(X[:1], (8, 1)), clicks[:8], pos[:8]),
            "all-NaN features": (np.full((40, 2), np.nan), clicks, pos),
            "no clicks": (np.ones((40, 2)), np.zeros(40), pos), "all clicked": (np.ones((40, 2)), np.ones(40), pos)}


@pytest.mark.parametrize("case", list(_unsplittable()))
@pytest.mark.parametrize("cls", [RegressionEM, TrustEM])
@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_em_fits_a_constant_relevance_where_no_tree_can_split(case, cls, library):
    X, clicks, pos = _unsplittable()[case]
    em = cls(library=library, n_iter=2, n_estimators=2).fit(X, clicks, position=pos)
    assert np.isfinite(em.position_bias_).all() and em.position_bias_[0] == 1.0
    pred = em.predict(X)
    assert pred.shape == (X.shape[0],) and np.isfinite(pred).all()
    assert em.n_trees_ == 4
    if library == "lightgbm":
        assert isinstance(em.ranker_, ConstantRelevance) and np.ptp(pred) == 0.0


@pytest.mark.parametrize("X, match", [(np.zeros((6, 0)), "at least one feature"), (np.zeros(6), "2-D"),
                                      (np.full((6, 2), np.inf), "finite and within float32"),
                                      (np.full((6, 2), -1e300), "X holds -1e.300"), (np.array([["a"]] * 6), "X must be numeric")])
def test_em_refuses_features_it_cannot_read_naming_x(X, match):
    with pytest.raises((ValueError, TypeError), match=match):
        RegressionEM(n_iter=1, n_estimators=1).fit(X, CLICKS, position=[0, 1, 2, 0, 1, 2])


def test_em_refuses_an_empty_log_and_all_zero_weights():
    with pytest.raises(ValueError, match="y is empty"):
        TrustEM(n_iter=1).fit(np.zeros((0, 2)), [], position=[])
    with pytest.raises(ValueError, match="sample_weight is 0 on every row"):
        RegressionEM(n_iter=1).fit(np.ones((6, 2)), CLICKS, position=[0, 1, 2, 0, 1, 2], sample_weight=np.zeros(6))


# --- the public calls' cache -----------------------------------------------------------------------------
@pytest.mark.parametrize("wrapped", [customobj.RankNet(), customobj.LambdaRank()], ids=repr)
def test_unbiased_notices_labels_edited_in_place_between_public_calls(wrapped):
    labels = CLICKS.copy()
    weight = np.ones(6)
    obj = Unbiased(wrapped)
    obj.grad_hess(S, labels, G, weight)
    labels[:] = 1.0 - labels
    labels[2] = 1.0
    weight[0] = 3.0
    g, h = obj.grad_hess(S, labels, G, weight)
    want_g, want_h = Unbiased(wrapped).grad_hess(S, labels.copy(), G, weight.copy())
    np.testing.assert_array_equal(g, want_g)
    np.testing.assert_array_equal(h, want_h)


def test_unbiased_rounds_still_go_on_while_the_labels_are_unchanged():
    labels = CLICKS.copy()
    obj = Unbiased(customobj.LambdaRank())
    for _ in range(3):
        obj.grad_hess(S, labels, G)
    assert obj.fitted_attributes()["position_bias_"].shape == (3,)
    first = obj.__dict__["_last_prep"]
    obj.grad_hess(S, labels.copy(), G)
    assert obj.__dict__["_last_prep"] is first and not np.shares_memory(first.labels, labels)



@pytest.mark.parametrize("cls", [RegressionEM, TrustEM])
@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_em_takes_the_largest_weights_the_libraries_hold_as_float32(cls, library):
    X, clicks, pos = _always_clicked_top(40)
    w = np.full(40, WEIGHT_LIMIT)
    w[::3] = 5e-324
    em = cls(library=library, n_iter=2, n_estimators=2).fit(X, clicks, position=pos, sample_weight=w)
    assert np.isfinite(em.position_bias_).all() and np.isfinite(em.predict(X)).all()


# --- the GPU click paths accept and refuse what the CPU does (issue 39 item 4), under the simulator -------
def _outcome_of(call):
    """``("ok", (grad, hess))`` or ``(error type, message)``."""
    try:
        g, h = call()
    except (ValueError, TypeError, NotImplementedError) as exc:
        return type(exc), str(exc)
    return "ok", (np.asarray(g.copy_to_host() if hasattr(g, "copy_to_host") else g),
                  np.asarray(h.copy_to_host() if hasattr(h, "copy_to_host") else h))


_POS = np.array([0, 1, 2, 0, 1, 2])
DEVICE_CASES = {
    "Affine without parameters": (lambda: Affine(customobj.RankNet()), S, CLICKS, None),
    "Affine, labels not clicks": (lambda: Affine(customobj.RankNet(), alpha=[1.0] * 3, beta=[0.0] * 3),
                                  S, np.array([2.0, 0, 0, 0, 1, 0]), None),
    "Affine, a position without alpha": (lambda: Affine(customobj.RankNet(), alpha=[1.0] * 2, beta=[0.0] * 2,
                                                        position=_POS), S, CLICKS, None),
    "Affine, rows out of display order": (lambda: Affine(customobj.LambdaRank(), alpha=[1.0] * 3, beta=[0.0] * 3,
                                                         position=np.array([0, 2, 1, 0, 1, 2])), S, CLICKS, None),
    "Affine, scores past the limit": (lambda: Affine(customobj.RankNet(), alpha=[1.0] * 3, beta=[0.0] * 3),
                                      np.array([1e101, 0, 0, 0, 0, 0]), CLICKS, None),
    "Affine at the alpha floor, largest weights": (
        lambda: Affine(customobj.RankNet() + customobj.LambdaRank(), alpha=[MIN_PROPENSITY] * 3, beta=[0.0] * 3),
        np.array([1e100, -1e100, 0.0, 5e-324, 0, 0]), CLICKS, np.full(6, WEIGHT_LIMIT)),
    "Unbiased, labels not clicks": (lambda: Unbiased(customobj.LambdaRank()), S, np.array([0.5, 0, 0, 0, 1, 0]), None),
    "Unbiased, no row at the top": (lambda: Unbiased(customobj.RankNet(), position=_POS + 1), S, CLICKS, None),
    "Unbiased, NaN weight": (lambda: Unbiased(customobj.RankNet()), S, CLICKS, np.array([np.nan, 1, 1, 1, 1, 1])),
    "Unbiased at the propensity floor, largest weights": (
        lambda: Unbiased(customobj.RankNet() + customobj.LambdaRank(), propensity=[MIN_PROPENSITY] * 3),
        np.array([1e100, -1e100, 0.0, 5e-324, 0, 0]), CLICKS, np.full(6, WEIGHT_LIMIT)),
}


@pytest.mark.parametrize("case", list(DEVICE_CASES))
def test_gpu_click_paths_accept_and_refuse_what_the_cpu_does(case):
    from _cuda_cases import STATUS, to_device

    if not STATUS.available:
        pytest.skip(f"no GPU and no CUDA simulator: {STATUS.reason}")
    make, scores, labels, weight = DEVICE_CASES[case]
    cpu = _outcome_of(lambda: make().grad_hess(scores, labels, G, weight))
    gpu = _outcome_of(lambda: make().grad_hess(to_device(scores), labels, G, weight))
    assert cpu[0] == gpu[0], (cpu, gpu)
    if cpu[0] == "ok":
        for c, d in zip(cpu[1], gpu[1]):
            assert np.isfinite(d).all()
            np.testing.assert_allclose(d, c, rtol=1e-9)
    else:
        assert cpu[1] == gpu[1]
