"""customobj.ole.training: the boosting loop: one fused gradient/coupling pass per round, one tree per
class per round for McRank, and the line search's exact step."""
import numpy as np
import pytest

from customobj import LambdaRank, McRank, SquaredError
from customobj.ole import TreeBooster

from _ole_cases import QUIET, make_X, make_rank_data, ranknet_setup


def test_ole_booster_calls_the_fused_gradient_coupling_pass_once_per_round(monkeypatch):
    X = make_X(5, n=200, nan_frac=0.0)
    y = np.random.default_rng(5).integers(0, 3, 200).astype(float)
    obj = LambdaRank(truncation=10)
    calls = {"fused": 0, "couplings": 0}
    fused = type(obj).grad_hess_couplings_prepared

    def spy(self, *a, **k):
        calls["fused"] += 1
        return fused(self, *a, **k)

    def no_separate(self, *a, **k):  # pragma: no cover - failing path
        calls["couplings"] += 1
        raise AssertionError("separate pair_couplings_prepared call")

    monkeypatch.setattr(type(obj), "grad_hess_couplings_prepared", spy)
    monkeypatch.setattr(type(obj), "pair_couplings_prepared", no_separate)
    TreeBooster(obj, n_estimators=4, num_leaves=4, min_data_in_leaf=5, verbose=False).fit(X, y, [20] * 10)
    assert calls == {"fused": 4, "couplings": 0}


def test_mcrank_grows_one_tree_per_class_per_round():
    X, y, group = make_rank_data(15)
    model = TreeBooster(McRank(), num_leaves=4, n_estimators=3, min_data_in_leaf=5, **QUIET).fit(
        X, y, group, eval_set=[(X, y)], eval_group=[group])
    assert len(model.trees_) == 9 and model.tree_class_ == [0, 1, 2] * 3
    raw = model.predict(X)
    assert raw.shape == (y.size, 3)
    p = np.exp(raw - raw.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(model.predict(X, raw_score=False), p @ np.arange(3))
    assert len(model.evals_result_["valid_0"]["ndcg@10"]) == 3


def test_line_search_finds_the_exact_step():
    X, y, group, obj, s, g, h, pairs = ranknet_setup(16)
    model = TreeBooster(obj, num_leaves=6, n_estimators=1, learning_rate=1.0, line_search=True, min_data_in_leaf=5,
                        **QUIET).fit(X, y, group, init_score=s)
    t = model.predict(X)
    L = lambda rho: obj.loss(s + rho * t, y, group)
    eps = 1e-4
    assert (L(1 + eps) - L(1 - eps)) / (2 * eps) == pytest.approx(0.0, abs=1e-6 * abs(L(1.0)))
    plain = TreeBooster(obj, num_leaves=6, n_estimators=1, learning_rate=1.0, min_data_in_leaf=5, **QUIET).fit(
        X, y, group, init_score=s)
    assert L(1.0) < obj.loss(s + plain.predict(X), y, group)
    # squared error: the leaf Newton step is already the exact minimiser, rho = 1
    y2 = np.random.default_rng(0).uniform(0, 3, y.size)
    a = TreeBooster(SquaredError(), num_leaves=6, n_estimators=2, line_search=True, **QUIET).fit(X, y2)
    b = TreeBooster(SquaredError(), num_leaves=6, n_estimators=2, **QUIET).fit(X, y2)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-10, atol=1e-12)
