"""adapters.metrics: co_ names that never collide with the libraries' own metrics, name lookup in
both forms, caches that follow set_label / set_group, pickling."""
import pickle

import numpy as np
import pytest

from customobj import adapters  # before lightgbm / xgboost: sets the OpenMP wait policy

import lightgbm as lgb
import xgboost as xgb

import customobj
from customobj.adapters.metrics import lookup_metric
from customobj.metrics import ndcg

P = dict(num_leaves=7, learning_rate=0.2, min_data_in_leaf=10, verbose=-1, num_threads=1, deterministic=True,
         force_row_wise=True)


@pytest.fixture(scope="module")
def small():
    d = customobj.data.synthetic(40, 15, 5, seed=3)
    return d.X, d.y, np.asarray(d.group)


def test_names_carry_the_prefix_and_lookups_take_both_forms():
    assert adapters.PREFIX == "co_"
    assert adapters.metric_key("NDCG@10") == adapters.metric_key("co_ndcg@10") == "co_ndcg@10"
    assert lookup_metric("co_err@5").name == lookup_metric("err@5").name == "err@5"
    assert adapters.lightgbm_metric("ndcg@10", "co_map").names == ("co_ndcg@10", "co_map")
    assert adapters.xgboost_metric("misordered").names == ("co_misordered",)
    with pytest.raises(ValueError, match="unknown metric 'co_nope'"):
        adapters.lightgbm_metric("co_nope")


def test_record_evaluation_keeps_native_and_customobj_ndcg_apart(small):
    """The issue: both named ndcg@10 interleaved two curves under one key."""
    X, y, g = small
    ds = lgb.Dataset(X, y, group=g)
    curves = {}
    lgb.train(dict(P, objective=adapters.lightgbm_objective(customobj.LambdaRank()), metric="ndcg", eval_at=[10]),
              ds, 5, valid_sets=[ds], valid_names=["t"], feval=adapters.lightgbm_metric("ndcg@10"),
              callbacks=[lgb.record_evaluation(curves)])
    assert set(curves["t"]) == {"ndcg@10", "co_ndcg@10"}
    assert len(curves["t"]["ndcg@10"]) == len(curves["t"]["co_ndcg@10"]) == 5


def test_xgboost_evals_result_keeps_native_and_customobj_ndcg_apart(small):
    X, y, g = small
    d = xgb.DMatrix(X, y, group=g)
    res = {}
    m = adapters.xgboost_metric("ndcg@10")
    xgb.train({"objective": "rank:ndcg", "eval_metric": "ndcg@10", "nthread": 1}, d, 4, evals=[(d, "t")],
              custom_metric=m, maximize=m.maximize, evals_result=res, verbose_eval=False,
              callbacks=[adapters.xgboost_early_stopping(10, "co_ndcg@10")])
    assert set(res["t"]) == {"ndcg@10", "co_ndcg@10"} and len(res["t"]["co_ndcg@10"]) == 4


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_metric_follows_set_label_and_set_group(small, library):
    X, y, g = small
    s = np.random.default_rng(1).normal(size=len(y))
    if library == "lightgbm":
        d = lgb.Dataset(X, y, group=g, params={"verbosity": -1}).construct()
        f = adapters.lightgbm_metric("ndcg@10")
    else:
        d = xgb.DMatrix(X, y, group=g)
        f = adapters.xgboost_metric("ndcg@10")
        s = s.astype(np.float32)
    assert f(s, d)[0][1] == pytest.approx(ndcg(s, y, g, 10))
    y2 = np.random.default_rng(2).permutation(y)
    d.set_label(y2)
    assert f(s, d)[0][1] == pytest.approx(ndcg(s, y2, g, 10))
    g2 = np.array([len(y) // 3, len(y) - len(y) // 3])
    d.set_group(g2)
    assert f(s, d)[0][1] == pytest.approx(ndcg(s, y2, g2, 10))


def test_metrics_pickle_and_work_after_loading(small):
    X, y, g = small
    s = np.random.default_rng(1).normal(size=len(y))
    ds = lgb.Dataset(X, y, group=g, params={"verbosity": -1}).construct()
    lm = adapters.lightgbm_metric("ndcg@10", "err@10")
    lm(s, ds)  # fills the per-dataset cache, which must not travel
    back = pickle.loads(pickle.dumps(lm))
    assert back(s, ds) == lm(s, ds)
    xm = adapters.xgboost_metric("map")
    d = xgb.DMatrix(X, y, group=g)
    xm(s.astype(np.float32), d)
    xback = pickle.loads(pickle.dumps(xm))
    assert xback(s.astype(np.float32), d) == xm(s.astype(np.float32), d) and xback.maximize is True


def test_sklearn_convention_needs_query_sizes(small):
    X, y, g = small
    f = adapters.lightgbm_sklearn_metric("ndcg@10")
    s = np.random.default_rng(1).normal(size=len(y))
    assert f(y, s, None, g)[0][1] == pytest.approx(ndcg(s, y, g, 10))
    with pytest.raises(ValueError, match="query groups"):
        f(y, s, None, None)


def test_xgboost_metric_outside_xgboost_train_is_a_clear_type_error(small):
    _, y, _ = small
    with pytest.raises(TypeError, match=r"custom_metric for xgboost.train.*ndarray"):
        adapters.xgboost_metric("ndcg@10")(y, np.zeros(len(y)))


@pytest.fixture(scope="module")
def click_logs():
    d = customobj.data.synthetic(40, 12, 5, seed=5, max_grade=2)
    train = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=3, seed=1)
    valid = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=3, seed=2)
    return train, valid, 1.0 / np.arange(1, 11)


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_early_stopping_on_a_click_only_validation_log(click_logs, library):
    """Issue 33 item 4: the IPS click NDCG of a validation log without labels picks the round."""
    from customobj.metrics import click_metric, ips_ndcg

    train, valid, rho = click_logs
    metric = click_metric("ips_ndcg@10", propensity=rho)
    curves = {}
    if library == "lightgbm":
        dt = lgb.Dataset(train.X, train.y, group=train.group)
        dv = lgb.Dataset(valid.X, valid.y, group=valid.group, reference=dt)
        booster = lgb.train(dict(P, objective="lambdarank", metric="None"), dt, 40, valid_sets=[dv],
                            valid_names=["v"], feval=adapters.lightgbm_metric(metric),
                            callbacks=[lgb.record_evaluation(curves), lgb.early_stopping(5, verbose=False)])
        best = booster.best_iteration
        pred = booster.predict(valid.X, num_iteration=best)
    else:
        dt = xgb.DMatrix(train.X, train.y, group=train.group)
        dv = xgb.DMatrix(valid.X, valid.y, group=valid.group)
        booster = xgb.train({"objective": "rank:ndcg", "eta": 0.3, "nthread": 1}, dt, 40, evals=[(dv, "v")],
                            custom_metric=adapters.xgboost_metric(metric), evals_result=curves, verbose_eval=False,
                            callbacks=[adapters.xgboost_early_stopping(5, metric)])
        best = booster.best_iteration + 1
        pred = booster.predict(dv, iteration_range=(0, best))
    curve = curves["v"][adapters.metric_key(metric)]
    assert adapters.metric_key(metric) == "co_ips_ndcg@10"
    assert curve[best - 1] == max(curve)  # maximised, not minimised
    assert curve[best - 1] == pytest.approx(ips_ndcg(pred, valid.y, valid.group, 10, propensity=rho), rel=1e-6)
