"""Tests of customobj/clicks/relevance_model.py: the default relevance model's loss is the adapters'
(bit for bit, so RegressionEM / TrustEM are unchanged by dropping the adapters), it continues its trees
on each fit, falls back to a constant where no tree can split, and what is not a learner is refused;
and nothing in customobj/clicks/ imports customobj.adapters (issue 40 item 5)."""
from __future__ import annotations

import ast
import pickle
from pathlib import Path

import numpy as np
import pytest

from customobj import adapters  # noqa: F401  (before lightgbm / xgboost: OpenMP wait policy)
from customobj.clicks.relevance_model import (LOGISTIC, BoostedRelevance, ConstantRelevance, RelevanceLearner,
                                              _SoftLabelLoss, check_relevance_model, xgboost_em_params)

CLICKS = Path(__file__).resolve().parent.parent / "customobj" / "clicks"


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.clip(0.5 + 0.4 * np.tanh(X[:, 0]), 0.0, 1.0), rng.uniform(0.1, 2.0, n)


def test_soft_label_loss_is_the_adapters_bit_for_bit():
    import lightgbm as lgb
    import xgboost as xgb

    from customobj.adapters import lightgbm_objective, xgboost_objective  # the reference, in the test only

    rng = np.random.default_rng(1)
    n = 300
    labels = np.r_[np.ones(n // 2), np.zeros(n // 2)]
    w = rng.uniform(0.0, 3.0, n)  # not float32 values: the libraries round them
    preds = rng.normal(size=n)
    X = rng.normal(size=(n, 2))
    mine = _SoftLabelLoss(labels, w)
    want = lightgbm_objective(LOGISTIC)(preds, lgb.Dataset(X, labels, weight=w).construct())
    got = mine(preds, None)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    want = xgboost_objective(LOGISTIC)(preds, xgb.DMatrix(X, labels, weight=w))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, np.asarray(b, dtype=np.float32))


def test_each_fit_adds_trees_and_a_pickle_leaves_the_rows_behind():
    X, y, w = _data()
    m = BoostedRelevance(n_estimators=3, num_leaves=4, min_child_samples=5)
    m.fit(X, y, sample_weight=w)
    first = m.raw(X)
    m.fit(X, y, sample_weight=w)
    assert m.n_trees_ == 6
    np.testing.assert_array_equal(m.raw(X, num_trees=3), first)  # later fits never change earlier trees
    p = m.predict(X)
    assert np.all((p > 0) & (p < 1)) and np.corrcoef(p, y)[0, 1] > 0.5
    assert "_X2" in m.__dict__
    m.forget_rows()
    assert "_X2" not in m.__dict__
    m.fit(X, y)
    assert "_X2" not in pickle.loads(pickle.dumps(m)).__dict__


def test_xgboost_continues_its_trees_too():
    X, y, w = _data()
    m = BoostedRelevance(library="xgboost", n_estimators=2, num_leaves=4).fit(X, y, sample_weight=w)
    m.fit(X, y, sample_weight=w)
    assert m.n_trees_ == 4 and np.all(np.isfinite(m.raw(X)))
    p = xgboost_em_params(0.1, 4, 1, 0, {"base_score": 0.5})
    assert p["base_score"] == 0.5 and p["disable_default_eval_metric"] == 1  # the user's params win


def test_constant_features_give_a_constant_relevance():
    y = np.array([0.2, 0.9, 0.4, 0.7])
    m = BoostedRelevance(n_estimators=2).fit(np.ones((4, 2)), y)
    assert isinstance(m.booster_, ConstantRelevance) and m.n_trees_ == 2
    np.testing.assert_allclose(m.predict(np.ones((3, 2))), y.mean())


@pytest.mark.parametrize("bad", [object(), "lightgbm", BoostedRelevance])
def test_what_is_not_a_learner_is_refused(bad):
    with pytest.raises(TypeError, match="relevance_model"):
        check_relevance_model(bad)
    assert isinstance(BoostedRelevance(), RelevanceLearner)


def test_no_module_of_clicks_imports_the_adapters():
    for path in sorted(CLICKS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [(node.module or "")] + [(node.module or "") + "." + a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any("adapters" in n.split(".") for n in names), f"{path.name} imports {names}"
