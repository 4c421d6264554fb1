"""customobj.ole: LightGBM equivalence and export, persistence, reproducibility, API behaviour."""
import json

import lightgbm as lgb
import numpy as np
import pytest

from customobj import LambdaRank, McRank, RankNet, SquaredError
from customobj.ole import TreeBooster
from customobj.ole import model_file
from customobj.ole.predictor import ZERO_THRESHOLD
from test_ole_model_file import rank_data as model_file_rank_data

QUIET = dict(verbose=False)


def rank_data(seed, n_queries=20, q_size=30, n_features=5, nan_frac=0.05):
    return model_file_rank_data(seed, n_queries, q_size, n_features, nan_frac)


def test_wse_squared_error_first_tree_equals_lightgbm():
    rng = np.random.default_rng(0)
    n = 800
    X = rng.integers(0, 25, size=(n, 6)).astype(float)  # < max_bin distinct values: both binnings exact
    y = X[:, 0] * 0.3 + 2 * np.sin(X[:, 1]) + X[:, 2] * X[:, 3] / 100 + rng.uniform(0, 1, n) + 2.0
    params = dict(num_leaves=11, min_data_in_leaf=15, lambda_l2=0.5)
    ours = TreeBooster(SquaredError(), criterion="wse", n_estimators=1, learning_rate=0.1, **params, **QUIET).fit(X, y)
    ref = lgb.train(dict(objective="regression", boost_from_average=False, min_data_in_bin=1, max_bin=255,
                         learning_rate=0.1, verbose=-1, num_threads=1, feature_pre_filter=False, **params),
                    lgb.Dataset(X, y), num_boost_round=1)
    t_ref = ref.dump_model()["tree_info"][0]["tree_structure"]
    t_ours = ours.to_lightgbm().dump_model()["tree_info"][0]["tree_structure"]

    def walk(node):  # (feature, sorted leaf values...) in split order, ignoring threshold encodings
        if "leaf_value" in node:
            return [("leaf", node["leaf_value"], node["leaf_count"])]
        return [("split", node["split_feature"], node["split_index"])] + walk(node["left_child"]) + walk(node["right_child"])

    a, b = walk(t_ref), walk(t_ours)
    assert len(a) == len(b) == 2 * 11 - 1  # the leaf budget is used up: no tie / gain-sign accidents
    for x, z in zip(a, b):
        assert x[0] == z[0] and x[2] == z[2]
        if x[0] == "split":
            assert x[1] == z[1]
        else:
            assert x[1] == pytest.approx(z[1], rel=1e-6)  # LightGBM's gradients are float32
    # and the same partition of the training rows
    np.testing.assert_array_equal(ref.predict(X, pred_leaf=True), ours.to_lightgbm().predict(X, pred_leaf=True))
    np.testing.assert_allclose(ref.predict(X), ours.predict(X), rtol=1e-6)


def probe_rows(model, X, n_base=40):
    """Rows on which an export most easily goes wrong: every split's threshold and its neighbours,
    values at LightGBM's zero threshold (1e-35f) and below, signed zeros, NaN and infinities."""
    base = np.nan_to_num(X[:n_base], nan=0.5)
    rows = [X[:n_base]]
    probes = [0.0, -0.0, 5e-324, -5e-324, 1e-40, -1e-40, 1e-36, ZERO_THRESHOLD, -ZERO_THRESHOLD,
              np.nextafter(ZERO_THRESHOLD, 1.0), np.nextafter(-ZERO_THRESHOLD, -1.0), np.nan, np.inf, -np.inf]
    for t in model.trees_:
        for f, thr in zip(t["split_feature"], t["threshold"]):
            probes_f = [thr, np.nextafter(thr, np.inf), np.nextafter(thr, -np.inf)]
            r = np.repeat(base[:3], len(probes_f), axis=0)
            r[:, f] = np.tile(probes_f, 3)
            rows.append(r)
    for v in probes:
        rows.append(np.full((1, X.shape[1]), v))
        r = base[:X.shape[1]].copy()
        np.fill_diagonal(r, v)
        rows.append(r)
    return np.vstack(rows)


def assert_lightgbm_equal(model, X, num_iteration=None):
    booster = model.to_lightgbm(num_iteration=num_iteration)
    Xt = probe_rows(model, X)
    np.testing.assert_array_equal(booster.predict(Xt, raw_score=True), model.predict(Xt, num_iteration=num_iteration))
    return booster


OBJECTIVES = {"squared_error": SquaredError, "ranknet": RankNet, "lambdarank": lambda: LambdaRank(truncation=10),
              "mcrank": McRank}


@pytest.mark.parametrize("objective", sorted(OBJECTIVES))
@pytest.mark.parametrize("criterion", ["se", "wse", "ole"])
def test_to_lightgbm_predicts_exactly_what_predict_does_after_early_stopping(objective, criterion):
    X, y, group = rank_data(1, n_queries=10)
    Xv, yv, gv = rank_data(2, n_queries=10)
    model = TreeBooster(OBJECTIVES[objective](), criterion=criterion, num_leaves=6, n_estimators=40, learning_rate=0.7,
                        min_data_in_leaf=5, **QUIET)
    model.fit(X, y, group, eval_set=[(Xv, yv)], eval_group=[gv], early_stopping_rounds=2)
    best, K = model.best_iteration_, model.n_outputs_
    assert best < model.n_iterations_  # early stopping left trees that predict() does not use
    booster = assert_lightgbm_equal(model, Xv)
    assert booster.num_trees() == best * K
    for it in (1, -1):
        assert_lightgbm_equal(model, Xv, num_iteration=it)
    # exporting every tree would not be faithful: the default export must differ from it
    every = model.to_lightgbm(num_iteration=-1)
    assert every.num_trees() == model.n_iterations_ * K
    assert np.abs(every.predict(Xv, raw_score=True) - model.predict(Xv)).max() > 0


def test_tiny_thresholds_and_values_export_exactly():
    # training keeps bounds out of [-1e-35f, 1e-35f) (next test); a model file may still hold tiny
    # thresholds (written before, or by hand): put some on both sides of 0 and export
    rng = np.random.default_rng(11)
    X = rng.choice([0.0, 1e-40, 2e-40, -1e-40, 3e-36, 1.0, 2.0, np.nan], size=(400, 3))
    y = (np.nan_to_num(X[:, 1]) + rng.normal(0, 0.3, 400)) % 4
    model = TreeBooster(SquaredError(), criterion="wse", num_leaves=8, n_estimators=5, min_data_in_leaf=2, **QUIET)
    d = json.loads(model.fit(X, y).to_json())
    tiny = [5e-41, -1e-40, 0.0, -0.0, ZERO_THRESHOLD, -ZERO_THRESHOLD, 2e-36, np.nextafter(-ZERO_THRESHOLD, -1)]
    for k, t in enumerate(d["trees"]):
        t["threshold"] = [tiny[(k + i) % len(tiny)] for i in range(len(t["threshold"]))]
    tweaked = model_file.loads(TreeBooster, json.dumps(d))
    assert_lightgbm_equal(tweaked, X)


def test_infinite_feature_values_and_minus_infinity_threshold_export_exactly():
    X = np.array([[-np.inf, 0.0], [1.0, np.inf], [2.0, np.nan], [np.inf, 1.0]] * 10)
    y = np.array([0, 1, 2, 3] * 10, float)
    model = TreeBooster(SquaredError(), criterion="wse", num_leaves=4, n_estimators=2, min_data_in_leaf=1, **QUIET)
    model.fit(X, y)
    assert -np.inf in model.trees_[0]["threshold"]
    assert_lightgbm_equal(model, X)


def test_exported_string_is_parsed_and_rewritten_by_lightgbm():
    X, y, group = rank_data(3, n_queries=8)
    model = TreeBooster(McRank(), criterion="wse", num_leaves=5, n_estimators=3, min_data_in_leaf=5, **QUIET).fit(X, y)
    text = model.to_lightgbm_string()
    booster = lgb.Booster(model_str=text)
    again = lgb.Booster(model_str=booster.model_to_string())  # LightGBM's own writer, then its parser again
    np.testing.assert_array_equal(again.predict(X, raw_score=True), model.predict(X))
    assert booster.num_model_per_iteration() == 3 and booster.num_trees() == 9
    assert booster.feature_name() == [f"Column_{j}" for j in range(5)]


def test_feature_names_are_exported():
    X, y, group = rank_data(4, n_queries=8)
    model = TreeBooster(RankNet(), num_leaves=4, n_estimators=2, min_data_in_leaf=5, **QUIET).fit(X, y, group)
    model.feature_names_in_ = np.array(["bm25", "page rank", "url\tlen", "q1", "q2"], dtype=object)
    booster = assert_lightgbm_equal(model, X)
    assert booster.feature_name() == ["bm25", "page_rank", "url_len", "q1", "q2"]
    model.feature_names_in_ = np.array(["a", "b:c", "d", "e", "f"], dtype=object)
    with pytest.raises(ValueError, match="feature name 'b:c'"):
        model.to_lightgbm_string()


def test_dataframe_column_names_are_exported():
    pd = pytest.importorskip("pandas")
    X, y, group = rank_data(5, n_queries=8)
    df = pd.DataFrame(X, columns=["bm25", "tf idf", "pagerank", "len", "clicks"])
    model = TreeBooster(RankNet(), num_leaves=4, n_estimators=2, min_data_in_leaf=5, **QUIET).fit(df, y, group)
    booster = model.to_lightgbm()
    assert booster.feature_name() == ["bm25", "tf_idf", "pagerank", "len", "clicks"]
    np.testing.assert_array_equal(booster.predict(X, raw_score=True), model.predict(df))


def test_nothing_to_export_and_bad_num_iteration_raise():
    X, y, group = rank_data(6, n_queries=4)
    empty = TreeBooster(SquaredError(), n_estimators=0, **QUIET).fit(X, y)
    with pytest.raises(ValueError, match="no trees to export"):
        empty.to_lightgbm_string()
    with pytest.raises(ValueError, match="not fitted"):
        TreeBooster(SquaredError()).to_lightgbm_string()
    model = TreeBooster(SquaredError(), n_estimators=1, num_leaves=3, **QUIET).fit(X, y)
    with pytest.raises(TypeError, match="num_iteration"):
        model.to_lightgbm_string(num_iteration=1.5)


def test_to_lightgbm_single_leaf_trees():
    X, y, group = rank_data(3)
    model = TreeBooster(SquaredError(), min_data_in_leaf=len(y), n_estimators=3, **QUIET).fit(X, y)  # no split fits
    np.testing.assert_allclose(model.to_lightgbm().predict(X), model.predict(X), atol=1e-12)
    np.testing.assert_allclose(model.predict(X), np.full(len(y), model.predict(X)[0]))


def test_same_seed_same_model_for_any_thread_count():
    rng = np.random.default_rng(5)
    n_q, q = 700, 30  # > one histogram block of rows and of pairs
    X = rng.normal(size=(n_q * q, 4))
    X[rng.random(X.shape) < 0.02] = np.nan
    y = rng.integers(0, 3, n_q * q).astype(float)
    group = [q] * n_q
    kw = dict(num_leaves=7, n_estimators=2, bagging_fraction=0.8, feature_fraction=0.75, random_state=3, **QUIET)
    a = TreeBooster(RankNet(), n_jobs=1, **kw).fit(X, y, group).to_json()
    b = TreeBooster(RankNet(), n_jobs=2, **kw).fit(X, y, group).to_json()
    assert a == b  # the thread count is not part of the saved model
    ja = json.loads(a)
    c = json.loads(TreeBooster(RankNet(), n_jobs=2, **{**kw, "random_state": 4}).fit(X, y, group).to_json())
    assert c["trees"] != ja["trees"]


def test_staged_predict_importances_and_early_stopping():
    X, y, group = rank_data(6)
    Xv, yv, gv = rank_data(7)
    model = TreeBooster(RankNet(), num_leaves=5, n_estimators=30, learning_rate=0.3, min_data_in_leaf=5,
                        importance_type="gain", **QUIET)
    model.fit(X, y, group, eval_set=[(Xv, yv)], eval_group=[gv], eval_metric=["ndcg@5", "map"],
              early_stopping_rounds=3)
    hist = model.evals_result_["valid_0"]
    assert set(hist) == {"ndcg@5", "map"} and len(hist["ndcg@5"]) == model.n_iterations_
    best = model.best_iteration_
    assert hist["ndcg@5"][best - 1] == max(hist["ndcg@5"])
    assert model.n_iterations_ <= 30
    stages = list(model.staged_predict(Xv))
    assert len(stages) == model.n_iterations_
    for it in (1, best, model.n_iterations_):
        np.testing.assert_allclose(stages[it - 1], model.predict(Xv, num_iteration=it), atol=1e-12)
    np.testing.assert_allclose(model.predict(Xv), stages[best - 1], atol=1e-12)
    gain = model.feature_importances_
    assert gain.shape == (5,) and gain.sum() == pytest.approx(sum(sum(t["split_gain"]) for t in model.trees_))
    model.importance_type = "split"
    assert model.feature_importances_.sum() == sum(t["num_leaves"] - 1 for t in model.trees_)


def test_callback_stops_training():
    X, y, group = rank_data(8)
    seen = []

    def cb(booster, it, evals):
        seen.append(it)
        return it == 2

    model = TreeBooster(RankNet(), n_estimators=10, num_leaves=4, min_data_in_leaf=5, **QUIET).fit(
        X, y, group, callbacks=[cb])
    assert seen == [0, 1, 2] and model.n_iterations_ == 3


def test_bad_arguments_raise():
    X, y, group = rank_data(9)
    with pytest.raises(ValueError, match="criterion"):
        TreeBooster(RankNet(), criterion="gini")
    with pytest.raises(ValueError, match="growth"):
        TreeBooster(RankNet(), growth="depth_first")
    with pytest.raises(ValueError, match="leaf_solver"):
        TreeBooster(RankNet(), leaf_solver="exact")
    with pytest.raises(TypeError, match="objective"):
        TreeBooster("lambdarank")
    with pytest.raises(ValueError, match="num_leaves"):
        TreeBooster(RankNet(), num_leaves=0)
    with pytest.raises(ValueError, match="group"):
        TreeBooster(RankNet(), **QUIET).fit(X, y)
    with pytest.raises(ValueError, match="2-D"):
        TreeBooster(RankNet(), **QUIET).fit(X[:, 0], y, group)
    with pytest.raises(ValueError, match="not fitted"):
        TreeBooster(RankNet()).predict(X)
    model = TreeBooster(RankNet(), n_estimators=1, **QUIET).fit(X, y, group)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
    with pytest.raises(ValueError, match="eval_set"):
        TreeBooster(RankNet(), **QUIET).fit(X, y, group, early_stopping_rounds=2)


@pytest.mark.parametrize("bagging_fraction", [1.0, 0.7])
def test_pairs_written_in_place_give_the_same_model_as_compacted_pairs(bagging_fraction):
    # LambdaRank writes its couplings into the booster's pair buffer; 1.0 * LambdaRank (a Scaled
    # wrapper) returns fresh arrays that the booster compacts: both paths must grow the same trees.
    from customobj import LambdaRank
    rng = np.random.default_rng(8)
    n_q, q = 300, 25
    X = rng.normal(size=(n_q * q, 5))
    y = rng.integers(0, 4, n_q * q).astype(float)
    group = [q] * n_q
    kw = dict(num_leaves=9, n_estimators=3, bagging_fraction=bagging_fraction, random_state=2, **QUIET)
    direct = LambdaRank(truncation=5)
    assert direct.writes_pair_buffer and not (1.0 * direct).writes_pair_buffer
    a = json.loads(TreeBooster(direct, **kw).fit(X, y, group).to_json())["trees"]
    b = json.loads(TreeBooster(1.0 * LambdaRank(truncation=5), **kw).fit(X, y, group).to_json())["trees"]
    assert a == b


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_feature_infos_are_the_training_value_ranges(dtype):
    # taken from the binning pass (no extra pass over X); an all-NaN column is "none" (LightGBM)
    rng = np.random.default_rng(12)
    X = rng.normal(size=(600, 9)).astype(dtype)
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 4] = np.nan
    X[:, 7] = 3.0
    model = TreeBooster(RankNet(), num_leaves=4, n_estimators=1, n_jobs=2, **QUIET)
    model.fit(X, rng.integers(0, 3, 600).astype(float), [30] * 20)
    want = ["none" if np.all(np.isnan(c)) else f"[{float(np.nanmin(c))!r}:{float(np.nanmax(c))!r}]" for c in X.T]
    assert model.feature_infos_ == want
    assert model.feature_infos_[4] == "none" and model.feature_infos_[7] == "[3.0:3.0]"
    np.testing.assert_allclose(model.to_lightgbm().predict(X), model.predict(X), rtol=1e-6, atol=1e-6)


def test_values_within_the_zero_threshold_train_as_zero():
    # LightGBM's semantics everywhere: training bins |x| <= 1e-35f with 0, so the model fitted on X
    # is the model fitted on X with those values set to 0, and predict() agrees with training
    rng = np.random.default_rng(13)
    X = rng.choice([0.0, 1e-40, -1e-40, 2e-36, 3e-35, -3e-35, 1.0, np.nan], size=(300, 2))
    y = (np.nan_to_num(X[:, 0]) * 1e35 + np.nan_to_num(X[:, 1]) + rng.normal(0, 0.1, 300)) % 3
    kw = dict(criterion="wse", num_leaves=6, n_estimators=3, min_data_in_leaf=2, **QUIET)
    model = TreeBooster(SquaredError(), **kw).fit(X, y)
    zeroed = np.where(np.abs(X) <= ZERO_THRESHOLD, 0.0, X)
    assert not np.array_equal(np.nan_to_num(zeroed), np.nan_to_num(X))
    assert model.to_json() == TreeBooster(SquaredError(), **kw).fit(zeroed, y).to_json()
    thresholds = np.concatenate([t["threshold"] for t in model.trees_])
    assert not np.any((thresholds >= -ZERO_THRESHOLD) & (thresholds < ZERO_THRESHOLD))
    assert_lightgbm_equal(model, X)
