"""Property tests of every public click entry (issue 39 item 3): degenerate and extreme logs and
arguments (one row, constant or identical rows, NaN features, no clicks, all clicked, parameters at
and past their documented edges) give a finite result or one of customobj's documented errors
(``ValueError`` / ``TypeError`` themselves, not a dependency's subclass), never a LightGBM, XGBoost,
numpy or numba exception. Small ``max_examples`` and no deadline: the EM fits train real boosters."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import customobj
from customobj import adapters  # noqa: F401  (before lightgbm: OpenMP wait policy)
from customobj._validation import MAX_PROPENSITY, MIN_PROPENSITY
from customobj.clicks import Affine, RegressionEM, TrustEM, Unbiased, harvest_propensities, simulate_clicks
from customobj.metrics import click_metric, ips_dcg, ips_ndcg

FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DOCUMENTED = (ValueError, TypeError)

#: Reals at and past every documented edge of the click arguments.
EDGES = [0.0, 5e-324, 1e-320, 1e-300, MIN_PROPENSITY / 2, MIN_PROPENSITY, 1e-3, 0.5, 1.0 - MIN_PROPENSITY, 1.0,
         2.0, MAX_PROPENSITY, 1e21, 1e300, -5e-324, -1.0, np.inf, np.nan]
SCORES = st.sampled_from([0.0, 5e-324, -5e-324, 1.0, -1.0, 1e100, -1e100, 1e-300])


def _outcome(call):
    """``call()``'s result, or None when it raised one of the documented errors (any other propagates)."""
    try:
        return call()
    except DOCUMENTED as exc:
        assert type(exc) in DOCUMENTED, f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
        return None


@st.composite
def click_logs(draw, max_sessions=4, max_rows=5):
    """``(X, clicks, sizes, position)``: sessions in display order, features of a degenerate kind."""
    sizes = draw(st.lists(st.integers(1, max_rows), min_size=1, max_size=max_sessions))
    n = sum(sizes)
    position = np.concatenate([np.arange(s) for s in sizes]).astype(np.int64)
    kind = draw(st.sampled_from(["random", "constant", "identical", "nan", "some nan", "huge"]))
    rng = np.random.default_rng(draw(st.integers(0, 3)))
    X = {"random": lambda: rng.normal(size=(n, 2)), "constant": lambda: np.ones((n, 2)),
         "identical": lambda: np.tile(rng.normal(size=(1, 2)), (n, 1)), "nan": lambda: np.full((n, 2), np.nan),
         "some nan": lambda: np.where(rng.random((n, 2)) < 0.5, np.nan, rng.normal(size=(n, 2))),
         "huge": lambda: np.where(rng.random((n, 2)) < 0.5, 1e300, -1e300)}[kind]()
    clicks = draw(st.sampled_from(["random", "none", "all", "top"]))
    y = {"random": lambda: (rng.random(n) < 0.4).astype(np.float64), "none": lambda: np.zeros(n),
         "all": lambda: np.ones(n), "top": lambda: (position == 0).astype(np.float64)}[clicks]()
    return X, y, np.array(sizes, dtype=np.int64), position


def _finite_grad(obj, scores, y, sizes, weight):
    g, h = obj.grad_hess(scores, y, sizes, weight)
    assert np.isfinite(g).all() and np.isfinite(h).all() and (h >= 0).all()
    return g


WEIGHTS = st.sampled_from([None, "ones", "max", "zero"])


def _weights(kind, n):
    return {None: None, "ones": np.ones(n), "max": np.full(n, 1e50), "zero": np.zeros(n)}[kind]


@FAST
@given(click_logs(), st.sampled_from(EDGES), st.sampled_from(EDGES), SCORES, WEIGHTS,
       st.sampled_from([customobj.RankNet(), customobj.MPBoost(), customobj.LambdaRank(), 1e20 * customobj.RankSVM()]))
def test_affine(log, alpha, beta, score, weight, loss):
    X, y, sizes, position = log
    k = int(position.max()) + 1
    obj = _outcome(lambda: Affine(loss, alpha=np.full(k, alpha), beta=np.full(k, beta), position=position))
    if obj is not None:
        scores = np.where(np.arange(y.size) % 2 == 0, score, -score)
        _outcome(lambda: _finite_grad(obj, scores, y, sizes, _weights(weight, y.size)))


@FAST
@given(click_logs(), st.sampled_from(EDGES + [None]), st.sampled_from([0.0, 1.0, 1e20, 5e-324]), SCORES, WEIGHTS,
       st.sampled_from([customobj.RankNet(), customobj.LambdaRank(), customobj.RankNet() + customobj.Logistic()]))
def test_unbiased(log, p, bias_norm, score, weight, loss):
    X, y, sizes, position = log
    k = int(position.max()) + 1
    obj = _outcome(lambda: Unbiased(loss, propensity=None if p is None else np.full(k, p), bias_norm=bias_norm,
                                    position=position))
    if obj is not None:
        scores = np.where(np.arange(y.size) % 3 == 0, score, -score)
        for _ in range(2):  # a second round uses the first one's estimate
            _outcome(lambda: _finite_grad(obj, scores, y, sizes, _weights(weight, y.size)))


@FAST
@given(click_logs(), st.sampled_from(EDGES), st.sampled_from(EDGES[:12]), SCORES,
       st.sampled_from([None, 1, 3]), st.sampled_from([ips_dcg, ips_ndcg]))
def test_click_metrics(log, rho, clip, score, k, metric):
    X, y, sizes, position = log
    scores = np.where(np.arange(y.size) % 2 == 0, score, 0.0)
    value = _outcome(lambda: metric(scores, y, sizes, k, propensity=np.full(int(sizes.max()), rho), clip=clip))
    if value is not None:
        assert np.isfinite(value)
    _outcome(lambda: click_metric("ips_ndcg@3", propensity=[rho], clip=clip))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(click_logs(), st.sampled_from([RegressionEM, TrustEM]), st.sampled_from(["lightgbm", "xgboost"]),
       st.sampled_from([None, "ones", "zero", "max"]), st.sampled_from([0, 1]))
def test_em(log, cls, library, weight, first_position):
    X, y, sizes, position = log
    em = _outcome(lambda: cls(library=library, n_iter=2, n_estimators=1, min_child_samples=1).fit(
        X, y, position=position + first_position, first_position=first_position,
        sample_weight=_weights(weight, y.size)))
    if em is not None:
        assert np.isfinite(em.position_bias_).all() and np.isfinite(em.predict(X)).all()
        if cls is TrustEM:  # what it hands Affine, Affine accepts
            Affine(customobj.RankNet(), alpha=em.alpha_, beta=em.beta_)
        else:
            Unbiased(customobj.LambdaRank(), propensity=em.position_bias_)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(click_logs(), st.sampled_from(["lightgbm", "xgboost"]))
def test_affine_from_log(log, library):
    X, y, sizes, position = log
    obj = _outcome(lambda: Affine.from_log(customobj.RankNet(), X, y, position=position,
                                           em=TrustEM(library=library, n_iter=1, n_estimators=1)))
    if obj is not None:
        _finite_grad(obj, np.zeros(y.size), y, sizes, None)


GRADES = st.sampled_from([0.0, 1.0, 2.0, 1e20, 2.0**63, 1e100, 5e-324, -1.0, np.nan])


@FAST
@given(st.lists(GRADES, min_size=1, max_size=8), st.sampled_from(["pbm", "cascade", "trust", "dcm", "ubm"]),
       st.sampled_from([0, 1, 3, 10_000, 10_001, 10**12]), st.sampled_from([0.0, 5e-324, 1.0, 1e20, 1e21, np.inf]),
       st.sampled_from([(0.5,), (0.0, 1.0), (), (2.0,), (np.nan,)]), st.sampled_from([1, 2, 100_001]))
def test_simulate_clicks(grades, model, shown, eta, click_prob, sessions):
    y = np.array(grades)
    X = np.ones((y.size, 2))
    log = _outcome(lambda: simulate_clicks((X, y, [y.size]), ranker=np.arange(y.size, dtype=np.float64),
                                           click_model=model, shown=shown, eta=eta, click_prob=click_prob,
                                           sessions=sessions))
    if log is not None:
        assert np.isin(log.y, [0.0, 1.0]).all() and log.position.max(initial=0) < max(shown, 1)


@settings(max_examples=6, deadline=None)
@given(st.sampled_from(["none", "all", "top", "random"]), st.sampled_from([None, 0, 1, 2, 3, 10_001]),
       st.sampled_from(["all_pairs", "top_ratio"]), st.integers(1, 3))
def test_harvest_propensities(clicks, n_positions, estimator, n_queries):
    d = customobj.data.synthetic(n_queries, 4, 2, seed=n_queries)
    rng = np.random.default_rng(0)
    logs = [simulate_clicks(d, ranker=rng.normal(size=d.y.size), sessions=2, shown=3, seed=s) for s in range(2)]
    fill = {"none": 0.0, "all": 1.0}
    logs = [log._replace(y=np.full(log.y.size, fill[clicks]) if clicks in fill else
                         (log.position == 0).astype(np.float64) if clicks == "top" else log.y) for log in logs]
    p = _outcome(lambda: harvest_propensities(logs, n_positions=n_positions, estimator=estimator))
    if p is not None:
        Unbiased(customobj.LambdaRank(), propensity=p)  # what it hands Unbiased, Unbiased accepts


@pytest.mark.parametrize("call", [
    lambda: harvest_propensities([]), lambda: simulate_clicks(None, ranker=[0.0]),
    lambda: RegressionEM().fit(None, [1.0], position=[0]), lambda: TrustEM().fit([[1.0]], [2.0], position=[0]),
])
def test_hostile_types_get_documented_errors(call):
    with pytest.raises(DOCUMENTED):
        call()
