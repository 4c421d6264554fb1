"""adapters.xgboost_objective / xgboost_params / xgboost_metric / xgboost_early_stopping."""
import numpy as np
import pytest

from customobj import adapters  # before xgboost: sets the OpenMP wait policy

import xgboost as xgb

import customobj
from customobj.metrics import get_metric
from conftest import count_prepare_calls

P = dict(tree_method="hist", max_depth=3, eta=0.3, nthread=2)


def _train(obj, dtrain, rounds, params=P, **kw):
    return xgb.train(adapters.xgboost_params(obj, params), dtrain, rounds, obj=adapters.xgboost_objective(obj), **kw)


def test_objective_reads_dmatrix_and_prepares_once(small, monkeypatch):
    X, y, sizes = small
    obj = customobj.RankNet()
    calls = count_prepare_calls(monkeypatch, obj)
    f = adapters.xgboost_objective(obj)
    seen = []

    def spy(preds, dtrain):
        g, h = f(preds, dtrain)
        seen.append((preds.copy(), g.copy(), h.copy()))
        return g, h

    dtrain = xgb.DMatrix(X, y, group=sizes)
    xgb.train(adapters.xgboost_params(obj, P), dtrain, 4, obj=spy)
    assert len(calls) == 1 and len(seen) == 4
    for preds, g, h in seen:
        want_g, want_h = obj.grad_hess(preds.astype(np.float64), y, sizes)
        np.testing.assert_allclose(g, want_g, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(h, want_h, rtol=1e-6, atol=1e-7)


def test_qid_gives_the_same_groups(small):
    X, y, sizes = small
    qid = np.repeat(np.arange(len(sizes)), sizes)
    a = _train(customobj.RankNet(), xgb.DMatrix(X, y, group=sizes), 5)
    b = _train(customobj.RankNet(), xgb.DMatrix(X, y, qid=qid), 5)
    np.testing.assert_allclose(a.predict(xgb.DMatrix(X)), b.predict(xgb.DMatrix(X)))


def test_group_wise_objective_without_groups_is_a_clear_error(small):
    X, y, _ = small
    with pytest.raises(ValueError, match="no query groups"):
        _train(customobj.RankNet(), xgb.DMatrix(X, y), 1)


def test_squared_error_equals_native_with_row_weights(small):
    X, y, _ = small
    w = np.random.default_rng(3).uniform(0.2, 3.0, len(y))
    d = xgb.DMatrix(X, y, weight=w)
    native = xgb.train(dict(P, objective="reg:squarederror", base_score=0.0), d, 8)
    ours = _train(customobj.SquaredError(), d, 8)
    np.testing.assert_allclose(ours.predict(d), native.predict(d), atol=1e-6)


def test_per_query_weights_are_spread_over_rows(small):
    X, y, sizes = small
    wq = np.random.default_rng(4).uniform(0.5, 2.0, len(sizes))
    obj = customobj.RankNet()
    f = adapters.xgboost_objective(obj)
    d = xgb.DMatrix(X, y, group=sizes, weight=wq)
    s = np.random.default_rng(0).normal(size=len(y)).astype(np.float32)
    g, h = f(s, d)
    want_g, want_h = obj.grad_hess(s.astype(np.float64), y, sizes, weight=np.repeat(wq, sizes))
    np.testing.assert_allclose(g, want_g, rtol=1e-6, atol=1e-7)


def test_base_score_left_alone_if_set_and_pointwise_needs_zero(small):
    X, y, _ = small
    assert adapters.xgboost_params(customobj.SquaredError())["base_score"] == 0.0
    assert adapters.xgboost_params(customobj.SquaredError(), {"base_score": 1.5})["base_score"] == 1.5
    d = xgb.DMatrix(X, y)
    seen = []
    f = adapters.xgboost_objective(customobj.SquaredError())
    xgb.train(dict(P, base_score=1.5, disable_default_eval_metric=1), d, 1,
              obj=lambda p, dm: (seen.append(p.copy()), f(p, dm))[1])
    np.testing.assert_allclose(seen[0], 1.5)


def test_model_adaptation_from_base_margin(small):
    X, y, sizes = small
    obj = customobj.RankNet()
    whole = _train(obj, xgb.DMatrix(X, y, group=sizes), 10)
    base = _train(obj, xgb.DMatrix(X, y, group=sizes), 5)
    margin = base.predict(xgb.DMatrix(X), output_margin=True)
    seen = []
    f = adapters.xgboost_objective(obj)
    more = xgb.train(adapters.xgboost_params(obj, P), xgb.DMatrix(X, y, group=sizes, base_margin=margin), 5,
                     obj=lambda p, dm: (seen.append(p.copy()), f(p, dm))[1])
    np.testing.assert_allclose(seen[0], margin, rtol=1e-6)
    combined = more.predict(xgb.DMatrix(X, base_margin=margin), output_margin=True)
    np.testing.assert_allclose(combined, whole.predict(xgb.DMatrix(X), output_margin=True), atol=1e-4)


def test_multiclass_mcrank(small):
    X, y, sizes = small
    obj = customobj.McRank(n_classes=3)
    assert adapters.xgboost_params(obj)["num_class"] == 3
    booster = _train(obj, xgb.DMatrix(X, y), 10)
    raw = booster.predict(xgb.DMatrix(X), output_margin=True)
    assert raw.shape == (len(y), 3)
    assert obj.loss(raw, y) < obj.loss(np.zeros((len(y), 3)), y) * 0.8
    with pytest.raises(ValueError, match="n_classes"):
        adapters.xgboost_params(customobj.McRank())
    with pytest.raises(ValueError, match="num_class"):
        xgb.train(dict(P, disable_default_eval_metric=1), xgb.DMatrix(X, y), 1,
                  obj=adapters.xgboost_objective(customobj.McRank(n_classes=3)))


def test_metric_values_and_evals_result(small):
    X, y, sizes = small
    d = xgb.DMatrix(X, y, group=sizes)
    m = adapters.xgboost_metric("ndcg@10", "err@10", "precision@100%", "misordered")
    assert m.maximize is False  # direction of the last name
    res = {}
    booster = _train(customobj.RankNet(), d, 5, evals=[(d, "train")], custom_metric=m, evals_result=res,
                     verbose_eval=False)
    s = booster.predict(d, output_margin=True)
    for name, value in m(s, d):
        assert name.startswith("co_")  # never the key of XGBoost's own ndcg@10
        assert value == pytest.approx(get_metric(name[3:]).func(s, y, sizes), rel=1e-5)
        assert res["train"][name][-1] == pytest.approx(value, rel=1e-5)
        assert len(res["train"][name]) == 5


@pytest.mark.parametrize("name", ["err@5", "misordered"])
def test_early_stopping_helper_direction(small, name):
    X, y, sizes = small
    yv = np.random.default_rng(5).permutation(y)
    dv = xgb.DMatrix(X, yv, group=sizes)
    res = {}
    booster = _train(customobj.RankNet(), xgb.DMatrix(X, y, group=sizes), 40, evals=[(dv, "v")],
                     custom_metric=adapters.xgboost_metric(name), evals_result=res, verbose_eval=False,
                     callbacks=[adapters.xgboost_early_stopping(4, name)])
    curve = np.array(res["v"][adapters.metric_key(name)])
    best = np.argmax(curve) if get_metric(name).higher_is_better else np.argmin(curve)
    assert booster.best_iteration == best


def test_sklearn_regressor_pointwise_only(small):
    X, y, _ = small
    reg = xgb.XGBRegressor(n_estimators=8, max_depth=3, base_score=0.0, n_jobs=2,
                           objective=adapters.xgboost_sklearn_objective(customobj.SquaredError())).fit(X, y)
    native = xgb.XGBRegressor(n_estimators=8, max_depth=3, base_score=0.0, n_jobs=2,
                              objective="reg:squarederror").fit(X, y)
    np.testing.assert_allclose(reg.predict(X), native.predict(X), atol=1e-6)
    with pytest.raises(ValueError, match="query groups"):
        adapters.xgboost_sklearn_objective(customobj.RankNet())


# --- scikit-learn estimators, pickling ----------------------------------------------------------
@pytest.mark.parametrize("factory", [adapters.xgboost_sklearn_objective, adapters.xgboost_objective])
def test_fitted_xgbregressor_pickles_and_predicts_the_same(small, tmp_path, factory):
    import pickle

    import joblib

    X, y, _ = small
    reg = xgb.XGBRegressor(n_estimators=6, max_depth=3, base_score=0.0, n_jobs=1,
                           objective=factory(customobj.SquaredError())).fit(X, y, sample_weight=np.linspace(0.5, 2, len(y)))
    back = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(back.predict(X), reg.predict(X))
    joblib.dump(reg, tmp_path / "reg.joblib")
    loaded = joblib.load(tmp_path / "reg.joblib")
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))
    assert loaded.objective == reg.objective
    loaded.fit(X, y, sample_weight=np.linspace(0.5, 2, len(y)))  # trains again after loading
    np.testing.assert_allclose(loaded.predict(X), reg.predict(X), atol=1e-6)


def test_xgboost_objective_in_xgbregressor_refuses_ranking_objectives(small):
    X, y, _ = small
    with pytest.raises(ValueError, match="never pass to a custom objective.*xgboost.train"):
        xgb.XGBRegressor(n_estimators=2, objective=adapters.xgboost_objective(customobj.RankNet())).fit(X, y)
    with pytest.raises(TypeError, match=r"f\(preds, dtrain\).*list"):
        adapters.xgboost_objective(customobj.SquaredError())(np.zeros(3), [1.0, 2.0, 3.0])


# --- caches notice set_label / set_weight / set_group ------------------------------------------
def test_objective_follows_dmatrix_set_label_set_weight_set_group(small):
    X, y, sizes = small
    obj = customobj.RankNet()
    f = adapters.xgboost_objective(obj)
    d = xgb.DMatrix(X, y, group=sizes)
    s = np.random.default_rng(0).normal(size=len(y)).astype(np.float32)

    def check(labels, groups, weight=None):
        g, _ = f(s, d)
        want = obj.grad_hess(s.astype(np.float64), labels, groups, weight=weight)[0].astype(np.float32)
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)

    check(y, sizes)
    y2 = y[::-1].copy()
    d.set_label(y2)
    check(y2, sizes)
    sizes2 = np.array([len(y) // 2, len(y) - len(y) // 2])
    d.set_group(sizes2)
    check(y2, sizes2)
    wq = np.array([0.5, 2.0])  # XGBoost's ranking weights: one per query
    d.set_weight(wq)
    check(y2, sizes2, weight=np.repeat(wq, sizes2))


def test_training_after_dmatrix_set_label_uses_the_new_labels(small):
    X, y, sizes = small
    y2 = np.random.default_rng(9).permutation(y)
    obj = customobj.RankNet()
    d = xgb.DMatrix(X, y, group=sizes)
    f = adapters.xgboost_objective(obj)
    xgb.train(adapters.xgboost_params(obj, P), d, 2, obj=f)
    d.set_label(y2)
    reused = xgb.train(adapters.xgboost_params(obj, P), d, 2, obj=f)
    fresh = _train(customobj.RankNet(), xgb.DMatrix(X, y2, group=sizes), 2)
    np.testing.assert_allclose(reused.predict(xgb.DMatrix(X)), fresh.predict(xgb.DMatrix(X)), atol=1e-6)


def test_xgboost_params_says_how_to_give_mcrank_its_classes():
    with pytest.raises(ValueError, match=r"McRank\(n_classes=K\).*prepare\(labels\)"):
        adapters.xgboost_params(customobj.McRank())


@pytest.mark.parametrize("make", [customobj.LambdaRank, customobj.QBRank, customobj.MPBoost])
def test_early_stopping_without_maximize_keeps_the_best_round(mq2008_fold1, make):
    """Issue 26.1: ``xgb.train(custom_metric=xgboost_metric("ndcg@10"), early_stopping_rounds=...)``
    without ``maximize=``: XGBoost guesses the direction from the name and would minimise
    ``co_ndcg@10``; the metric sets it, so the kept round is the recorded validation maximum."""
    (X, y, g), (Xv, yv, gv) = mq2008_fold1["train"], mq2008_fold1["vali"]
    obj, res = make(), {}
    dvalid = xgb.DMatrix(Xv, yv, group=gv)
    booster = _train(obj, xgb.DMatrix(X, y, group=g), 60, evals=[(dvalid, "valid")],
                     custom_metric=adapters.xgboost_metric("ndcg@10"), early_stopping_rounds=10,
                     evals_result=res, verbose_eval=False)
    curve = np.array(res["valid"]["co_ndcg@10"])
    assert booster.best_iteration == int(np.argmax(curve))
    assert len(curve) == booster.best_iteration + 11 or len(curve) == 60  # stopped 10 rounds after the best


@pytest.mark.parametrize("names, watch, higher", [(("ndcg@10", "misordered"), None, False),
                                                  (("misordered", "err@5"), None, True),
                                                  (("ndcg@10", "misordered"), "co_ndcg@10", True),
                                                  (("misordered", "err@5"), "co_misordered", False)])
def test_early_stopping_direction_is_the_watched_metrics(small, names, watch, higher):
    """Mixed directions: each EarlyStopping gets the direction of the metric it watches (the last
    one unless ``metric_name`` says); a ``maximize`` the user gave is never changed."""
    X, y, sizes = small
    d = xgb.DMatrix(X, y, group=sizes)
    stop = xgb.callback.EarlyStopping(rounds=50, metric_name=watch)
    given = xgb.callback.EarlyStopping(rounds=50, metric_name=watch, maximize=not higher)
    for cb in (stop, given):
        _train(customobj.RankNet(), d, 3, evals=[(d, "train")], custom_metric=adapters.xgboost_metric(*names),
               verbose_eval=False, callbacks=[cb])
    assert stop.maximize is higher and given.maximize is (not higher)
    cv = xgb.callback.EarlyStopping(rounds=50, metric_name=watch)
    xgb.cv(adapters.xgboost_params(customobj.RankNet(), P), d, 3, nfold=2, obj=adapters.xgboost_objective(customobj.RankNet()),
           custom_metric=adapters.xgboost_metric(*names), callbacks=[cv])
    assert cv.maximize is higher


# --- device="cuda" -------------------------------------------------------------------------------------
from _cuda_cases import needs_gpu, needs_real_gpu  # noqa: E402
from _isolated import run_isolated  # noqa: E402


def test_xgboost_params_passes_the_device():
    obj = customobj.RankNet()
    assert adapters.xgboost_params(obj, P, device="cuda")["device"] == "cuda"
    assert "device" not in adapters.xgboost_params(obj, P)
    with pytest.raises(ValueError, match="train where the objective runs"):
        adapters.xgboost_params(obj, dict(P, device="cpu"), device="cuda")
    # XGBoost's "cuda:N" passes through; a device the objective does not run on is refused
    assert adapters.xgboost_params(obj, dict(P, device="cuda:1"), device="cuda:1")["device"] == "cuda:1"
    with pytest.raises(ValueError, match="train where the objective runs"):
        adapters.xgboost_params(obj, dict(P, device="cuda:0"), device="cuda:1")
    with pytest.raises(ValueError, match=r"params\['device'\] must be 'cpu', 'cuda' or 'cuda:N'"):
        adapters.xgboost_params(obj, dict(P, device="gpu:0"), device="cuda")
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
        adapters.xgboost_params(obj, P, device="cuda:x")


def test_device_cuda_without_a_gpu_names_what_is_missing():
    out = run_isolated("""
import os, ctypes.util
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
if ctypes.util.find_library("cuda"):
    print("HAS-DRIVER")
else:
    import customobj
    from customobj.adapters import xgboost_objective
    try:
        xgboost_objective(customobj.RankNet(), device="cuda")
    except Exception as exc:
        print(type(exc).__name__, exc)
    import pickle
    from customobj.adapters import XGBoostObjective
    deferred = XGBoostObjective(customobj.RankNet(), device="cuda", check_device=False)  # a Dask client's build
    try:
        pickle.loads(pickle.dumps(deferred))  # what a worker without a GPU does
    except Exception as exc:
        print("WORKER", type(exc).__name__)
""")
    if "HAS-DRIVER" in out:
        pytest.skip("this machine has NVIDIA's driver: the no-driver error cannot be shown here")
    assert 'GPUUnavailableError xgboost_objective(..., device="cuda") needs a CUDA GPU' in out and "driver" in out
    assert "WORKER GPUUnavailableError" in out


@needs_gpu
def test_device_cuda_callable_equals_the_host_one_and_pickles(small):
    import pickle

    X, y, sizes = small
    dtrain = xgb.DMatrix(X, y, group=sizes)
    obj = customobj.LambdaRank.like_xgboost()
    f_gpu = adapters.xgboost_objective(obj, device="cuda")
    f_cpu = adapters.xgboost_objective(obj)
    preds = np.random.default_rng(0).normal(size=y.size).astype(np.float32)
    g, h = f_cpu(preds, dtrain)
    gd, hd = f_gpu(preds, dtrain)
    np.testing.assert_allclose(gd.copy_to_host(), g, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hd.copy_to_host(), h, rtol=1e-6, atol=1e-7)
    back = pickle.loads(pickle.dumps(f_gpu))
    assert back == f_gpu and str(back.device) == "cuda" and back != f_cpu
    f0 = adapters.xgboost_objective(obj, device="cuda:0")
    assert pickle.loads(pickle.dumps(f0)) == f0 != f_gpu and "device='cuda:0'" in repr(f0)
    assert "device='cuda'" in repr(f_gpu)


@needs_real_gpu
def test_xgboost_trains_on_the_gpu_with_device_arrays(small):
    X, y, sizes = small
    dtrain = xgb.DMatrix(X, y, group=sizes)
    obj = customobj.LambdaRank.like_xgboost()
    params = adapters.xgboost_params(obj, dict(P, device="cuda"))
    gpu = xgb.train(params, dtrain, 5, obj=adapters.xgboost_objective(obj, device="cuda"))
    cpu = xgb.train(params, dtrain, 5, obj=adapters.xgboost_objective(obj))
    np.testing.assert_allclose(gpu.predict(dtrain), cpu.predict(dtrain), rtol=1e-4, atol=1e-5)


@needs_real_gpu
def test_early_stopping_on_a_customobj_metric_works_on_the_gpu(small):
    X, y, sizes = small
    dv = xgb.DMatrix(X, np.random.default_rng(5).permutation(y), group=sizes)
    obj = customobj.RankNet()
    res = {}
    booster = xgb.train(adapters.xgboost_params(obj, P, device="cuda"), xgb.DMatrix(X, y, group=sizes), 40,
                        obj=adapters.xgboost_objective(obj, device="cuda"), evals=[(dv, "v")],
                        custom_metric=adapters.xgboost_metric("ndcg@5"), evals_result=res, verbose_eval=False,
                        callbacks=[adapters.xgboost_early_stopping(4, "ndcg@5")])
    assert booster.best_iteration == int(np.argmax(res["v"][adapters.metric_key("ndcg@5")]))


@pytest.mark.parametrize("n_preds", [3, 40])
def test_wrong_length_preds_name_preds_and_the_expected_length(n_preds):
    """Issue 30: numpy's "could not broadcast input array" came out of the round's copy."""
    d = customobj.synthetic(5, 4, 3, seed=0)
    n = d.y.size
    dtrain = xgb.DMatrix(d.X, d.y, group=d.group)
    f = adapters.xgboost_objective(customobj.LambdaRank())
    with pytest.raises(ValueError, match=rf"scores \(preds\) of shape \({n_preds},\) .*expected {n} scores"):
        f(np.zeros(n_preds, np.float32), dtrain)
    g = adapters.xgboost_objective(customobj.SquaredError())
    with pytest.raises(ValueError, match=r"scores \(preds\) of shape \(4,\) .*expected 3 scores"):
        g(np.zeros(3), np.zeros(4))
