"""customobj/ole/booster.py: TreeBooster as a scikit-learn estimator (issue 12 point 7): parameters,
clone, repr, pickle, score, qid, feature names, GridSearchCV / cross_val_score with metadata
routing, the progress bar, and scikit-learn's own estimator checks (with the ranking-specific
exclusions of docs/sklearn.md)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score

import customobj as co
from customobj.data import synthetic
from customobj.ole import TreeBooster

SMALL = dict(n_estimators=3, num_leaves=4, min_data_in_leaf=5, verbose=False)
SKLEARN = tuple(int(v) for v in sklearn.__version__.split(".")[:2])


@pytest.fixture(scope="module")
def data():
    d = synthetic(30, 10, 5, seed=3)
    return np.asarray(d.X), d.y, np.asarray(d.group), d.qid


@pytest.fixture(scope="module")
def fitted(data):
    X, y, g, _ = data
    return TreeBooster(co.RankNet(sigma=2.0), **SMALL).fit(X, y, g)


# ------------------------------------------------------------------------------------------------
# parameters, clone, repr
# ------------------------------------------------------------------------------------------------
def test_get_params_returns_the_constructor_arguments_unmodified():
    obj = co.RankNet(sigma=2.0)
    lr = np.float32(0.25)
    model = TreeBooster(obj, learning_rate=lr, num_leaves=np.int64(7), verbose=0)
    params = model.get_params()
    assert params["objective"] is obj and params["learning_rate"] is lr and params["verbose"] == 0
    assert type(params["num_leaves"]) is np.int64
    assert set(params) == set(TreeBooster().get_params())
    assert TreeBooster().get_params()["objective"] is None  # documented default: LambdaRank()


def test_clone_round_trip_and_set_params():
    model = TreeBooster(co.LambdaRank(k=5), criterion="wse", num_leaves=8, random_state=3)
    twin = clone(model)
    assert twin is not model and twin.get_params()["objective"] == model.objective
    assert {k: v for k, v in twin.get_params().items() if k != "objective"} == \
        {k: v for k, v in model.get_params().items() if k != "objective"}
    assert twin.set_params(num_leaves=16, learning_rate=0.05) is twin
    assert twin.num_leaves == 16 and model.num_leaves == 8
    with pytest.raises(ValueError, match="Invalid parameter 'leaves'"):
        twin.set_params(leaves=3)


def test_readable_repr():
    assert repr(TreeBooster()) == "TreeBooster()"
    assert repr(TreeBooster(co.RankNet(sigma=2.0), num_leaves=8, verbose=False)) == \
        "TreeBooster(num_leaves=8, objective=RankNet(sigma=2.0), verbose=False)"


def test_fit_does_not_change_the_objective_parameter(data):
    X, y, g, _ = data
    obj = co.McRank()  # infers its class count on first use: the booster trains a copy
    model = TreeBooster(obj, **SMALL).fit(X, y, g)
    assert obj.n_outputs is None and model.objective is obj
    assert model.objective_.n_outputs == int(y.max()) + 1 == model.n_outputs_


def test_default_objective_is_lambdarank(data):
    X, y, g, _ = data
    a = TreeBooster(**SMALL).fit(X, y, g)
    b = TreeBooster(co.LambdaRank(), **SMALL).fit(X, y, g)
    assert isinstance(a.objective_, co.LambdaRank) and a.objective is None
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


# ------------------------------------------------------------------------------------------------
# fitted attributes, qid, score
# ------------------------------------------------------------------------------------------------
def test_unfitted_model_raises_not_fitted(data):
    X, y, g, _ = data
    model = TreeBooster()
    for call in (lambda: model.predict(X), lambda: model.score(X, y, g), lambda: model.feature_importances_):
        with pytest.raises(NotFittedError, match="not fitted"):
            call()


def test_n_features_in_and_alias(fitted, data):
    X = data[0]
    assert fitted.n_features_in_ == X.shape[1] == fitted.n_features_
    assert isinstance(fitted.n_features_in_, int)
    assert not hasattr(fitted, "feature_names_in_")  # only for string column names


def test_feature_names_from_a_dataframe(data):
    pd = pytest.importorskip("pandas")
    X, y, g, _ = data
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    model = TreeBooster(co.RankNet(), **SMALL).fit(df, y, g)
    assert model.feature_names_in_.dtype == object
    assert model.feature_names_in_.tolist() == list(df.columns)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        plain = model.predict(X)
    np.testing.assert_array_equal(model.predict(df), plain)
    with pytest.raises(ValueError, match="Feature names must be in the same order"):
        model.predict(df[df.columns[::-1]])
    model.fit(X, y, g)  # refit on an array: no names any more
    assert not hasattr(model, "feature_names_in_")


def test_qid_trains_the_same_model_as_group(data):
    X, y, g, qid = data
    a = TreeBooster(co.LambdaRank(), **SMALL).fit(X, y, g)
    b = TreeBooster(co.LambdaRank(), **SMALL).fit(X, y, qid=qid)
    assert a.to_json() == b.to_json()


def test_fit_position_travels_with_the_data_as_lightgbms_dataset_position(data):
    """Issue 40 item 5: ``fit(position=)`` reaches the objective as the data's own positions (as a
    LightGBM Dataset's ``position`` field does through the adapters): the trees of ``Unbiased``
    given the positions itself, not those of the row order; a 1-based log with ``first_position=1``."""
    X, y, g, _ = data
    clicks = (y > 1).astype(float)
    # position 1 skipped in every other query: a row's position is not its place in the query's rows
    pos = np.concatenate([np.r_[0, np.arange(1 + q % 2, n + q % 2)] for q, n in enumerate(g)])
    given = TreeBooster(co.Unbiased(co.LambdaRank()), **SMALL).fit(X, clicks, g, position=pos)
    own = TreeBooster(co.Unbiased(co.LambdaRank(), position=pos), **SMALL).fit(X, clicks, g)
    one_based = TreeBooster(co.Unbiased(co.LambdaRank(), first_position=1), **SMALL).fit(X, clicks, g,
                                                                                           position=pos + 1)
    row_order = TreeBooster(co.Unbiased(co.LambdaRank()), **SMALL).fit(X, clicks, g)
    for other in (own, one_based):  # the same trees (the model files differ in the objective's repr)
        np.testing.assert_array_equal(given.predict(X), other.predict(X))
        np.testing.assert_array_equal(given.position_bias_, other.position_bias_)
    assert not np.array_equal(given.predict(X), row_order.predict(X))
    assert TreeBooster(co.RankNet(), **SMALL).fit(X, y, g, position=pos).to_json() == \
        TreeBooster(co.RankNet(), **SMALL).fit(X, y, g).to_json()  # a loss that reads no positions ignores them
    with pytest.raises(ValueError, match="position must be 1-D with one display position per row"):
        TreeBooster(co.RankNet(), **SMALL).fit(X, y, g, position=pos[:-1])
    with pytest.raises(ValueError, match="position must hold integer display positions >= 0"):
        TreeBooster(co.RankNet(), **SMALL).fit(X, y, g, position=pos - 2)
    with pytest.raises(ValueError, match="position field differs"):
        TreeBooster(co.Unbiased(co.LambdaRank(), position=pos), **SMALL).fit(X, clicks, g,
                                                                                position=np.minimum(pos, 1))


def test_eval_qid_equals_eval_group(data):
    X, y, g, qid = data
    kw = dict(eval_metric=["ndcg@5", "map"], early_stopping_rounds=2)
    a = TreeBooster(co.RankNet(), **SMALL).fit(X, y, g, eval_set=[(X, y)], eval_group=[g], **kw)
    b = TreeBooster(co.RankNet(), **SMALL).fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid], **kw)
    assert a.evals_result_ == b.evals_result_ and a.best_iteration_ == b.best_iteration_
    assert len(a.evals_result_["valid_0"]["map"]) == a.n_iterations_


def test_score_is_ndcg_at_10_per_query(fitted, data):
    X, y, g, qid = data
    want = co.metrics.ndcg(fitted.predict(X), y, g, k=10)
    assert fitted.score(X, y, g) == pytest.approx(want, abs=1e-15)
    assert fitted.score(X, y, qid=qid) == pytest.approx(want, abs=1e-15)
    assert fitted.score(X, y, g, metric="map") == pytest.approx(co.metrics.average_precision(fitted.predict(X), y, g))
    with pytest.raises(ValueError, match="'misordered' is lower-is-better"):
        fitted.score(X, y, g, metric="misordered")
    with pytest.raises(ValueError, match=r"score needs group= or qid=.*set_score_request\(qid=True\)"):
        fitted.score(X, y)
    with pytest.raises(ValueError, match=f"X has {len(y)} rows but y has {len(y) - 1}"):
        fitted.score(X, y[:-1], g)


def test_pointwise_model_scores_all_rows_as_one_query(data):
    X, y, _, _ = data
    model = TreeBooster(co.SquaredError(), **SMALL).fit(X, y)
    assert model.score(X, y) == pytest.approx(co.metrics.ndcg(model.predict(X), y, [len(y)], k=10))


# ------------------------------------------------------------------------------------------------
# pickle / joblib
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("objective", [co.RankNet(), co.McRank()], ids=["ranknet", "mcrank"])
def test_pickle_and_joblib_round_trip(tmp_path, data, objective):
    import joblib
    X, y, g, _ = data
    Xv = X.copy()
    Xv[::4, 2] = np.nan
    model = TreeBooster(objective, **SMALL).fit(X, y, g)
    want = model.predict(Xv)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(Xv), want)
    path = tmp_path / "model.joblib"
    joblib.dump(model, path)
    loaded = joblib.load(path)
    np.testing.assert_array_equal(loaded.predict(Xv), want)
    assert loaded.score(X, y, g) == model.score(X, y, g)
    assert loaded.get_params()["objective"] == objective


# ------------------------------------------------------------------------------------------------
# model selection with a group-aware splitter and metadata routing
# ------------------------------------------------------------------------------------------------
def _manual_cv(X, y, qid, params, n_splits=3):
    """Fold scores computed by hand: fit on the training queries, NDCG@10 on the held-out queries."""
    out = []
    for train, test in GroupKFold(n_splits).split(X, y, qid):
        m = TreeBooster(**params).fit(X[train], y[train], qid=qid[train])
        out.append(m.score(X[test], y[test], qid=qid[test]))
    return np.array(out)


def test_cross_val_score_routes_qid_to_fit_and_score(data):
    X, y, _, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        est = TreeBooster(**SMALL).set_fit_request(qid=True).set_score_request(qid=True)
        got = cross_val_score(est, X, y, cv=GroupKFold(3), params={"qid": qid, "groups": qid})
    np.testing.assert_allclose(got, _manual_cv(X, y, qid, SMALL), rtol=0, atol=1e-15)


def test_grid_search_with_group_kfold(data):
    X, y, _, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        est = TreeBooster(**SMALL).set_fit_request(qid=True).set_score_request(qid=True)
        search = GridSearchCV(est, {"num_leaves": [2, 6], "learning_rate": [0.1, 0.3]}, cv=GroupKFold(3))
        search.fit(X, y, qid=qid, groups=qid)
    for i, params in enumerate(search.cv_results_["params"]):
        want = _manual_cv(X, y, qid, {**SMALL, **params})
        got = [search.cv_results_[f"split{k}_test_score"][i] for k in range(3)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    assert search.best_params_ == search.cv_results_["params"][int(np.argmax(search.cv_results_["mean_test_score"]))]
    assert search.best_estimator_.n_features_in_ == X.shape[1]


def test_a_pipeline_in_grid_search_is_scored_with_routing_on(data):
    """Issue 39: Pipeline.score passes sample_weight under routing; score lacked it, so every candidate
    scored NaN (or raised) and GridSearchCV chose an arbitrary 'best' model."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, _, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        est = TreeBooster(**SMALL).set_fit_request(qid=True).set_score_request(qid=True)
        pipe = Pipeline([("scale", StandardScaler()), ("rank", est)])
        search = GridSearchCV(pipe, {"rank__num_leaves": [2, 6]}, cv=GroupKFold(3), error_score="raise")
        search.fit(X, y, qid=qid, groups=qid)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all() and search.best_index_ == int(np.argmax(scores))


def test_score_weighs_each_query_by_its_rows_mean_weight(fitted, data):
    X, y, g, _ = data
    per_query = co.metrics.ndcg(fitted.predict(X), y, g, 10, per_query=True)
    w_query = np.arange(1.0, g.size + 1)
    weight = np.repeat(w_query, g) * np.resize([0.5, 1.5], int(g.sum()))  # rows differ; their means per query
    ptr = np.r_[0, np.cumsum(g)]
    means = np.array([weight[a:b].mean() for a, b in zip(ptr[:-1], ptr[1:])])
    assert fitted.score(X, y, g, sample_weight=weight) == pytest.approx(np.dot(per_query, means) / means.sum(), abs=1e-12)
    assert fitted.score(X, y, g, sample_weight=np.ones(y.size)) == pytest.approx(fitted.score(X, y, g), abs=1e-12)
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        fitted.score(X, y, g, sample_weight=-np.ones(y.size))
    with pytest.raises(ValueError, match="sample_weight has 3"):
        fitted.score(X, y, g, sample_weight=np.ones(3))


def test_without_routing_score_says_how_to_route_qid(data):
    X, y, _, qid = data
    search = GridSearchCV(TreeBooster(**SMALL), {"num_leaves": [2]}, cv=GroupKFold(3), error_score="raise")
    with pytest.raises(ValueError, match=r"enable metadata routing .* set_score_request\(qid=True\)"):
        search.fit(X, y, groups=qid, qid=qid)  # legacy mode: qid reaches fit only


def test_grid_search_with_group_sizes_points_at_qid(data):
    """group= (query sizes) is passed whole to every CV split: the error says to pass qid= instead."""
    X, y, group, qid = data
    search = GridSearchCV(TreeBooster(**SMALL), {"num_leaves": [2]}, cv=GroupKFold(3), error_score="raise")
    with pytest.raises(ValueError, match=r"group sizes sum to \d+ but data has \d+ rows\. Under cross-validation "
                                         r"\(GridSearchCV, cross_val_score\).* pass qid= \(one query id per row\)"):
        search.fit(X, y, groups=qid, group=group)


def test_routing_refuses_a_qid_that_score_did_not_request(data):
    from sklearn.exceptions import UnsetMetadataPassedError
    X, y, _, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        est = TreeBooster(**SMALL).set_fit_request(qid=True)
        with pytest.raises(UnsetMetadataPassedError, match="set_score_request"):
            cross_val_score(est, X, y, cv=GroupKFold(3), params={"qid": qid, "groups": qid})


# ------------------------------------------------------------------------------------------------
# progress bar: says why it stopped (issue 12 point 9)
# ------------------------------------------------------------------------------------------------
def test_progress_bar_says_it_stopped_early(capsys, data):
    X, y, g, _ = data
    Xv, yv, gv = synthetic(12, 10, 5, seed=4)
    model = TreeBooster(co.RankNet(), n_estimators=300, num_leaves=4, min_data_in_leaf=5, learning_rate=0.5,
                        verbose=True)
    model.fit(X, y, g, eval_set=[(Xv, yv)], eval_group=[gv], early_stopping_rounds=3)
    err = capsys.readouterr().err
    n, best = model.n_iterations_, model.best_iteration_
    assert n < 300 and n == best + 3
    value = model.evals_result_["valid_0"]["ndcg@10"][best - 1]
    want = (f"TreeBooster stopped early at iteration {n}/300 (no improvement in 3 rounds; best iteration {best}, "
            f"valid_0 ndcg@10 = {value:.6g})")
    assert want in err
    assert f"{n}/300" in err.rsplit("\r", 1)[-1]  # the final state of the bar


def test_progress_bar_says_a_callback_stopped_it_and_is_silent_when_not_verbose(capsys, data):
    X, y, g, _ = data
    TreeBooster(co.RankNet(), n_estimators=20, num_leaves=4, verbose=True).fit(
        X, y, g, callbacks=[lambda booster, it, hist: it == 2])
    assert "TreeBooster stopped by a callback at iteration 3/20" in capsys.readouterr().err
    TreeBooster(co.RankNet(), **SMALL).fit(X, y, g)
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------------------------------------
# scikit-learn's estimator checks. Exclusions, documented in docs/sklearn.md:
# ------------------------------------------------------------------------------------------------
ALWAYS_EXPECTED = {
    "check_do_not_raise_errors_in_init_or_set_params":
        "invalid hyperparameters fail in the constructor too (issue 13), not only in fit",
    "check_sample_weight_equivalence_on_dense_data":
        "histogram booster: bin bounds come from unweighted quantiles and min_data_in_leaf counts rows "
        "(as LightGBM), so a weight of 2 is not the same as a repeated row",
}
#: Checks that call fit(X, y) without query information: a ranking objective refuses that by design.
NEEDS_QUERIES = "a ranking objective needs group= or qid=; the check fits without them"
RANKING_EXPECTED = {name: NEEDS_QUERIES for name in (
    "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_sample_weights_pandas_series",
    "check_sample_weights_not_an_array", "check_sample_weights_list", "check_sample_weights_shape",
    "check_sample_weights_not_overwritten", "check_dtype_object", "check_pipeline_consistency", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1sample", "check_fit2d_1feature", "check_dict_unchanged",
    "check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in", "check_fit2d_predict1d",
)}
CHECKED = [
    TreeBooster(co.SquaredError(), n_estimators=3, num_leaves=4, min_data_in_leaf=1, verbose=False),
    TreeBooster(co.McRank(), n_estimators=3, num_leaves=4, min_data_in_leaf=1, verbose=False),
    TreeBooster(n_estimators=3, num_leaves=4, min_data_in_leaf=1, verbose=False),  # LambdaRank
]


def _expected_failures(estimator):
    if estimator._resolved_objective().needs_group:
        return {**RANKING_EXPECTED, **ALWAYS_EXPECTED}
    return dict(ALWAYS_EXPECTED)


if SKLEARN >= (1, 8):  # expected_failed_checks (1.6) and xfail_strict (1.8)
    from sklearn.utils.estimator_checks import parametrize_with_checks

    # xfail_strict: an excluded check that starts passing fails the suite (the list stays honest);
    # a check that is not excluded and fails, fails the suite
    @parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failures, xfail_strict=True)
    def test_sklearn_estimator_checks(estimator, check):
        check(estimator)

    # The same checks with metadata routing on (as a GridSearchCV or Pipeline user who routes
    # sample_weight runs them): the estimator's metadata requests must not change what fit does.
    # SquaredError (which runs every sample-weight check) and LambdaRank (ranking): McRank's outputs
    # do not meet routing, and its ~5 s of checks are run above.
    @parametrize_with_checks(CHECKED[::2], expected_failed_checks=_expected_failures, xfail_strict=True)
    def test_sklearn_estimator_checks_with_metadata_routing(estimator, check):
        with sklearn.config_context(enable_metadata_routing=True):
            check(estimator)
else:  # pragma: no cover - older scikit-learn
    @pytest.mark.skip(reason="scikit-learn >= 1.8 needed for expected_failed_checks with xfail_strict")
    def test_sklearn_estimator_checks():
        pass


def test_ranking_objective_failures_are_the_missing_query_error(data):
    """The ranking exclusions fail for the documented reason, not another one."""
    from sklearn.utils.estimator_checks import check_dict_unchanged, check_estimators_pickle
    for check in (check_dict_unchanged, check_estimators_pickle):
        with pytest.raises(ValueError, match="LambdaRank is a ranking objective: fit needs group="):
            check("TreeBooster", CHECKED[2])


@pytest.mark.parametrize("shape", [(40,), (40, 2), (40, 4), (80,)])
def test_init_score_of_the_wrong_shape_for_k_outputs_names_init_score(shape):
    """McRank learns one output per grade (3 here): an init_score of another shape is refused by
    name, not with numpy's reshape error."""
    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), np.arange(40) % 3.0
    with pytest.raises(ValueError, match=r"init_score (must have shape \(40, 3\)|has 80 rows)"):
        TreeBooster(co.McRank(), n_estimators=1, verbose=False).fit(X, y, group=[10] * 4, init_score=np.zeros(shape))
    model = TreeBooster(co.McRank(), n_estimators=1, verbose=False).fit(X, y, group=[10] * 4,
                                                                       init_score=np.zeros((40, 3)))
    assert model.predict(X).shape[0] == 40


def test_an_absurd_init_score_names_init_score_not_scores():
    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), np.arange(40) % 3.0
    with pytest.raises(ValueError, match=r"^init_score must satisfy \|init_score\| <= 1e\+100; found 1e\+300") as err:
        TreeBooster(co.LambdaRank(), n_estimators=1, verbose=False).fit(X, y, group=[10] * 4,
                                                                        init_score=np.full(40, 1e300))
    assert "learning rate" not in str(err.value)
