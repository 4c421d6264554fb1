"""adapters.lightgbm_objective / lightgbm_sklearn_objective / lightgbm_metric / LineSearch."""
import inspect
import warnings

import numpy as np
import pytest

from customobj import adapters  # before lightgbm: sets the OpenMP wait policy

import lightgbm as lgb

import customobj
from customobj.metrics import get_metric, misordered_pairs, ndcg
from conftest import count_prepare_calls

P = dict(num_leaves=7, learning_rate=0.2, min_data_in_leaf=10, verbose=-1, num_threads=2, metric="None",
         deterministic=True, force_row_wise=True)


def _ds(data, **kw):
    X, y, sizes = data
    return lgb.Dataset(X, y, group=sizes, **kw)


def test_objective_reads_dataset_and_prepares_once(small, monkeypatch):
    X, y, sizes = small
    obj = customobj.RankNet()
    calls = count_prepare_calls(monkeypatch, obj)
    f = adapters.lightgbm_objective(obj)
    ds = _ds(small, weight=np.linspace(0.5, 2, len(y)))
    seen = []

    def spy(preds, train_data):
        before = preds.copy()
        g, h = f(preds, train_data)
        assert np.array_equal(preds, before)  # LightGBM's score buffer is never written
        seen.append((before, g.copy(), h.copy()))
        return g, h

    lgb.train(dict(P, objective=spy), ds, 5)
    assert len(calls) == 1
    assert len(seen) == 5
    for preds, g, h in seen:
        assert g.dtype == np.float32 and g.shape == (len(y),)
        want_g, want_h = obj.grad_hess(preds, y, sizes, weight=ds.get_weight())
        np.testing.assert_allclose(g, want_g.astype(np.float32), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(h, want_h.astype(np.float32), rtol=1e-6, atol=1e-7)


def test_cache_survives_lightgbm_deepcopying_params(small, monkeypatch):
    obj = customobj.RankNet()
    calls = count_prepare_calls(monkeypatch, obj)
    f = adapters.lightgbm_objective(obj)
    ds = _ds(small, free_raw_data=False)
    lgb.train(dict(P, objective=f), ds, 2)
    lgb.train(dict(P, objective=f), ds, 2)
    assert len(calls) == 1


def test_group_wise_objective_without_groups_is_a_clear_error(small):
    X, y, _ = small
    with pytest.raises(ValueError, match="no query groups"):
        lgb.train(dict(P, objective=adapters.lightgbm_objective(customobj.RankNet())), lgb.Dataset(X, y), 2)


def test_rejects_non_objectives():
    with pytest.raises(TypeError, match="customobj objective"):
        adapters.lightgbm_objective(lambda p, d: (p, p))


def test_weights_are_applied(small):
    X, y, sizes = small
    w = np.random.default_rng(3).uniform(0.2, 3.0, len(y))
    native = lgb.train(dict(P, objective="regression", boost_from_average=False), lgb.Dataset(X, y, weight=w), 8)
    ours = lgb.train(dict(P, objective=adapters.lightgbm_objective(customobj.SquaredError())),
                     lgb.Dataset(X, y, weight=w), 8)
    np.testing.assert_allclose(ours.predict(X), native.predict(X), atol=1e-6)


def test_multiclass_mcrank(small):
    X, y, sizes = small
    obj = customobj.McRank(n_classes=3)
    booster = lgb.train(dict(P, objective=adapters.lightgbm_objective(obj), num_class=3), _ds(small), 10)
    raw = booster.predict(X, raw_score=True)
    assert raw.shape == (len(y), 3)
    # Trained on the right (n, K) layout: the softmax loss goes down from its value at 0.
    assert obj.loss(raw, y) < obj.loss(np.zeros((len(y), 3)), y) * 0.8
    with pytest.raises(ValueError, match="num_class=3"):
        lgb.train(dict(P, objective=adapters.lightgbm_objective(customobj.McRank(n_classes=3))), _ds(small), 1)


def test_model_adaptation_from_init_score(small):
    """Burges sec. 7: boosting from a base model's scores continues that model exactly."""
    X, y, sizes = small
    obj = customobj.RankNet()
    whole = lgb.train(dict(P, objective=adapters.lightgbm_objective(obj)), _ds(small), 12)
    base = lgb.train(dict(P, objective=adapters.lightgbm_objective(obj)), _ds(small), 6)
    init = base.predict(X, raw_score=True)
    first = []

    f = adapters.lightgbm_objective(obj)

    def spy(preds, train_data):
        if not first:
            first.append(preds.copy())
        return f(preds, train_data)

    more = lgb.train(dict(P, objective=spy), _ds(small, init_score=init), 6)
    np.testing.assert_allclose(first[0], init)  # the objective sees the base model's scores
    np.testing.assert_allclose(init + more.predict(X, raw_score=True), whole.predict(X, raw_score=True), atol=1e-6)


def test_sklearn_ranker_matches_train(small):
    X, y, sizes = small
    obj = customobj.RankNet()
    fn = adapters.lightgbm_sklearn_objective(obj)
    # Four parameters: LightGBM's estimators then pass the query sizes (they count parameters).
    assert len(inspect.signature(fn).parameters) == 4
    kw = dict(n_estimators=8, num_leaves=7, learning_rate=0.2, min_child_samples=10, verbose=-1, n_jobs=2,
              deterministic=True, force_row_wise=True)
    ranker = lgb.LGBMRanker(objective=fn, **kw).fit(X, y, group=sizes)
    booster = lgb.train(dict(P, objective=adapters.lightgbm_objective(obj)), _ds(small), 8)
    np.testing.assert_allclose(ranker.predict(X, raw_score=True), booster.predict(X, raw_score=True), atol=1e-9)
    reg = lgb.LGBMRegressor(objective=adapters.lightgbm_sklearn_objective(customobj.SquaredError()), **kw).fit(X, y)
    assert np.mean((reg.predict(X) - y) ** 2) < np.var(y)
    with pytest.raises(ValueError, match="no query groups"):
        lgb.LGBMRegressor(objective=adapters.lightgbm_sklearn_objective(customobj.RankNet()), **kw).fit(X, y)


def test_metric_values_flags_and_record_evaluation(small):
    X, y, sizes = small
    obj = customobj.RankNet()
    curves = {}
    feval = adapters.lightgbm_metric("ndcg@10", "err@10", "map", "precision@100%", "misordered", "ndcg_mpboost@5")
    ds = _ds(small)
    booster = lgb.train(dict(P, objective=adapters.lightgbm_objective(obj)), ds, 6, valid_sets=[ds],
                        valid_names=["train"], feval=feval, callbacks=[lgb.record_evaluation(curves)])
    s = booster.predict(X, raw_score=True)
    got = feval(s, ds)
    flags = {name: hib for name, _, hib in got}
    assert flags["co_misordered"] is False and flags["co_ndcg@10"] is True and flags["co_err@10"] is True
    for name, value, _ in got:
        assert name.startswith("co_")
        assert value == pytest.approx(get_metric(name[3:]).func(s, y, sizes))
        assert curves["train"][name][-1] == pytest.approx(value)
        assert len(curves["train"][name]) == 6
    assert curves["train"]["co_misordered"][-1] == pytest.approx(misordered_pairs(s, y, sizes)[1])


def test_early_stopping_uses_metric_direction(small):
    X, y, sizes = small
    rng = np.random.default_rng(5)
    yv = rng.permutation(y)  # validation labels unrelated to X: the metric wanders
    for name in ("ndcg@5", "misordered"):
        dv = lgb.Dataset(X, yv, group=sizes)
        curves = {}
        booster = lgb.train(dict(P, objective=adapters.lightgbm_objective(customobj.RankNet())), _ds(small), 40,
                            valid_sets=[dv], feval=adapters.lightgbm_metric(name),
                            callbacks=[lgb.early_stopping(5, verbose=False), lgb.record_evaluation(curves)])
        curve = np.array(curves["valid_0"][adapters.metric_key(name)])
        best = np.argmax(curve) if get_metric(name).higher_is_better else np.argmin(curve)
        assert booster.best_iteration == best + 1


def test_metric_without_groups_is_a_clear_error(small):
    X, y, _ = small
    with pytest.raises(ValueError, match="query groups"):
        adapters.lightgbm_metric("ndcg@10")(np.zeros(len(y)), lgb.Dataset(X, y).construct())


# --- LineSearch ------------------------------------------------------------------------------
def _line_search_run(data, obj, *, lr=1.0, shrinkage=1.0, rounds=6, num_class=None, valid=None):
    X, y, sizes = data
    ls = adapters.LineSearch(obj, X, y, sizes, shrinkage=shrinkage, valid_X=None if valid is None else [valid[0]])
    params = dict(P, learning_rate=lr, objective=adapters.lightgbm_objective(obj))
    if num_class:
        params["num_class"] = num_class
    curves = {}
    kw = {}
    if valid is not None:
        kw = dict(valid_sets=[lgb.Dataset(valid[0], valid[1], group=valid[2])], valid_names=["v"],
                  feval=adapters.lightgbm_metric("ndcg@10"), callbacks=[ls, lgb.record_evaluation(curves)])
    else:
        kw = dict(callbacks=[ls])
    booster = lgb.train(params, lgb.Dataset(X, y, group=sizes), rounds, **kw)
    return ls, booster, curves


@pytest.mark.parametrize("make", [customobj.QBRank, customobj.RankNet, lambda: customobj.McRank(n_classes=3)])
def test_line_search_never_worse_than_the_plain_tree(small, make):
    obj = make()
    k = obj.n_outputs if obj.n_outputs and obj.n_outputs > 1 else None
    ls, booster, _ = _line_search_run(small, obj, num_class=k)
    X, y, sizes = small
    assert len(ls.rhos) == 6
    assert all(a <= b + 1e-9 * abs(b) for a, b in zip(ls.loss, ls.loss_unscaled))
    assert any(abs(r - 1.0) > 1e-3 for r in ls.rhos)
    # The model holds the rescaled leaves and the objective saw the corrected scores: the
    # loss of the final model's predictions is the one the line search reported.
    assert obj.loss(booster.predict(X, raw_score=True), y, sizes) == pytest.approx(ls.loss[-1], rel=1e-9)


def test_line_search_step_minimises_along_the_tree(small):
    X, y, sizes = small
    obj = customobj.RankNet()
    ls = adapters.LineSearch(obj, X, y, sizes)
    rng = np.random.default_rng(0)
    s = rng.normal(size=len(y))
    t = -obj.grad_hess(s, y, sizes)[0]
    rho, phi, _ = ls.search(s, t)
    for r in (rho * 0.9, rho * 1.1):
        assert obj.loss(s + r * t, y, sizes) >= phi
    assert phi == pytest.approx(obj.loss(s + rho * t, y, sizes))


def test_line_search_keeps_evaluation_consistent(small):
    X, y, sizes = small
    rng = np.random.default_rng(2)
    Xv = X + rng.normal(scale=0.1, size=X.shape)
    ls, booster, curves = _line_search_run(small, customobj.QBRank(), valid=(Xv, y, sizes), shrinkage=0.5)
    final = ndcg(booster.predict(Xv, raw_score=True), y, sizes, 10)
    assert curves["v"]["co_ndcg@10"][-1] == pytest.approx(final)


def test_line_search_refuses_metrics_it_cannot_recompute(small):
    """Their recorded values would be the unscaled model's (issue 26.2): refused before any change."""
    X, y, sizes = small
    dv = lgb.Dataset(X, y, group=sizes)
    ls = adapters.LineSearch(customobj.RankNet(), X, y, sizes, valid_X=[X])
    with pytest.raises(ValueError, match="LineSearch cannot recompute metric 'l2'.*'metric': 'None'"):
        lgb.train(dict(P, metric="l2", objective=adapters.lightgbm_objective(customobj.RankNet())),
                  lgb.Dataset(X, y, group=sizes), 2, valid_sets=[dv], callbacks=[ls])
    assert ls.rhos == []


def _fresh_python(code, **env):
    import os
    import subprocess
    import sys

    full = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "KMP_BLOCKTIME", "CUSTOMOBJ_KEEP_OMP_ENV")}
    full.update(env)
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], env=full, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out


def test_import_sets_passive_wait_policy_unless_user_chose():
    code = "import os, customobj.adapters; print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('KMP_BLOCKTIME'))"
    assert _fresh_python(code).stdout.split() == ["passive", "0"]
    assert _fresh_python(code, OMP_WAIT_POLICY="active").stdout.split() == ["active", "0"]
    late = _fresh_python("import lightgbm, customobj.adapters")
    assert "imported before customobj.adapters" in late.stderr


# --- one callable for lightgbm.train and the scikit-learn estimators; pickling -----------------
KW = dict(n_estimators=6, num_leaves=7, learning_rate=0.2, min_child_samples=10, verbose=-1, n_jobs=1,
          deterministic=True, force_row_wise=True)


def _split(data, n_queries):
    X, y, sizes = data
    cut = int(np.sum(sizes[:n_queries]))
    return (X[:cut], y[:cut], sizes[:n_queries]), (X[cut:], y[cut:], sizes[n_queries:])


def test_lightgbm_objective_and_metric_work_in_lgbmranker_with_early_stopping(small):
    (X, y, g), (Xv, yv, gv) = _split(small, 40)
    obj = customobj.LambdaRank()
    ranker = lgb.LGBMRanker(objective=adapters.lightgbm_objective(obj), **dict(KW, n_estimators=60))
    ranker.fit(X, y, group=g, eval_X=(Xv,), eval_y=(yv,), eval_group=[gv], eval_at=[10],
               eval_metric=adapters.lightgbm_metric("ndcg@10"), callbacks=[lgb.early_stopping(5, verbose=False)])
    hist = ranker.evals_result_["valid_0"]
    assert set(hist) == {"ndcg@10", "co_ndcg@10"}  # LightGBM's and customobj's curves kept apart
    assert len(hist["co_ndcg@10"]) == len(hist["ndcg@10"]) > 0
    assert 0 < ranker.best_iteration_ < 60
    best = ranker.best_iteration_  # the fitted model keeps the trees up to the best round
    assert hist["co_ndcg@10"][best - 1] == pytest.approx(ndcg(ranker.predict(Xv, raw_score=True), yv, gv, 10))
    # The same callable as lightgbm.train's objective trains the same model.
    booster = lgb.train(dict(P, num_leaves=7, learning_rate=0.2, min_data_in_leaf=10,
                             objective=adapters.lightgbm_objective(obj)), lgb.Dataset(X, y, group=g), 3)
    same = lgb.LGBMRanker(objective=adapters.lightgbm_objective(obj), **dict(KW, n_estimators=3)).fit(X, y, group=g)
    np.testing.assert_allclose(same.predict(X, raw_score=True), booster.predict(X, raw_score=True), atol=1e-9)


def test_lightgbm_objective_rejects_a_second_argument_of_the_wrong_kind():
    with pytest.raises(TypeError, match=r"f\(preds, train_data\).*f\(y_true, y_pred, weight, group\).*list"):
        adapters.lightgbm_objective(customobj.RankNet())(np.zeros(3), [0.0, 1.0, 2.0])


@pytest.mark.parametrize("dump", ["pickle", "joblib"])
def test_fitted_estimators_pickle_and_predict_the_same(small, tmp_path, dump):
    import pickle

    import joblib

    X, y, sizes = small
    ranker = lgb.LGBMRanker(objective=adapters.lightgbm_objective(customobj.LambdaRank()), **KW).fit(
        X, y, group=sizes, eval_X=(X,), eval_y=(y,), eval_group=[sizes], eval_metric=adapters.lightgbm_metric("ndcg@10"))
    reg = lgb.LGBMRegressor(objective=adapters.lightgbm_sklearn_objective(customobj.SquaredError()), **KW).fit(X, y)
    for model in (ranker, reg):
        path = tmp_path / f"{type(model).__name__}.bin"
        if dump == "pickle":
            path.write_bytes(pickle.dumps(model))
            back = pickle.loads(path.read_bytes())
        else:
            joblib.dump(model, path)
            back = joblib.load(path)
        np.testing.assert_array_equal(back.predict(X), model.predict(X))
        assert back.objective == model.objective  # the customobj objective travelled
    # The loaded objective trains again (its per-dataset state is rebuilt where it lands).
    again = pickle.loads(pickle.dumps(ranker)).fit(X, y, group=sizes)
    np.testing.assert_allclose(again.predict(X), ranker.predict(X), atol=1e-12)


# --- caches notice set_label / set_weight / set_group ------------------------------------------
def _grad(f, ds, preds):
    g, h = f(preds, ds)
    return g.copy(), h.copy()


def test_objective_follows_set_label_set_weight_set_group(small):
    X, y, sizes = small
    obj = customobj.RankNet()
    f = adapters.lightgbm_objective(obj)
    ds = _ds(small, params={"verbosity": -1}).construct()
    s = np.random.default_rng(0).normal(size=len(y))
    g0, _ = _grad(f, ds, s)
    np.testing.assert_allclose(g0, obj.grad_hess(s, y, sizes)[0].astype(np.float32), rtol=1e-6, atol=1e-7)
    y2 = y[::-1].copy()
    ds.set_label(y2)
    g1, _ = _grad(f, ds, s)
    np.testing.assert_allclose(g1, obj.grad_hess(s, y2, sizes)[0].astype(np.float32), rtol=1e-6, atol=1e-7)
    w = np.linspace(0.5, 2.0, len(y))
    ds.set_weight(w)
    g2, _ = _grad(f, ds, s)
    np.testing.assert_allclose(g2, obj.grad_hess(s, y2, sizes, weight=w)[0].astype(np.float32), rtol=1e-5, atol=1e-7)
    sizes2 = np.array([len(y) // 2, len(y) - len(y) // 2])
    ds.set_group(sizes2)
    g3, _ = _grad(f, ds, s)
    np.testing.assert_allclose(g3, obj.grad_hess(s, y2, sizes2, weight=w)[0].astype(np.float32), rtol=1e-5, atol=1e-7)


def test_training_after_set_label_uses_the_new_labels(small):
    X, y, sizes = small
    y2 = np.random.default_rng(9).permutation(y)
    f = adapters.lightgbm_objective(customobj.RankNet())
    ds = _ds(small, free_raw_data=False)
    lgb.train(dict(P, objective=f), ds, 3)
    ds.set_label(y2)
    reused = lgb.train(dict(P, objective=f), ds, 3)
    fresh = lgb.train(dict(P, objective=adapters.lightgbm_objective(customobj.RankNet())),
                      lgb.Dataset(X, y2, group=sizes), 3)
    np.testing.assert_allclose(reused.predict(X), fresh.predict(X), atol=1e-9)


def test_setup_converts_the_labels_once(small, monkeypatch):
    """Issue 24.6: each calling convention converts the labels once when it prepares a data set."""
    from customobj.adapters import _data, lightgbm as lgb_adapter

    X, y, sizes = small
    calls = []

    def counted(labels):
        calls.append(1)
        return _data.as_label_array(labels)

    monkeypatch.setattr(lgb_adapter, "as_label_array", counted)
    f = adapters.lightgbm_objective(customobj.RankNet())
    f(y.copy(), np.zeros(len(y)), None, sizes)  # LGBMRanker's convention
    assert len(calls) == 1
    f(np.zeros(len(y)), lgb.Dataset(X, y, group=sizes).construct())  # lightgbm.train's
    assert len(calls) == 2


@pytest.mark.parametrize("wrap", [lambda o: o, lambda o: 2.0 * o], ids=["alone", "scaled"])
def test_a_1_based_position_field_with_first_position_1_is_accepted(wrap):
    """Issue 39: LightGBM reads a constructed Dataset's position field back as its 0-based ids, so a
    1-based field with first_position=1 (what the refusal advised) was refused."""
    d = customobj.data.synthetic(30, 8, 4, seed=0)
    log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=2, seed=0)
    bias = []
    for first in (0, 1):
        f = adapters.lightgbm_objective(wrap(customobj.Unbiased(customobj.LambdaRank(), first_position=first)))
        ds = lgb.Dataset(log.X, log.y, group=log.group, position=log.position + first)
        booster = lgb.train({"objective": f, "verbose": -1, "num_threads": 1, "deterministic": True}, ds, 3)
        bias.append(f.fitted_attributes(ds)["position_bias_"])
        assert np.isfinite(booster.predict(log.X)).all()
    assert np.array_equal(bias[0], bias[1]) and bias[0][0] == 1.0 and bias[0][1] < 1.0
