"""Robustness of the LightGBM / XGBoost adapters (issue 7): bad training data raises the customobj
error (naming the argument and row) on the first round; results are reproducible."""
from __future__ import annotations

import numpy as np
import pytest

import lightgbm as lgb
import xgboost as xgb

import customobj as co
import customobj.adapters as adapters

rng = np.random.default_rng(0)
N = 60
X = rng.normal(size=(N, 4))
Y = rng.integers(0, 3, N).astype(float)
SIZES = np.array([20, 25, 15])
LGB_PARAMS = {"verbosity": -1, "num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1, "seed": 0,
              "deterministic": True, "force_row_wise": True}


def _lgb(obj, y=Y, group=SIZES, weight=None, **params):
    p = dict(LGB_PARAMS, objective=adapters.lightgbm_objective(obj), **params)
    return lgb.train(p, lgb.Dataset(X, y, group=group, weight=weight), 2)


def _xgb(obj, y=Y, group=SIZES, weight=None):
    d = xgb.DMatrix(X, y, weight=weight)
    if group is not None:
        d.set_group(group)
    params = adapters.xgboost_params(obj, {"max_depth": 2, "nthread": 1, "seed": 0})
    return xgb.train(params, d, 2, obj=adapters.xgboost_objective(obj))


with_nan = Y.copy()
with_nan[7] = np.nan
negative = Y.copy()
negative[9] = -2.0
fractional = Y.copy()
fractional[4] = 0.5

BAD = [
    ("NaN label", lambda t: t(co.RankNet(), y=with_nan), ValueError, r"labels must be finite; found nan at position 7"),
    ("negative label", lambda t: t(co.RankNet(), y=negative), ValueError, r"non-negative.*-2.0 at row 9"),
    ("fractional grade for McRank", lambda t: t(co.McRank(n_classes=3), y=fractional), ValueError,
     r"integer grades.*0.5 at row 4"),
    ("ranking objective without groups", lambda t: t(co.RankNet(), group=None), ValueError,
     r"RankNet is a group-wise \(ranking\) objective but the .* training data has no query groups"),
    ("negative weight", lambda t: t(co.RankNet(), weight=np.r_[-1.0, np.ones(N - 1)]), ValueError,
     r"weight must be non-negative; found -1.0 at row 0"),
    ("not an objective", lambda t: t("lambdarank"), TypeError, r"expects a customobj objective"),
]


# What the libraries do before the adapter sees the data: XGBoost's DMatrix refuses NaN labels and
# negative weights itself (XGBoostError, a clear message); LightGBM's Dataset turns NaN labels into 0.
LIBRARY_FIRST = {
    ("NaN label", "xgboost"): (xgb.core.XGBoostError, r"Label contains NaN"),
    ("negative weight", "xgboost"): (xgb.core.XGBoostError, r"Weights must be positive"),
}
SILENT = {("NaN label", "lightgbm"): "lightgbm.Dataset.construct() replaces NaN labels by 0 and overwrites Dataset.label "
                                     "before any objective runs, so the adapter cannot see them (LightGBM behaviour)"}


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("name,call,exc,msg", BAD, ids=[b[0] for b in BAD])
def test_bad_training_data(library, name, call, exc, msg):
    trainer = _lgb if library == "lightgbm" else _xgb
    exc, msg = LIBRARY_FIRST.get((name, library), (exc, msg))
    if (name, library) in SILENT:
        # Pins the library's behaviour stated in SILENT: training runs, so the adapter never sees the
        # bad value. Should LightGBM start raising, this fails: move the case to LIBRARY_FIRST.
        booster = call(trainer)
        assert booster.current_iteration() == 2, SILENT[(name, library)]
        return
    with pytest.raises(exc, match=msg):
        call(trainer)


def test_lightgbm_mcrank_without_num_class():
    with pytest.raises(ValueError, match=r"McRank has 3 output\(s\) per row but LightGBM passed scores of shape"):
        _lgb(co.McRank(n_classes=3))


def test_lightgbm_objective_rejects_nonfinite_scores():
    f = adapters.lightgbm_objective(co.RankNet())
    ds = lgb.Dataset(X, Y, group=SIZES, params={"verbosity": -1}).construct()
    bad = np.zeros(N)
    bad[3] = np.inf
    with pytest.raises(ValueError, match=r"scores must be finite; found inf at position 3"):
        f(bad, ds)


def test_metric_adapters_reject_bad_labels():
    feval = adapters.lightgbm_metric("ndcg@5")
    ds = lgb.Dataset(X, negative, group=SIZES, params={"verbosity": -1}).construct()
    with pytest.raises(ValueError, match=r"labels must be non-negative.*-2.0 at row 9"):
        feval(np.zeros(N), ds)


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_models_reproducible(library):
    trainer = _lgb if library == "lightgbm" else _xgb
    a = trainer(co.QBRank()).predict(X if library == "lightgbm" else xgb.DMatrix(X))
    b = trainer(co.QBRank()).predict(X if library == "lightgbm" else xgb.DMatrix(X))
    np.testing.assert_array_equal(a, b)
    assert np.all(np.isfinite(a))


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_sklearn_callables_refuse_misshapen_fields(library):
    """Found by the fuzz campaign: a 0-d prediction, a 2-D weight or labels that are not a 1-D
    array were IndexErrors deep in the adapter; each is a ValueError naming the field."""
    f = (adapters.lightgbm_objective if library == "lightgbm" else adapters.xgboost_objective)(co.SquaredError())
    y, preds = np.array([0.0, 1.0, 2.0]), np.zeros(3)
    with pytest.raises(ValueError, match=r"labels \(y\) must be a 1-D array"):
        f("abc", preds, None, None) if library == "lightgbm" else f(np.array("abc"), preds)
    if library == "lightgbm":
        with pytest.raises(ValueError, match=r"weight must be a 1-D array"):
            f(y, preds, np.ones((3, 1)), None)
        with pytest.raises(ValueError, match=r"scores \(preds\) of shape \(\): expected 1-D"):
            f(y, np.array(0.5), None, None)


def test_object_dtype_predictions_are_a_type_error_naming_the_scores():
    f = adapters.xgboost_objective(co.SquaredError())
    preds = np.array([0.5, 0.5, [1], -2.0], dtype=object)
    with pytest.raises(TypeError, match=r"scores \(preds\) of dtype object: expected real numbers"):
        f(np.array([3.0, 4.0, 2.0, 0.0]), preds)
