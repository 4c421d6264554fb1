"""LambdaRank's parity presets (customobj/objectives/_parity.py): the lambdas of LightGBM's
``lambdarank`` and XGBoost's ``rank:ndcg`` ("topk") against slow float64 transcriptions of the two
libraries' loops, finite differences of the loss, and the native objectives on MQ2008 Fold1."""
import doctest
import json
import math

import numpy as np
import pytest

from customobj import LambdaRank, adapters  # adapters before lightgbm / xgboost (OpenMP wait policy)
from customobj._kernel_status import KernelStatus, check_status
from customobj.objectives import _lambdarank_kernels as LK
from customobj.objectives._parity import XGBOOST_HESS_SCALE


# ---------------------------------------------------------------- slow references -----------------
def _sorted_rows(s):
    return sorted(range(len(s)), key=lambda i: -s[i])  # Python's sort is stable: ties by row order


def _idcg(gains, cutoff):
    ideal = sorted(gains, reverse=True)[:cutoff]
    return sum(g / math.log2(2 + r) for r, g in enumerate(ideal))


def ref_lightgbm(scores, labels, sizes, *, trunc=30, norm=True, sigmoid=1.0, label_gain=None, weight=None, rho=None,
                 costs=None):
    """LambdarankNDCG::GetGradientsForOneQuery (LightGBM 4.6 rank_objective.hpp), then the row
    weights of RankingObjective::GetGradients; exact sigmoid instead of the table, 0.01 for 0.01f.
    ``rho(x)``: the sigmoid ``1 / (1 + exp(sigmoid x))`` (default exact; MO-LightGBM's table in
    test_benchmark_mo_lightgbm). ``costs``: a list that gets each query's cost, the sum over its pairs of
    ``d_ndcg log(1 / rho(-delta_score))``, which MO-LightGBM's fork adds to this loop (unweighted)."""
    gain = label_gain if label_gain is not None else [2.0 ** i - 1 for i in range(31)]
    rho = rho if rho is not None else (lambda x: 1.0 / (1.0 + math.exp(sigmoid * x)))
    grad, hess = np.zeros(len(scores)), np.zeros(len(scores))
    start = 0
    for cnt in sizes:
        s, y = scores[start:start + cnt], labels[start:start + cnt]
        idcg = _idcg([gain[int(v)] for v in y], trunc)
        inv = 1.0 / idcg if idcg > 0 else 0.0
        order = _sorted_rows(s)
        best, worst = s[order[0]], s[order[-1]]
        lam, h, sum_lambdas, cost = np.zeros(cnt), np.zeros(cnt), 0.0, 0.0
        for i in range(min(cnt - 1, trunc)):
            for j in range(i + 1, cnt):
                if y[order[i]] == y[order[j]]:
                    continue
                hr, lr = (i, j) if y[order[i]] > y[order[j]] else (j, i)
                high, low = order[hr], order[lr]
                delta_score = s[high] - s[low]
                d_ndcg = (gain[int(y[high])] - gain[int(y[low])]) * inv * \
                    abs(1 / math.log2(2 + hr) - 1 / math.log2(2 + lr))
                if norm and best != worst:
                    d_ndcg /= 0.01 + abs(delta_score)
                p = rho(delta_score)
                if costs is not None:
                    cost += d_ndcg * math.log(1.0 / rho(-delta_score))
                p_lambda = -sigmoid * d_ndcg * p
                p_hess = sigmoid * sigmoid * d_ndcg * p * (1 - p)
                lam[low] -= p_lambda
                h[low] += p_hess
                lam[high] += p_lambda
                h[high] += p_hess
                sum_lambdas -= 2 * p_lambda
        if costs is not None:
            costs.append(cost)
        if norm and sum_lambdas > 0:
            factor = math.log2(1 + sum_lambdas) / sum_lambdas
            lam, h = lam * factor, h * factor
        if weight is not None:
            lam, h = lam * weight[start:start + cnt], h * weight[start:start + cnt]
        grad[start:start + cnt], hess[start:start + cnt] = lam, h
        start += cnt
    return grad, hess


def ref_xgboost(scores, labels, sizes, *, topk=32, normalization=True, score_normalization=True,
                exp_gain=True, query_weight=None):
    """LambdaRankNDCG with "topk" pairs (XGBoost 3.2 lambdarank_obj.{h,cc}: MakePairs, LambdaGrad,
    DeltaNDCG, CalcLambdaForGroup; NDCGCache::InitOnCPU), in float64 throughout."""
    w_q = np.ones(len(sizes)) if query_weight is None else query_weight
    w_norm = len(sizes) / w_q.sum()
    grad, hess = np.zeros(len(scores)), np.zeros(len(scores))
    start = 0
    for g, cnt in enumerate(sizes):
        s, y = scores[start:start + cnt], labels[start:start + cnt]
        gain = [(2.0 ** v - 1) if exp_gain else v for v in y]
        idcg = _idcg(gain, topk)
        inv = 1.0 / idcg if idcg != 0 else 0.0
        disc = [1 / math.log2(r + 2.0) for r in range(cnt)]
        rank = _sorted_rows(s)
        gg, hh, sum_lambda = np.zeros(cnt), np.zeros(cnt), 0.0
        for i in range(min(cnt, topk)):
            for j in range(i + 1, cnt):
                rh, rl = i, j
                if y[rank[rh]] == y[rank[rl]]:
                    continue
                if y[rank[rh]] < y[rank[rl]]:
                    rh, rl = rl, rh
                ih, il = rank[rh], rank[rl]
                gh, gl = gain[ih], gain[il]
                original = gh * disc[rh] + gl * disc[rl]
                changed = gl * disc[rh] + gh * disc[rl]
                delta = abs((original - changed) * inv)
                if score_normalization and s[rank[0]] != s[rank[-1]]:
                    delta /= abs(s[ih] - s[il]) + 0.01
                sig = 1.0 / (1.0 + math.exp(-(s[ih] - s[il])))
                lam = (sig - 1.0) * delta
                hes = max(sig * (1.0 - sig), 1e-16) * delta * 2.0
                gg[ih] += lam
                hh[ih] += hes
                gg[il] -= lam
                hh[il] += hes
                sum_lambda += -2.0 * lam
        if normalization and sum_lambda > 0:
            f = math.log2(1.0 + sum_lambda) / sum_lambda
            gg, hh = gg * f, hh * f
        grad[start:start + cnt], hess[start:start + cnt] = gg * w_q[g] * w_norm, hh * w_q[g] * w_norm
        start += cnt
    return grad, hess


def ref_customobj_ndcg(scores, labels, sizes, *, k, sigma=1.0):
    """customobj's default convention for comparison: D = 0 beyond k for both rows, no norm."""
    grad, hess = np.zeros(len(scores)), np.zeros(len(scores))
    start = 0
    for cnt in sizes:
        s, y = scores[start:start + cnt], labels[start:start + cnt]
        gain = [2.0 ** v - 1 for v in y]
        idcg = _idcg(gain, k)
        order = _sorted_rows(s)
        disc = [1 / math.log2(2 + r) if r < k else 0.0 for r in range(cnt)]
        for a in range(min(cnt - 1, k)):
            for b in range(a + 1, cnt):
                hi, lo = (order[a], order[b]) if y[order[a]] > y[order[b]] else (order[b], order[a])
                dz = abs(gain[hi] - gain[lo]) * (disc[a] - disc[b]) / idcg if idcg > 0 else 0.0
                rho = 1.0 / (1.0 + math.exp(sigma * (s[hi] - s[lo])))
                grad[start + hi] -= sigma * dz * rho
                grad[start + lo] += sigma * dz * rho
                hess[start + hi] += sigma ** 2 * dz * rho * (1 - rho)
                hess[start + lo] += sigma ** 2 * dz * rho * (1 - rho)
        start += cnt
    return grad, hess


def queries(seed, n_queries=12, max_size=40, max_label=4, ties=False):
    """Queries of 1..max_size rows (many longer than the truncation levels tested)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, size=n_queries)
    n = int(sizes.sum())
    y = rng.integers(0, max_label + 1, size=n).astype(float)
    s = rng.integers(0, 4, size=n).astype(float) if ties else rng.normal(scale=1.5, size=n)
    return s, y, sizes


# ---------------------------------------------------------------- lambdas vs references -----------
@pytest.mark.parametrize("params", [
    {}, {"lambdarank_truncation_level": 3}, {"lambdarank_norm": False},
    {"lambdarank_truncation_level": 7, "sigmoid": 2.5, "lambdarank_norm": False},
    {"lambdarank_truncation_level": 1000}, {"label_gain": [0.0, 1.0, 2.5, 6.0, 20.0]},
], ids=repr)
@pytest.mark.parametrize("ties", [False, True])
def test_like_lightgbm_matches_slow_reference(params, ties):
    s, y, sizes = queries(1, ties=ties)
    obj = LambdaRank.like_lightgbm(**params)
    g, h = obj.grad_hess(s, y, sizes)
    rg, rh = ref_lightgbm(s, y, sizes, trunc=params.get("lambdarank_truncation_level", 30),
                          norm=params.get("lambdarank_norm", True), sigmoid=params.get("sigmoid", 1.0),
                          label_gain=params.get("label_gain"))
    assert np.abs(rg).max() > 0.1
    np.testing.assert_allclose(g, rg, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, rh, rtol=1e-10, atol=1e-13)


def test_like_lightgbm_weights_per_query_match_its_row_weights():
    s, y, sizes = queries(2)
    w = np.repeat(np.random.default_rng(3).uniform(0.2, 3.0, size=len(sizes)), sizes)
    g, h = LambdaRank.like_lightgbm(lambdarank_truncation_level=5).grad_hess(s, y, sizes, w)
    rg, rh = ref_lightgbm(s, y, sizes, trunc=5, weight=w)
    np.testing.assert_allclose(g, rg, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, rh, rtol=1e-10, atol=1e-13)
    q = int(np.argmax(sizes >= 2))
    w[int(sizes[:q].sum()) + 1] += 1.0  # a row weight that differs within its query
    with pytest.raises(ValueError, match="one weight per query"):
        LambdaRank.like_lightgbm().grad_hess(s, y, sizes, w)


@pytest.mark.parametrize("params", [
    {}, {"lambdarank_num_pair_per_sample": 4},
    {"lambdarank_normalization": False, "lambdarank_score_normalization": False},
    {"ndcg_exp_gain": False, "lambdarank_num_pair_per_sample": 6}, {"lambdarank_num_pair_per_sample": 500},
], ids=repr)
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_like_xgboost_matches_slow_reference(params, ties, weighted):
    s, y, sizes = queries(4, ties=ties)
    wq = np.random.default_rng(5).uniform(0.2, 3.0, size=len(sizes)) if weighted else None
    obj = LambdaRank.like_xgboost(**params)
    g, h = obj.grad_hess(s, y, sizes, None if wq is None else np.repeat(wq, sizes))
    norm = params.get("lambdarank_normalization", True)
    rg, rh = ref_xgboost(s, y, sizes, topk=params.get("lambdarank_num_pair_per_sample", 32),
                         normalization=norm, score_normalization=norm,
                         exp_gain=params.get("ndcg_exp_gain", True), query_weight=wq)
    assert np.abs(rg).max() > 0.1
    np.testing.assert_allclose(g, rg, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, rh, rtol=1e-10, atol=1e-13)


def test_default_convention_cuts_both_discounts_at_k():
    """The convention is what differs: same k, same data, customobj's D = 0 beyond k."""
    s, y, sizes = queries(6)
    k = 5
    g, h = LambdaRank(k=k).grad_hess(s, y, sizes)
    rg, rh = ref_customobj_ndcg(s, y, sizes, k=k)
    np.testing.assert_allclose(g, rg, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, rh, rtol=1e-10, atol=1e-13)
    lg, _ = LambdaRank(k=k, convention="lightgbm").grad_hess(s, y, sizes)
    assert np.abs(lg - g).max() > 1e-3  # queries longer than k: the lower rows' discounts differ
    assert LambdaRank(k=k) == LambdaRank(k=k, convention="customobj") != LambdaRank(k=k, convention="lightgbm")


def test_pair_discount_table_names_its_conventions():
    cut, s1 = LK.pair_discount_table(6, 3, int(LK.Discount.AT_K))
    full, s2 = LK.pair_discount_table(6, 3, int(LK.Discount.FULL))
    want = 1.0 / np.log2(2.0 + np.arange(6))
    np.testing.assert_array_equal(full, want)
    np.testing.assert_array_equal(cut, np.where(np.arange(6) < 3, want, 0.0))
    assert s1 == s2 == KernelStatus.OK


def test_pair_discount_table_signals_an_unknown_convention():
    table, status = LK.pair_discount_table(6, 3, 7)  # no third convention: nothing computed
    assert status == KernelStatus.UNKNOWN_CODE and table.size == 0
    with pytest.raises(ValueError, match=r"status -1\)"):
        check_status(status, "pair discount")


# ---------------------------------------------------------------- derivatives ---------------------
@pytest.mark.parametrize("preset", ["lightgbm", "xgboost"])
def test_grad_is_derivative_of_loss_and_hess_scaled_as_documented(preset):
    """Without norm the lambdas are the derivative of Burges' loss with |dZ| frozen at the current
    sort, under either discount. (With norm the 1 / (0.01 + |d|) damping is not differentiated:
    those lambdas are no loss's gradient, and the reference tests above cover them.)"""
    rng = np.random.default_rng(7)
    sizes = np.array([9, 4, 12, 2])
    n = int(sizes.sum())
    s = rng.permutation(n) * 0.37 + rng.uniform(-0.05, 0.05, size=n)  # distinct, well separated
    y = rng.integers(0, 4, size=n).astype(float)
    if preset == "lightgbm":
        obj, scale = LambdaRank.like_lightgbm(lambdarank_truncation_level=3, lambdarank_norm=False), 1.0
    else:
        obj = LambdaRank.like_xgboost(lambdarank_num_pair_per_sample=3, lambdarank_normalization=False,
                                      lambdarank_score_normalization=False)
        scale = XGBOOST_HESS_SCALE
    prep = obj.prepare(y, sizes)
    grad, hess = obj.grad_hess_prepared(s, prep)
    eps = 1e-6  # far below the score gaps: the sort, hence |dZ|, stays frozen
    eye = np.eye(n) * eps
    fd = np.array([(obj.loss_prepared(s + e, prep) - obj.loss_prepared(s - e, prep)) / (2 * eps) for e in eye])
    np.testing.assert_allclose(grad, fd, atol=1e-8)
    jac = np.stack([(obj.grad_hess_prepared(s + e, prep)[0] - obj.grad_hess_prepared(s - e, prep)[0]) / (2 * eps)
                    for e in eye], axis=1)
    want = np.diag(hess)
    i, j, c = obj.pair_couplings_prepared(s, prep)
    np.add.at(want, (i, j), -c)
    np.add.at(want, (j, i), -c)
    np.testing.assert_allclose(jac * scale, want, atol=1e-7)
    assert np.abs(grad).max() > 0.01


# ---------------------------------------------------------------- native objectives ---------------
ROUNDS = 20


@pytest.fixture(scope="module")
def mq_train(data_dir):
    from customobj.data import load_letor

    return load_letor(data_dir / "mq2008" / "Fold1" / "train.txt.gz")


def _lgb_nodes(booster):
    """(feature, threshold) of every split and "leaf" for leaves, tree by tree in preorder."""
    out = []

    def walk(node):
        if "split_feature" in node:
            out.append((node["split_feature"], node["threshold"]))
            walk(node["left_child"])
            walk(node["right_child"])
        else:
            out.append("leaf")
    for tree in booster.dump_model()["tree_info"]:
        walk(tree["tree_structure"])
    return out


@pytest.mark.parametrize("params", [{}, {"lambdarank_truncation_level": 8, "sigmoid": 2.0}], ids=repr)
def test_like_lightgbm_trains_the_native_lambdarank_model(mq_train, params):
    import lightgbm as lgb
    tr = mq_train
    assert tr.group.max() > params.get("lambdarank_truncation_level", 30)  # truncation matters here
    common = dict(num_leaves=31, learning_rate=0.1, verbose=-1, num_threads=2, metric="None",
                  deterministic=True, force_row_wise=True)
    native = lgb.train(dict(common, objective="lambdarank", **params),
                       lgb.Dataset(tr.X, tr.y, group=tr.group), ROUNDS)
    obj = adapters.lightgbm_objective(LambdaRank.like_lightgbm(**params))
    ours = lgb.train(dict(common, objective=obj), lgb.Dataset(tr.X, tr.y, group=tr.group), ROUNDS)
    assert _lgb_nodes(ours) == _lgb_nodes(native)
    p_native, p_ours = native.predict(tr.X), ours.predict(tr.X)
    assert np.ptp(p_native) > 1.0
    # LightGBM's sigmoid table (2^20 bins) is the remaining difference (measured: 1.3e-5 at 20 rounds)
    np.testing.assert_allclose(p_ours, p_native, rtol=0, atol=1e-4)


def _xgb_nodes(booster):
    out = []

    def walk(node):
        if "split" in node:
            out.append((node["split"], node["split_condition"]))
            for child in node["children"]:
                walk(child)
        else:
            out.append("leaf")
    for tree in booster.get_dump(dump_format="json"):
        walk(json.loads(tree))
    return out


def assert_same_xgb_model(ours, native, X, *, min_spread, atol):
    """The same trees, split by split, and margins on ``X`` within ``atol`` (the native margins must
    spread over more than ``min_spread``, or the comparison would say little)."""
    import xgboost as xgb

    assert _xgb_nodes(ours) == _xgb_nodes(native)
    dx = xgb.DMatrix(X)
    p_native, p_ours = native.predict(dx, output_margin=True), ours.predict(dx, output_margin=True)
    assert np.ptp(p_native) > min_spread
    np.testing.assert_allclose(p_ours, p_native, rtol=0, atol=atol)


@pytest.mark.parametrize("params", [{}, {"lambdarank_num_pair_per_sample": 10, "ndcg_exp_gain": False}], ids=repr)
@pytest.mark.parametrize("weighted", [False, True])
def test_like_xgboost_trains_the_native_rank_ndcg_model(mq_train, params, weighted):
    import xgboost as xgb
    tr = mq_train
    wq = np.random.default_rng(0).uniform(0.2, 3.0, size=len(tr.group)) if weighted else None
    dtrain = xgb.DMatrix(tr.X, tr.y, group=tr.group, weight=wq)
    # base_score=0: native rank:ndcg otherwise fits an intercept (a constant shift of every margin).
    common = dict(tree_method="hist", max_depth=6, eta=0.1, nthread=2, base_score=0.0)
    native = xgb.train(dict(common, objective="rank:ndcg", **params), dtrain, ROUNDS)
    obj = LambdaRank.like_xgboost(**params)
    ours = xgb.train(adapters.xgboost_params(obj, common), dtrain, ROUNDS, obj=adapters.xgboost_objective(obj))
    # XGBoost computes rho in float32 and sums pairs in float32 (measured: 2e-7 at 20 rounds)
    assert_same_xgb_model(ours, native, tr.X, min_spread=1.0, atol=1e-5)


# ---------------------------------------------------------------- arguments -----------------------
def test_presets_use_the_libraries_defaults_and_names():
    assert LambdaRank.like_lightgbm() == LambdaRank(k=30, norm=True, convention="lightgbm")
    assert LambdaRank.like_lightgbm(objective="lambdarank", label_gain="0,1,3,7") == \
        LambdaRank(k=30, norm=True, gain=[0, 1, 3, 7], convention="lightgbm")
    assert LambdaRank.like_xgboost() == LambdaRank(k=32, norm=True, convention="xgboost")
    assert LambdaRank.like_xgboost(objective="rank:ndcg", lambdarank_pair_method="topk",
                                   lambdarank_unbiased=False).k == 32
    assert LambdaRank.like_xgboost(ndcg_exp_gain=False).gain == tuple(float(g) for g in range(32))


@pytest.mark.parametrize("call, error, match", [
    (lambda: LambdaRank.like_lightgbm(num_leaves=31), ValueError, "num_leaves"),
    (lambda: LambdaRank.like_lightgbm(lambdarank_position_bias_regularization=0.1), ValueError,
     "position_bias.*lambdarank_norm"),
    (lambda: LambdaRank.like_lightgbm(objective="rank_xendcg"), ValueError, "rank_xendcg"),
    (lambda: LambdaRank.like_lightgbm(lambdarank_truncation_level=0), ValueError, "lambdarank_truncation_level"),
    (lambda: LambdaRank.like_lightgbm(lambdarank_truncation_level=2.5), TypeError, "lambdarank_truncation_level"),
    (lambda: LambdaRank.like_lightgbm(sigmoid=-1.0), ValueError, "sigmoid"),
    (lambda: LambdaRank.like_lightgbm(sigmoid=float("nan")), ValueError, "sigmoid"),
    (lambda: LambdaRank.like_lightgbm(lambdarank_norm="true"), TypeError, "lambdarank_norm"),
    (lambda: LambdaRank.like_lightgbm(label_gain="0,1,x"), ValueError, "label_gain"),
    (lambda: LambdaRank.like_lightgbm(label_gain=[0, 3, 1]), ValueError, "non-decreasing"),
    (lambda: LambdaRank.like_xgboost(lambdarank_pair_method="mean"), ValueError, "random"),
    (lambda: LambdaRank.like_xgboost(lambdarank_pair_method="all"), ValueError, "topk"),
    (lambda: LambdaRank.like_xgboost(lambdarank_unbiased=True), ValueError, "position-bias"),
    (lambda: LambdaRank.like_xgboost(lambdarank_bias_norm=2.0), ValueError, "lambdarank_bias_norm"),
    (lambda: LambdaRank.like_xgboost(lambdarank_normalization=False), ValueError, "both"),
    (lambda: LambdaRank.like_xgboost(lambdarank_num_pair_per_sample=0), ValueError, "num_pair"),
    (lambda: LambdaRank.like_xgboost(ndcg_exp_gain=1), TypeError, "ndcg_exp_gain"),
    (lambda: LambdaRank.like_xgboost(objective="rank:pairwise"), ValueError, "rank:pairwise"),
    (lambda: LambdaRank.like_xgboost(eta=0.1), ValueError, "eta"),
    (lambda: LambdaRank(convention="catboost"), ValueError, "convention"),
    (lambda: LambdaRank(convention=["lightgbm"]), TypeError, "convention"),
    (lambda: LambdaRank(metric="map", convention="xgboost"), ValueError, "metric='ndcg'"),
])
def test_bad_arguments_are_refused_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_xgboost_convention_refuses_zero_total_weight():
    s, y, sizes = queries(8, n_queries=3)
    with pytest.raises(ValueError, match="sum of the query weights"):
        LambdaRank.like_xgboost().grad_hess(s, y, sizes, np.zeros(len(s)))


def test_docstring_examples_run():
    for method in (LambdaRank.like_lightgbm, LambdaRank.like_xgboost):
        finder = doctest.DocTestFinder()
        runner = doctest.DocTestRunner()
        for test in finder.find(method, method.__qualname__, globs={}):
            runner.run(test)
        assert runner.tries > 0 and runner.failures == 0, method.__qualname__
