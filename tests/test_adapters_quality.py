"""Adapters end to end on MQ2008 Fold1: equivalence with the native objectives, and every
objective learning something through both libraries. Few rounds and small trees."""
import numpy as np
import pytest

from customobj import adapters  # before lightgbm / xgboost: sets the OpenMP wait policy

import lightgbm as lgb
import xgboost as xgb

import customobj
from customobj.metrics import ndcg
from customobj.pairs import label_pairs

ROUNDS = 25
LGB = dict(num_leaves=15, learning_rate=0.1, min_data_in_leaf=20, verbose=-1, num_threads=2, metric="None",
           deterministic=True, force_row_wise=True)
XGB = dict(tree_method="hist", max_depth=4, eta=0.1, nthread=2)


def _lambdarank():
    return getattr(customobj, "LambdaRank", None) or __import__(
        "customobj.objectives.listwise", fromlist=["LambdaRank"]).LambdaRank


def _structured():
    mod = __import__("customobj.objectives.structured_dcg", fromlist=["StructuredDCG"])
    return getattr(mod, "StructuredDCG", None)


def mean_ndcg10(scores, data):
    return ndcg(scores, data.y, data.group, 10)


@pytest.fixture(scope="module")
def mq(mq2008_fold1):
    return mq2008_fold1["train"], mq2008_fold1["test"]


@pytest.fixture(scope="module")
def random_ndcg(mq):
    _, te = mq
    rng = np.random.default_rng(0)
    return float(np.mean([mean_ndcg10(rng.random(te.y.shape[0]), te) for _ in range(20)]))


def test_lambdarank_lightgbm_matches_native(mq):
    tr, te = mq
    dtr = lgb.Dataset(tr.X, tr.y, group=tr.group)
    # Native lambdarank with the same loss: every pair (no truncation), no per-query normalisation.
    native = lgb.train(dict(LGB, objective="lambdarank", lambdarank_truncation_level=10_000,
                            lambdarank_norm=False), dtr, ROUNDS)
    ours = lgb.train(dict(LGB, objective=adapters.lightgbm_objective(_lambdarank()())), dtr, ROUNDS)
    a, b = mean_ndcg10(native.predict(te.X), te), mean_ndcg10(ours.predict(te.X), te)
    assert abs(a - b) < 0.01, (a, b)


def test_ranknet_xgboost_matches_native_pairwise(mq):
    tr, te = mq
    dtr = xgb.DMatrix(tr.X, tr.y, group=tr.group)
    dte = xgb.DMatrix(te.X, te.y, group=te.group)
    # XGBoost 3.x rank:pairwise is LambdaMART with delta = 1, i.e. RankNet with sigma = 1, but
    # (a) "topk" pairs only involve the top k rows: k >= largest query (121) builds every pair;
    # (b) both normalisations must be off; (c) its hessian is 2 rho (1 - rho), twice RankNet's,
    # so its Newton leaves are half as large: eta is doubled to take the same steps.
    native = xgb.train(dict(XGB, eta=2 * XGB["eta"], base_score=0.0, objective="rank:pairwise",
                            lambdarank_pair_method="topk", lambdarank_num_pair_per_sample=1000,
                            lambdarank_normalization=False, lambdarank_score_normalization=False),
                       dtr, ROUNDS)
    obj = customobj.RankNet()
    ours = xgb.train(adapters.xgboost_params(obj, XGB), dtr, ROUNDS, obj=adapters.xgboost_objective(obj))
    a = mean_ndcg10(native.predict(dte, output_margin=True), te)
    b = mean_ndcg10(ours.predict(dte, output_margin=True), te)
    assert abs(a - b) < 0.01, (a, b)
    assert np.corrcoef(native.predict(dte), ours.predict(dte))[0, 1] > 0.99


def test_squared_error_equals_native_regression(mq):
    tr, te = mq
    obj = customobj.SquaredError()
    dtr = lgb.Dataset(tr.X, tr.y, group=tr.group)
    native = lgb.train(dict(LGB, objective="regression", boost_from_average=False), dtr, 10)
    ours = lgb.train(dict(LGB, objective=adapters.lightgbm_objective(obj)), dtr, 10)
    np.testing.assert_allclose(ours.predict(te.X), native.predict(te.X), rtol=0, atol=1e-6)

    dx = xgb.DMatrix(tr.X, tr.y)
    native = xgb.train(dict(XGB, objective="reg:squarederror", base_score=0.0), dx, 10)
    ours = xgb.train(adapters.xgboost_params(obj, XGB), dx, 10, obj=adapters.xgboost_objective(obj))
    dte = xgb.DMatrix(te.X)
    np.testing.assert_allclose(ours.predict(dte), native.predict(dte), rtol=0, atol=1e-6)


def _objectives(tr):
    """Every objective class in customobj, built with defaults (explicit pairs for PreferencePairs)."""
    out = []
    names = [n for n in customobj.objectives.__all__ if n not in ("Objective", "Prepared", "Sum", "Scaled")]
    classes = [getattr(customobj.objectives, n) for n in names]
    for extra in (_lambdarank(), _structured()):
        if extra is not None and extra not in classes:
            classes.append(extra)
    for cls in classes:
        name = cls.__name__
        if name == "PreferencePairs":
            i, j, _ = label_pairs(tr.y, tr.group)
            out.append((cls(np.stack([i, j], axis=1)) + 0.1 * customobj.SquaredError(), False))
        elif name == "McRank":
            out.append((cls(n_classes=3), False))
        elif name in ("Logistic", "SquaredHinge"):
            out.append((cls(), True))  # binary labels: relevant (y > 0) or not
        else:
            out.append((cls(), False))
    return out


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_every_objective_beats_random(mq, random_ndcg, library):
    tr, te = mq
    results = {}
    for obj, binary in _objectives(tr):
        y = (tr.y > 0).astype(np.float64) if binary else tr.y
        if library == "lightgbm":
            params = dict(LGB, objective=adapters.lightgbm_objective(obj))
            if obj.n_outputs > 1:
                params["num_class"] = obj.n_outputs
            model = lgb.train(params, lgb.Dataset(tr.X, y, group=tr.group), 15)
            raw = model.predict(te.X, raw_score=True)
        else:
            model = xgb.train(adapters.xgboost_params(obj, XGB), xgb.DMatrix(tr.X, y, group=tr.group), 15,
                              obj=adapters.xgboost_objective(obj))
            raw = model.predict(xgb.DMatrix(te.X), output_margin=True)
        from customobj.adapters._data import ranking_scores

        results[repr(obj)] = mean_ndcg10(ranking_scores(raw), te)
    worst = min(results.values())
    assert worst > random_ndcg + 0.08, (random_ndcg, results)
    assert any(n.startswith("McRank") for n in results)
