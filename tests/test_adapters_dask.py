"""adapters.dask: distributed training on a 2-worker LocalCluster reaching the single-machine
NDCG@10 on MQ2008 Fold1 (query-aligned partitions and their errors: tests/test_adapters_dask_partition.py);
propensities estimated from all workers' rows (Unbiased through train_xgboost, and RegressionEM through
adapters/_dask_em.py's train_regression_em) equal to the one-machine estimate; a MultiObjective's Gram matrix
and costs summed over the workers (its label columns, adapters/_dask_labels.py and adapters/_dask_collective.py:
tests/test_adapters_dask_labels.py)."""
import os

import numpy as np
import pytest

from customobj import adapters  # noqa: F401  (thread environment before lightgbm / xgboost load)

da = pytest.importorskip("dask.array")
pytest.importorskip("dask.dataframe")  # xgboost.dask needs it (and pyarrow)
distributed = pytest.importorskip("distributed")

import lightgbm as lgb  # noqa: E402
import xgboost as xgb  # noqa: E402

import customobj  # noqa: E402
from customobj.adapters import dask as ad  # noqa: E402
from customobj.metrics import ndcg  # noqa: E402
from _dask_cluster import FITTED_PARAMS, _xgboost_on_one_machine  # noqa: E402
from _oracles import sizes_to_qid as _sizes_to_qid  # noqa: E402

ROUNDS = 30


# ------------------------------------------------------------------------------------------------
# distributed training
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mq2008(mq2008_fold1):
    # Features on a grid of 32 levels: with fewer distinct values than max_bin every worker
    # (XGBoost's merged sketch, LightGBM's per-worker bin finding) gets the single-machine bins,
    # so what is compared is the training itself, not the libraries' distributed binning.
    out = {}
    for name in ("train", "test"):
        X, y, g = mq2008_fold1[name]
        out[name] = (np.round(np.asarray(X, dtype=np.float64) * 31) / 31, np.asarray(y), np.asarray(g))
    return out


OBJECTIVES = [pytest.param(lambda: customobj.LambdaRank(), id="LambdaRank"),
              pytest.param(lambda: customobj.QBRank(), id="QBRank")]


@pytest.mark.parametrize("make", OBJECTIVES)
def test_xgboost_dask_matches_single_machine(client, mq2008, make):
    (X, y, g), (Xt, yt, gt) = mq2008["train"], mq2008["test"]
    obj = make()
    params = dict(tree_method="hist", max_leaves=15, grow_policy="lossguide", max_depth=0, eta=0.1, nthread=1)
    local = xgb.train(adapters.xgboost_params(obj, params), xgb.DMatrix(X, y, group=g), ROUNDS,
                      obj=adapters.xgboost_objective(obj))
    out = ad.train_xgboost(client, dict(params, eval_metric="ndcg@10"), X, y, g, obj, num_boost_round=ROUNDS,
                           evals=[(Xt, yt, gt, "test")])
    assert len(out["history"]["test"]["ndcg@10"]) == ROUNDS
    single = ndcg(local.predict(xgb.DMatrix(Xt)), yt, gt, 10)
    dist = ndcg(out["booster"].predict(xgb.DMatrix(Xt)), yt, gt, 10)
    print(f"xgboost {type(obj).__name__}: single {single:.4f} dask {dist:.4f}")
    assert abs(dist - single) < 0.005, (single, dist)


@pytest.mark.parametrize("make", OBJECTIVES)
def test_lightgbm_dask_matches_single_machine(client, mq2008, make):
    (X, y, g), (Xt, yt, gt) = mq2008["train"], mq2008["test"]
    obj = make()
    # min_data_in_bin=1: LightGBM merges rare values by per-worker counts otherwise (bins differ).
    params = dict(num_leaves=15, learning_rate=0.1, min_data_in_leaf=20, min_data_in_bin=1, verbose=-1)
    local = lgb.LGBMRanker(objective=adapters.lightgbm_sklearn_objective(obj), n_estimators=ROUNDS,
                           n_jobs=1, **params).fit(X, y, group=g)
    model = ad.train_lightgbm(client, dict(params, metric="ndcg", eval_at=[10]), X, y, g, obj,
                              num_boost_round=ROUNDS, eval_set=[(Xt, yt, gt)])
    assert len(model.evals_result_["valid_0"]["ndcg@10"]) == ROUNDS
    single = ndcg(local.predict(Xt), yt, gt, 10)
    dist = ndcg(model.to_local().predict(Xt), yt, gt, 10)
    print(f"lightgbm {type(obj).__name__}: single {single:.4f} dask {dist:.4f}")
    assert abs(dist - single) < 0.005, (single, dist)


def _recording_objective(obj, folder):
    inner = adapters.lightgbm_sklearn_objective(obj)

    def record(y_true, y_pred, weight, group):
        path = os.path.join(folder, f"{os.getpid()}.npz")
        if not os.path.exists(path):  # first round only
            np.savez(path, y=np.asarray(y_true), group=np.asarray(group))
        return inner(y_true, y_pred, weight, group)

    return record


def test_each_lightgbm_worker_sees_whole_queries(client, mq2008, tmp_path):
    """The workers' objective calls together see every training query whole, exactly once."""
    X, y, g = mq2008["train"]
    parts = ad.scatter_by_query(client, X, y, g, 2)
    model = lgb.DaskLGBMRanker(client=client, objective=_recording_objective(customobj.LambdaRank(), str(tmp_path)),
                               n_estimators=1, verbose=-1)
    model.fit(parts.X, parts.y, group=parts.group)
    seen = sorted(tmp_path.glob("*.npz"))
    assert len(seen) == 2  # both workers trained
    ptr = np.concatenate(([0], np.cumsum(g)))
    want = sorted(tuple(y[a:b]) for a, b in zip(ptr[:-1], ptr[1:]))
    got = []
    for f in seen:
        rec = np.load(f)
        wptr = np.concatenate(([0], np.cumsum(rec["group"])))
        assert wptr[-1] == rec["y"].shape[0]
        got += [tuple(rec["y"][a:b]) for a, b in zip(wptr[:-1], wptr[1:])]
    assert sorted(got) == want


def test_train_with_user_partitions_checks_them(client, mq2008):
    X, y, g = mq2008["train"]
    qid = _sizes_to_qid(g)
    Xd = da.from_array(X, chunks=(X.shape[0] // 2 + 1, X.shape[1]))  # arbitrary cut
    with pytest.raises(ValueError, match="straddles partitions 0 and 1"):
        ad.train_xgboost(client, {}, Xd, y, qid, customobj.LambdaRank(), num_boost_round=1)
    with pytest.raises(ValueError, match="straddles partitions 0 and 1"):
        ad.train_lightgbm(client, {}, Xd, y, qid, customobj.LambdaRank(), num_boost_round=1)


# ------------------------------------------------------------------------------------------------
# early stopping and histories (the flows of docs/distributed.md, small)
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_ranking():
    train = customobj.data.synthetic(80, 15, 6, seed=0)
    valid = customobj.data.synthetic(40, 15, 6, seed=1)
    return train, valid


def test_documented_xgboost_flow_records_a_history_and_stops_early(client, small_ranking):
    train, valid = small_ranking
    out = ad.train_xgboost(client, {"tree_method": "hist", "max_leaves": 7, "eta": 0.3, "eval_metric": "ndcg@10"},
                           train.X, train.y, train.group, customobj.LambdaRank(), num_boost_round=60,
                           evals=[(valid.X, valid.y, valid.group, "valid")], early_stopping_rounds=3,
                           verbose_eval=False)
    curve = out["history"]["valid"]["ndcg@10"]
    assert 0 < len(curve) < 60  # stopped early, both workers at the same round (no hang)
    assert out["booster"].best_iteration == int(np.argmax(curve))


def test_documented_lightgbm_flow_history_covers_all_validation_queries(client, small_ranking):
    train, valid = small_ranking
    model = ad.train_lightgbm(client, {"num_leaves": 7, "learning_rate": 0.2, "min_data_in_leaf": 5},
                              train.X, train.y, train.group, customobj.QBRank(), num_boost_round=8)
    history = ad.lightgbm_history(model, [(valid.X, valid.y, valid.group)], "ndcg@10", "co_err@10")
    curve = history["valid_0"]["co_ndcg@10"]
    assert len(curve) == 8 and len(history["valid_0"]["co_err@10"]) == 8
    ranker = model.to_local()
    for i in (1, 8):  # round i of the history is the model cut after i rounds, on every query
        want = ndcg(ranker.predict(valid.X, num_iteration=i, raw_score=True), valid.y, valid.group, 10)
        assert curve[i - 1] == pytest.approx(want, abs=1e-9)


def test_lightgbm_history_of_a_local_model_and_bad_eval_set(small_ranking):
    train, valid = small_ranking
    ranker = lgb.LGBMRanker(objective=adapters.lightgbm_objective(customobj.LambdaRank()), n_estimators=4,
                            num_leaves=7, verbose=-1, n_jobs=1).fit(train.X, train.y, group=train.group)
    qid = np.repeat(np.arange(len(valid.group)), valid.group)  # per-row ids work as well as sizes
    curve = ad.lightgbm_history(ranker, [(valid.X, valid.y, qid)])["valid_0"]["co_ndcg@10"]
    assert len(curve) == 4
    assert curve[-1] == pytest.approx(ndcg(ranker.predict(valid.X, raw_score=True), valid.y, valid.group, 10))
    with pytest.raises(ValueError, match=r"eval_set entries must be \(X, y, qid_or_group\)"):
        ad.lightgbm_history(ranker, [(valid.X, valid.y)])


@pytest.mark.parametrize("how", [
    dict(fit={"callbacks": [lgb.early_stopping(5)]}),
    dict(params={"early_stopping_round": 5}),
    dict(params={"n_iter_no_change": 5}),
    dict(params={"early_stopping_rounds": 5}),
])
def test_lightgbm_early_stopping_is_refused_before_training(how):
    X, y, g = np.zeros((10, 2)), np.zeros(10), [5, 5]
    # client=None: the refusal comes before anything touches the cluster or the data
    with pytest.raises(ValueError, match="lightgbm.dask cannot stop early.*lightgbm_history.*train_xgboost"):
        ad.train_lightgbm(None, how.get("params", {}), X, y, g, customobj.LambdaRank(), **how.get("fit", {}))


def test_xgboost_early_stopping_on_a_custom_metric_is_refused():
    X, y, g = np.zeros((10, 2)), np.zeros(10), [5, 5]
    with pytest.raises(ValueError, match="early stopping on a custom_metric.*eval_metric"):
        ad.train_xgboost(None, {}, X, y, g, customobj.LambdaRank(), early_stopping_rounds=3,
                         custom_metric=adapters.xgboost_metric("ndcg@10"))
    with pytest.raises(ValueError, match="early stopping on a custom_metric"):
        ad.train_xgboost(None, {}, X, y, g, customobj.LambdaRank(), custom_metric=adapters.xgboost_metric("ndcg@10"),
                         callbacks=[adapters.xgboost_early_stopping(3, "ndcg@10")])


@pytest.mark.parametrize("train", [ad.train_lightgbm, ad.train_xgboost])
@pytest.mark.parametrize("n_classes", [None, 3])
def test_mcrank_is_refused_at_once_as_multi_output(train, n_classes):
    """Issue 30: McRank() first said "pass n_classes", then, given it, "not supported"."""
    X, y, g = np.zeros((10, 2)), np.zeros(10), [5, 5]
    with pytest.raises(ValueError, match=r"McRank has .*output.* row.*; the Dask ranking path .* single-output") as exc:
        train(None, {}, X, y, g, customobj.McRank(n_classes=n_classes))
    assert "n_classes" not in str(exc.value)


def test_xgboost_evals_without_a_metric_is_refused():
    """The old docs snippet: evals= without eval_metric trained and recorded an empty history."""
    X, y, g = np.zeros((10, 2)), np.zeros(10), [5, 5]
    with pytest.raises(ValueError, match=r"records no history.*params\['eval_metric'\]"):
        ad.train_xgboost(None, {"tree_method": "hist"}, X, y, g, customobj.LambdaRank(), evals=[(X, y, g, "valid")])


# ------------------------------------------------------------------------------------------------
# distributed propensities (issue 33 item 3): one estimate from all workers' rows
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def click_log():
    d = customobj.data.synthetic(40, 10, 5, seed=0)
    log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=2, seed=0)
    # Sessions shortest first: the first worker's longest session is shorter than the second's, so the
    # workers also agree on how many positions they track. Features on a grid of 8 levels: every worker
    # gets the single-machine bins (as above), so the trees, and with them the estimates, can coincide.
    ptr = np.concatenate([[0], np.cumsum(log.group)])
    order = np.argsort(log.group, kind="stable")
    rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in order])
    return np.round(log.X[rows] * 7) / 7, log.y[rows], np.asarray(log.group)[order]


def test_xgboost_dask_unbiased_estimates_the_one_machine_propensities(client, click_log):
    X, y, g = click_log
    obj = customobj.Unbiased(customobj.LambdaRank())
    local, want = _xgboost_on_one_machine(obj, X, y, g, 5)
    out = ad.train_xgboost(client, FITTED_PARAMS, X, y, g, obj, num_boost_round=5)
    got = out["fitted_attributes"]
    assert got.keys() == want.keys() == {"position_bias_", "position_bias_unclicked_"}
    for name in want:
        assert got[name].shape == want[name].shape == (10,)  # the longest session anywhere: 10 positions
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-9)
    assert 0.0 < want["position_bias_"][-1] < 0.5  # a real, non-trivial estimate was compared
    np.testing.assert_array_equal(out["booster"].predict(xgb.DMatrix(X)), local.predict(xgb.DMatrix(X)))


def test_lightgbm_dask_refuses_an_estimating_unbiased_and_names_the_alternatives(click_log):
    X, y, g = click_log
    for obj in (customobj.Unbiased(customobj.LambdaRank()), 0.5 * customobj.Unbiased(customobj.RankNet())):
        with pytest.raises(NotImplementedError, match=r"each worker would estimate its own.*train_xgboost.*propensity="):
            ad.train_lightgbm(None, {}, X, y, g, obj)  # before anything touches a cluster


def test_lightgbm_dask_trains_unbiased_with_known_propensities(client, click_log):
    X, y, g = click_log
    obj = customobj.Unbiased(customobj.LambdaRank(), propensity=1.0 / np.arange(1, 11))  # nothing estimated
    model = ad.train_lightgbm(client, {"num_leaves": 7, "min_data_in_leaf": 5}, X, y, g, obj, num_boost_round=3)
    assert model.booster_.current_iteration() == 3


@pytest.mark.parametrize("frame", [False, True], ids=["numpy", "dask_dataframe"])
def test_regression_em_on_dask_estimates_the_one_machine_propensities(client, click_log, frame, caplog):
    import logging

    caplog.set_level(logging.WARNING, logger="distributed.scheduler")  # the fixture silences it below ERROR
    X, y, g = click_log
    if frame:  # rows kept in the DataFrame's own partitions (three, on two workers)
        import dask.dataframe as dd
        import pandas as pd

        data = dd.from_pandas(pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]), npartitions=3)
    else:
        data = X
    position = np.concatenate([np.arange(n) for n in g])
    em = customobj.RegressionEM(library="xgboost", n_iter=2, n_estimators=2, min_child_samples=1,
                                params={"nthread": 1})
    one = customobj.RegressionEM(**em.get_params()).fit(X, y, position=position)
    assert ad.train_regression_em(client, em, data, y, position) is em
    assert em.propensity_.shape == one.propensity_.shape == (10,)
    np.testing.assert_allclose(em.propensity_, one.propensity_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(em.position_bias_, one.position_bias_, rtol=0, atol=1e-9)
    assert em.position_bias_[-1] < 0.8  # a real, non-trivial estimate was compared
    assert em.n_trees_ == one.n_trees_ == 4
    np.testing.assert_array_equal(em.predict(X), one.predict(X))
    # the stacked rows are built where they are, so no key is sent again with another task spec
    assert not [r for r in caplog.records if "run_spec" in r.getMessage()]


def test_regression_em_on_dask_refuses_lightgbm_and_bad_rows(click_log):
    X, y, g = click_log
    position = np.concatenate([np.arange(n) for n in g])
    with pytest.raises(NotImplementedError, match="library='xgboost'"):
        ad.train_regression_em(None, customobj.RegressionEM(library="lightgbm"), X, y, position)
    with pytest.raises(ValueError, match="position has 3 entries"):  # fit's checks, before anything is sent
        ad.train_regression_em(None, customobj.RegressionEM(library="xgboost"), X, y, position[:3])
    with pytest.raises(TypeError, match="em must be a customobj.RegressionEM"):
        ad.train_regression_em(None, customobj.RegressionEM, X, y, position)
    from customobj.clicks.relevance_model import BoostedRelevance
    with pytest.raises(NotImplementedError, match="relevance_model=BoostedRelevance"):
        ad.train_regression_em(None, customobj.RegressionEM(library="xgboost", relevance_model=BoostedRelevance()), X,
                               y, position)


def test_multi_objective_sums_its_gram_and_costs_over_the_workers(client, click_log):
    from customobj.multi import MultiObjective

    X, y, g = click_log
    obj = MultiObjective([customobj.LambdaRank(), customobj.RankNet()], method="epo", preference=[1, 2])
    local, want = _xgboost_on_one_machine(obj, X, y, g, 4)
    got = ad.train_xgboost(client, FITTED_PARAMS, X, y, g, obj, num_boost_round=4)
    for name in ("label_weights_", "label_costs_"):
        assert got["fitted_attributes"][name].shape == want[name].shape == (4, 2)
        np.testing.assert_allclose(got["fitted_attributes"][name], want[name], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got["booster"].predict(xgb.DMatrix(X)), local.predict(xgb.DMatrix(X)), atol=1e-5)
    # train_lightgbm trains it too now (test_lightgbm_sums_over_the_workers_without_label_columns)


@pytest.mark.parametrize("train", [ad.train_lightgbm, ad.train_xgboost])
def test_unbiased_with_positions_of_all_rows_is_refused_on_dask(train, click_log):
    X, y, g = click_log
    position = np.concatenate([np.arange(n) for n in g])
    obj = customobj.Unbiased(customobj.LambdaRank(), propensity=1.0 / np.arange(1, 11), position=position)
    for wrapped in (obj, customobj.RankNet() + 0.5 * obj):
        with pytest.raises(ValueError, match=r"Unbiased\(position=...\).*each session's row order"):
            train(None, {}, X, y, g, wrapped)
