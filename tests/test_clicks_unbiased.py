"""Tests of customobj/clicks/unbiased.py (Unbiased), with its kernels customobj/clicks/_unbiased_kernels.py
(the pair sources of customobj/clicks/_pairs.py: tests/test_clicks_pairs.py): against the wrapped
objective (unit propensities), a slow reference of the debiasing and of eq. 30-31, finite
differences, XGBoost's lambdarank_unbiased, and the three trainers."""
from __future__ import annotations

import json

import numpy as np
import pytest

import customobj
from customobj import LambdaRank, MPBoost, QBRank, RankNet, RankSVM, Unbiased, adapters
from test_objectives_parity import assert_same_xgb_model

BASES = {
    "lambdarank": LambdaRank(),
    "lambdarank_norm_k5": LambdaRank(norm=True, k=5),
    "lambdarank_err": LambdaRank(metric="err"),
    "lambdarank_map": LambdaRank(metric="map"),
    "lambdarank_mrr": LambdaRank(metric="mrr"),
    "like_xgboost": LambdaRank.like_xgboost(),
    "like_lightgbm": LambdaRank.like_lightgbm(),
    "ranknet": RankNet(sigma=2.0),
    "ranksvm": RankSVM(),
    "mpboost": MPBoost(ddf="logdd"),
    "qbrank": QBRank(w=0.7),
    "sum": LambdaRank() + 0.5 * RankNet() + customobj.SquaredError(),
}


@pytest.fixture(scope="module")
def log():
    d = customobj.data.synthetic(30, 14, 5, seed=3)
    return customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=3, seed=4)


def _scores(n, seed=0):
    return np.random.default_rng(seed).normal(size=n)


@pytest.mark.parametrize("name", sorted(BASES))
def test_unit_propensities_give_the_wrapped_objective(log, name):
    base = BASES[name]
    s = _scores(log.y.size)
    w = np.repeat(np.random.default_rng(1).uniform(0.5, 2.0, log.group.size), log.group)
    g0, h0 = base.grad_hess(s, log.y, log.group, w)
    obj = Unbiased(base, propensity=np.ones(10), query_norm=False)
    g1, h1 = obj.grad_hess(s, log.y, log.group, w)
    np.testing.assert_allclose(g1, g0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h1, h0, rtol=1e-10, atol=1e-12)
    assert obj.loss(s, log.y, log.group, w) == pytest.approx(base.loss(s, log.y, log.group, w), rel=1e-10)
    if base.pairwise and not isinstance(base, customobj.Sum):
        i0, j0, c0 = base.pair_couplings(s, log.y, log.group)
        i1, j1, c1 = obj.pair_couplings(s, log.y, log.group)
        order0, order1 = np.lexsort((j0, i0)), np.lexsort((j1, i1))
        np.testing.assert_array_equal(i1[order1], i0[order0])
        np.testing.assert_allclose(c1[order1], c0[order0], rtol=1e-10, atol=1e-14)


def _reference_ranknet(s, y, sizes, pos, tplus, tminus, sigma=1.0, swapped=True, query_norm=True):
    """Slow reference: every clicked/unclicked pair of RankNet divided by t+ t-, each query's terms
    times log2(1 + S) / S (S: its debiased 2 lambda; with ``query_norm``), and eq. 30-31."""
    g, h = np.zeros_like(s), np.zeros_like(s)
    k = tplus.size
    li, lj = np.zeros(k), np.zeros(k)
    start = 0
    for n in sizes:
        qg, qh, total = np.zeros_like(s), np.zeros_like(s), 0.0
        for a in range(start, start + n):
            for b in range(start, start + n):
                if y[a] <= y[b]:
                    continue
                d = s[a] - s[b]
                rho = 1.0 / (1.0 + np.exp(sigma * d))
                u = 1.0 / (tplus[pos[a]] * tminus[pos[b]]) if pos[a] < k and pos[b] < k else 1.0
                qg[a] -= u * sigma * rho
                qg[b] += u * sigma * rho
                qh[a] += u * sigma**2 * rho * (1 - rho)
                qh[b] += u * sigma**2 * rho * (1 - rho)
                total += 2.0 * u * sigma * rho
                if pos[a] < k and pos[b] < k:
                    cost = np.log1p(np.exp(sigma * d if swapped else -sigma * d))
                    li[pos[a]] += cost / tminus[pos[b]]
                    lj[pos[b]] += cost / tplus[pos[a]]
        f = np.log2(1.0 + total) / total if query_norm and total > 0 else 1.0
        g += f * qg
        h += f * qh
        start += n
    return g, h, np.sqrt(li / li[0]), np.sqrt(lj / lj[0])


@pytest.mark.parametrize("cost", ["swapped", "loss"])
def test_debiasing_and_estimate_match_a_slow_reference(log, cost):
    s = _scores(log.y.size, 2)
    obj = Unbiased(RankNet(), n_positions=6, cost=cost)  # positions 6..9 untracked: their pairs keep weight 1
    prep = obj.prepare(log.y, log.group)
    pos = log.position
    swapped = cost == "swapped"
    g1, h1 = obj.grad_hess_prepared(s, prep)  # round 1: t = 1, then the estimate
    rg, rh, tp, tm = _reference_ranknet(s, log.y, log.group, pos, np.ones(6), np.ones(6), swapped=swapped)
    np.testing.assert_allclose(g1, rg, atol=1e-12)
    fitted = obj.fitted_attributes(prep)
    np.testing.assert_allclose(fitted["position_bias_"], tp, rtol=1e-12)
    np.testing.assert_allclose(fitted["position_bias_unclicked_"], tm, rtol=1e-12)
    g2, h2 = obj.grad_hess_prepared(s, prep)  # round 2 uses round 1's estimate
    rg2, rh2, _, _ = _reference_ranknet(s, log.y, log.group, pos, tp, tm, swapped=swapped)
    np.testing.assert_allclose(g2, rg2, atol=1e-12)
    np.testing.assert_allclose(h2, rh2, atol=1e-12)
    assert not np.allclose(g2, g1)


@pytest.mark.parametrize("base", [RankNet(sigma=1.5), RankSVM(margin=0.5), QBRank(w=0.4)], ids=repr)
def test_gradient_is_the_derivative_of_the_debiased_loss(log, base):
    obj = Unbiased(base, propensity=1.0 / np.arange(1.0, 11.0), query_norm=False)  # no frozen factors
    s = _scores(log.y.size, 5)
    g, _ = obj.grad_hess(s, log.y, log.group)
    prep = obj.prepare(log.y, log.group)
    eps = 1e-6
    for r in np.random.default_rng(0).choice(log.y.size, 8, replace=False):
        e = np.zeros_like(s)
        e[r] = eps
        fd = (obj.loss_prepared(s + e, prep) - obj.loss_prepared(s - e, prep)) / (2 * eps)
        assert fd == pytest.approx(g[r], rel=1e-5, abs=1e-7)


def _reference_ips_lambdarank(s, y, sizes, pos, propensity, sigma=1.0, query_norm=False):
    """Slow reference of IPS LambdaRank (Burges' lambdas, NDCG over the whole session): every
    clicked/unclicked pair's lambda and hessian divided by the clicked row's propensity, ``t- = 1``;
    with ``query_norm`` each session's terms times log2(1 + S) / S, S its debiased 2 lambda."""
    g, h = np.zeros_like(s), np.zeros_like(s)
    start = 0
    for n in sizes:
        rows = np.arange(start, start + n)
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(-s[rows], kind="stable")] = np.arange(n)
        disc = 1.0 / np.log2(2.0 + rank)
        gain = 2.0 ** y[rows] - 1.0
        ideal = np.sum(np.sort(gain)[::-1] / np.log2(2.0 + np.arange(n)))
        qg, qh, total = np.zeros_like(s), np.zeros_like(s), 0.0
        for a in range(n):
            for b in range(n):
                if y[rows[a]] <= y[rows[b]]:
                    continue
                dz = abs(gain[a] - gain[b]) * abs(disc[a] - disc[b]) / ideal
                rho = 1.0 / (1.0 + np.exp(sigma * (s[rows[a]] - s[rows[b]])))
                u = 1.0 / propensity[pos[rows[a]]]
                qg[rows[a]] -= u * sigma * dz * rho
                qg[rows[b]] += u * sigma * dz * rho
                qh[rows[a]] += u * sigma**2 * dz * rho * (1 - rho)
                qh[rows[b]] += u * sigma**2 * dz * rho * (1 - rho)
                total += 2.0 * u * sigma * dz * rho
        f = np.log2(1.0 + total) / total if query_norm and total > 0 else 1.0
        g += f * qg
        h += f * qh
        start += n
    return g, h


@pytest.mark.parametrize("query_norm", [False, True])
@pytest.mark.parametrize("propensity", [np.ones(10), 1.0 / np.arange(1.0, 11.0)], ids=["unit", "1/r"])
def test_ips_lambdarank_matches_a_slow_reference(log, propensity, query_norm):
    """IPS with known propensities (issue 22, item 3) weighs each clicked/unclicked pair of
    LambdaRank by 1 / propensity of the clicked row's position and nothing else: the unit case
    pins the reference to LambdaRank itself, the 1/r case the weighting."""
    s = _scores(log.y.size, 11)
    obj = Unbiased(LambdaRank(sigma=1.5), propensity=propensity, query_norm=query_norm)
    g, h = obj.grad_hess(s, log.y, log.group)
    rg, rh = _reference_ips_lambdarank(s, log.y, log.group, log.position, propensity, sigma=1.5, query_norm=query_norm)
    np.testing.assert_allclose(g, rg, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h, rh, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(obj.fitted_attributes()["position_bias_"], propensity)  # nothing estimated


def _shuffled_within_sessions(log, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([start + rng.permutation(n) for start, n in
                           zip(np.concatenate(([0], np.cumsum(log.group)[:-1])), log.group)])


def test_given_positions_equal_the_row_order_and_shuffled_rows_are_refused(log):
    """Positions given for rows in display order train as the row order does; rows shuffled
    within a session are refused with how to order them (issue 30, point 1: never silent)."""
    s = _scores(log.y.size, 7)
    a = Unbiased(LambdaRank(norm=True))
    b = Unbiased(LambdaRank(norm=True), position=log.position)
    np.testing.assert_array_equal(b.grad_hess(s, log.y, log.group)[0], a.grad_hess(s, log.y, log.group)[0])
    np.testing.assert_array_equal(b.fitted_attributes()["position_bias_"], a.fitted_attributes()["position_bias_"])
    perm = _shuffled_within_sessions(log)
    shuffled = Unbiased(LambdaRank(norm=True), position=log.position[perm])
    with pytest.raises(ValueError, match=r"not in display order.*order each session's rows by position"):
        shuffled.grad_hess(s[perm], log.y[perm], log.group)


def test_one_based_positions_are_refused_or_taken_with_first_position(log):
    """A 1-based log used to switch the debiasing off without a word (issue 30, point 1): no row
    at position 0, so no pair at the reference position and t stayed 1 for ever."""
    s = _scores(log.y.size, 3)
    with pytest.raises(ValueError, match="first_position=1"):
        Unbiased(RankNet(), position=log.position + 1).grad_hess(s, log.y, log.group)
    with pytest.raises(ValueError, match="first_position=1"):  # positions in the prepared data: the same check
        Unbiased(RankNet()).prepare(log.y, log.group, position=log.position + 1)
    zero = Unbiased(RankNet(), position=log.position)
    one = Unbiased(RankNet(), position=log.position + 1, first_position=1)
    for _ in range(2):
        g0, _ = zero.grad_hess(s, log.y, log.group)
        g1, _ = one.grad_hess(s, log.y, log.group)
    np.testing.assert_array_equal(g1, g0)
    bias = one.fitted_attributes()["position_bias_"]
    np.testing.assert_array_equal(bias, zero.fitted_attributes()["position_bias_"])
    assert bias[0] == 1.0 and np.all(bias[1:5] < 1.0)  # an estimate, not the all-1 no-op
    with pytest.raises(ValueError, match="first_position"):  # a 0 in a log said to start at 1
        Unbiased(RankNet(), position=log.position, first_position=1).grad_hess(s, log.y, log.group)


def test_fitted_attributes_are_not_options(log):
    a, b = Unbiased(RankNet()), Unbiased(RankNet())
    a.grad_hess(_scores(log.y.size), log.y, log.group)
    assert a == b and hash(a) == hash(b)
    assert "position_bias_" not in repr(a)
    assert Unbiased(RankNet(), bias_norm=0.0) != a and Unbiased(RankNet(), cost="loss") != a
    assert Unbiased(RankNet(), query_norm=False) != a


@pytest.fixture(scope="module")
def mq_clicks(data_dir):
    from customobj.data import load_letor

    tr = load_letor(data_dir / "mq2008" / "Fold1" / "train.txt.gz")
    return customobj.data.simulate_clicks(tr, ranker=tr.X[:, 0], sessions=2, seed=0)


@pytest.mark.parametrize("bias_norm", [1.0, 0.5])
def test_parity_with_xgboost_lambdarank_unbiased(mq_clicks, bias_norm):
    import xgboost as xgb

    rounds = 10
    dtrain = xgb.DMatrix(mq_clicks.X, mq_clicks.y, group=mq_clicks.group)
    common = dict(tree_method="hist", max_depth=6, eta=0.1, nthread=2, base_score=0.0)
    native = xgb.train(dict(common, objective="rank:ndcg", lambdarank_unbiased=True,
                            lambdarank_bias_norm=bias_norm), dtrain, rounds)
    config = json.loads(native.save_config())["learner"]["objective"]
    obj = Unbiased(LambdaRank.like_xgboost(), bias_norm=bias_norm, n_positions=32)  # XGBoost's topk: 32 tracked
    f = adapters.xgboost_objective(obj)
    ours = xgb.train(adapters.xgboost_params(obj, common), dtrain, rounds, obj=f)
    # float32 pairs in XGBoost (measured: 9e-8 at 10 rounds)
    assert_same_xgb_model(ours, native, mq_clicks.X, min_spread=0.5, atol=1e-5)
    # XGBoost stores ti+ / tj- as float32 (and they hold the update after the last round, as ours)
    fitted = f.fitted_attributes(dtrain)  # after xgboost.train: the callable's, per training DMatrix
    np.testing.assert_allclose(fitted["position_bias_"], np.array(config["ti+"], float), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(fitted["position_bias_unclicked_"], np.array(config["tj-"], float), rtol=1e-5, atol=1e-7)
    assert fitted["position_bias_"][1] < 0.95


def test_lightgbm_reads_the_dataset_position_field(log):
    """The Dataset's position field reaches Unbiased with the prepared data; after lightgbm.train the
    estimate is read from the callable, per training Dataset. LightGBM numbers the field by first
    appearance, so a 1-based log in display order trains as the 0-based one, and rows out of display
    order (which would permute the propensity curve without a word) are refused."""
    import lightgbm as lgb

    params = dict(verbose=-1, num_leaves=7, learning_rate=0.1, deterministic=True, num_threads=1)

    def train(obj, **fields):
        f = adapters.lightgbm_objective(obj)
        ds = lgb.Dataset(fields.pop("X", log.X), fields.pop("y", log.y), group=log.group, **fields)
        lgb.train(dict(params, objective=f), ds, 3)
        return f.fitted_attributes(ds)["position_bias_"]

    own = train(Unbiased(LambdaRank(), position=log.position))
    np.testing.assert_array_equal(train(Unbiased(LambdaRank()), position=log.position), own)
    np.testing.assert_array_equal(train(Unbiased(LambdaRank()), position=log.position + 1), own)
    assert own[0] == 1.0 and np.all(own[1:5] < 1.0)
    perm = _shuffled_within_sessions(log, seed=1)
    with pytest.raises(ValueError, match="not in display order"):
        train(Unbiased(LambdaRank()), X=log.X[perm], y=log.y[perm], position=log.position[perm])


@pytest.mark.parametrize("criterion", ["ole", "wse", "se", "ole_fast", "ole_float64"])
def test_tree_booster_trains_and_estimates(log, criterion):
    booster = customobj.TreeBooster(Unbiased(LambdaRank()), criterion=criterion, n_estimators=3, num_leaves=7,
                                       verbose=False)
    booster.fit(log.X, log.y, group=log.group)
    bias = booster.position_bias_  # fitted state on the fitted model (issue 30, point 14)
    assert bias.shape == (10,) and bias[0] == 1.0 and np.all(np.isfinite(bias)) and np.all(bias[1:5] < 1.0)
    assert booster.position_bias_unclicked_.shape == (10,)
    assert np.all(np.isfinite(booster.predict(log.X)))
    with pytest.raises(AttributeError, match=r"model\.position_bias_"):  # the user's objective holds none
        booster.objective.position_bias_  # noqa: B018
    booster.set_params(objective=LambdaRank()).fit(log.X, log.y, group=log.group)
    assert not hasattr(booster, "position_bias_")  # a refit without Unbiased drops the old estimate


def test_positions_travel_in_the_prepared_data_and_a_conflict_is_refused(log):
    obj = Unbiased(RankNet(), position=log.position)
    prep = obj.prepare(log.y, log.group, position=log.position)  # the same: fine
    assert prep.position is not None and obj.grad_hess_prepared(np.zeros(log.y.size), prep)[0].shape == log.y.shape
    with pytest.raises(ValueError, match="position"):
        obj.prepare(log.y, log.group, position=log.position[::-1].copy())
    plain = Unbiased(RankNet())
    s = np.random.default_rng(0).normal(size=log.y.size)
    np.testing.assert_array_equal(plain.grad_hess_prepared(s, plain.prepare(log.y, log.group, position=log.position))[0],
                                  obj.grad_hess_prepared(s, obj.prepare(log.y, log.group))[0])
    RankNet().prepare(log.y, log.group, position=log.position)  # other objectives ignore positions


BAD = [
    (lambda y, g: Unbiased(RankNet(), position=np.arange(y.size) - 1).prepare(y, g), ValueError, "position"),
    (lambda y, g: Unbiased(RankNet(), position=np.arange(y.size) + 0.5).prepare(y, g), ValueError, "position"),
    (lambda y, g: Unbiased(RankNet(), position=np.full(y.size, 10**6)).prepare(y, g), ValueError, "position"),
    (lambda y, g: Unbiased(RankNet(), position=np.arange(y.size + 1)).prepare(y, g), ValueError, "position"),
    (lambda y, g: Unbiased(RankNet(), position=np.zeros(y.size, int)).prepare(y, g), ValueError, "inconsistent"),
    (lambda y, g: Unbiased(RankNet(), position=np.zeros(y.size, bool)).prepare(y, g), TypeError, "position"),
    (lambda y, g: Unbiased(RankNet()).prepare(y * 2, g), ValueError, "labels"),
    (lambda y, g: Unbiased(RankNet(), propensity=[1.0, 0.0]), ValueError, "propensity"),
    (lambda y, g: Unbiased(RankNet(), propensity=[1.0, np.nan]), ValueError, "propensity"),
    (lambda y, g: Unbiased(RankNet(), propensity=[1.0, -0.5]), ValueError, "propensity"),
    (lambda y, g: Unbiased(RankNet(), propensity=[]), ValueError, "propensity"),
    (lambda y, g: Unbiased(RankNet(), propensity=[1.0, 0.5], n_positions=3), ValueError, "n_positions"),
    (lambda y, g: Unbiased(RankNet(), bias_norm=-1.0), ValueError, "bias_norm"),
    (lambda y, g: Unbiased(RankNet(), cost="xgboost"), ValueError, "cost"),
    (lambda y, g: Unbiased(RankNet(), query_norm=1), TypeError, "query_norm"),
    (lambda y, g: Unbiased(RankNet(), n_positions=0), ValueError, "n_positions"),
    (lambda y, g: Unbiased(customobj.StructuredDCG() + RankNet()), TypeError, "debias"),
    (lambda y, g: Unbiased(QBRank(hessian="upper_bound")), TypeError, "debias"),
    (lambda y, g: Unbiased(Unbiased(RankNet())), TypeError, "Unbiased"),
    (lambda y, g: Unbiased("ranknet"), TypeError, "objective"),
    (lambda y, g: Unbiased(customobj.SquaredError()), TypeError, "pairwise"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_is_refused_naming_the_argument(log, case):
    make, exc, match = BAD[case]
    with pytest.raises(exc, match=match):
        make(log.y, log.group)


def test_extreme_scores_stay_finite(log):
    s = np.where(log.y > 0, -1e3, 1e3)  # every clicked row far below: couplings underflow
    for base in (LambdaRank(norm=True), RankNet(), LambdaRank.like_xgboost()):
        obj = Unbiased(base)
        for _ in range(2):
            g, h = obj.grad_hess(s, log.y, log.group)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        assert np.all(np.isfinite(obj.fitted_attributes()["position_bias_"]))


def test_estimated_propensities_track_the_examination_curve():
    """PBM clicks with examination 1/r on a weak ranker's lists: the swapped-pair estimate
    (default) is within 0.1 of 1/r at every shown position (measured: 0.07), the paper's cost
    is about its square root (measured: 0.22 off)."""
    import lightgbm as lgb

    d = customobj.data.synthetic(150, 20, 8, seed=0)
    weak = lgb.train({"objective": "lambdarank", "verbose": -1, "num_iterations": 5},
                     lgb.Dataset(d.X[:300], d.y[:300], group=[20] * 15))
    log = customobj.data.simulate_clicks(d, ranker=weak.predict(d.X), sessions=12, seed=0)
    truth = 1.0 / np.arange(1, 11)
    error = {}
    for cost in ("swapped", "loss"):
        f = adapters.lightgbm_objective(Unbiased(LambdaRank(), cost=cost))
        ds = lgb.Dataset(log.X, log.y, group=log.group)
        lgb.train({"objective": f, "verbose": -1, "learning_rate": 0.05}, ds, 50)
        error[cost] = np.abs(f.fitted_attributes(ds)["position_bias_"] - truth).max()
    assert error["swapped"] < 0.1 < error["loss"]


def test_click_kernels_take_records():
    """Issue 31, item 4: debias_pairs took 23 positional arguments; records now carry them."""
    import inspect

    from customobj.clicks import _unbiased_kernels as CK

    for kernel in (CK.debias_pairs, CK.loss_pair_terms, CK.update_propensities):
        assert len(inspect.signature(kernel.py_func).parameters) <= 12, kernel.py_func.__name__


class _TwinWorkers:
    """A ``Prepared.collective`` of two workers holding the same rows: sums double, maxima stay."""

    def __init__(self, extra_positions=0):
        self.calls = []
        self.extra = extra_positions

    def sum(self, values):
        self.calls.append("sum")
        return 2.0 * values

    def max(self, values):
        self.calls.append("max")
        return values + self.extra


def test_pooled_estimate_sums_through_the_collective_once_per_round():
    """Issue 33 item 3: eq. 30-31 are ratios of per-position sums, so twin workers (sums doubled)
    give the one-machine estimate; the positions tracked are agreed once, before the first round."""
    d = customobj.data.synthetic(20, 10, 5, seed=0)
    log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=2, seed=0)
    obj = Unbiased(LambdaRank())
    alone = obj.prepare(log.y, log.group, position=log.position)
    pooled = obj.prepare(log.y, log.group, position=log.position)
    pooled.collective = twins = _TwinWorkers()
    scores = np.zeros(log.y.size)
    for _ in range(3):
        obj.grad_hess_prepared(scores, alone)
        obj.grad_hess_prepared(scores, pooled)
        scores = scores - 0.1 * log.X[:, 1]
    obj.loss_prepared(scores, pooled)  # no estimate, no collective call
    assert twins.calls == ["max", "sum", "sum", "sum"]
    want, got = obj.fitted_attributes(alone), obj.fitted_attributes(pooled)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=0)
    assert want["position_bias_"][-1] < 1.0  # something was estimated


def test_pooled_estimate_tracks_the_positions_of_every_worker():
    d = customobj.data.synthetic(20, 10, 5, seed=0)
    log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=2, seed=0)
    obj = Unbiased(LambdaRank())
    prep = obj.prepare(log.y, log.group, position=log.position)
    k = obj.fitted_attributes(prep)["position_bias_"].size
    prep.collective = _TwinWorkers(extra_positions=3)  # another worker's longest session is 3 rows longer
    obj.grad_hess_prepared(np.zeros(log.y.size), prep)
    got = obj.fitted_attributes(prep)
    assert got["position_bias_"].size == got["position_bias_unclicked_"].size == k + 3
    np.testing.assert_array_equal(got["position_bias_"][k:], 0.0)  # no pair of this worker's there: 0, as in XGBoost
    # known propensities estimate nothing: no collective call, and nothing to pool (LightGBM on Dask takes them)
    known = Unbiased(LambdaRank(), propensity=np.linspace(1.0, 0.2, k))
    assert obj.pools_rows and not known.pools_rows and (0.5 * obj + RankNet()).pools_rows
    p2 = known.prepare(log.y, log.group, position=log.position)
    p2.collective = twins = _TwinWorkers()
    known.grad_hess_prepared(np.zeros(log.y.size), p2)
    assert twins.calls == []
