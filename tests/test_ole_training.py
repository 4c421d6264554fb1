"""customobj.ole.training: the boosting loop: one fused gradient/coupling pass per round, one tree per
class per round for McRank, the line search's exact step, and a user's objective whose gradients or
hessians leave the trees' range refused naming them (CPU and GPU alike) instead of a hang or NaN trees."""
import numpy as np
import pytest

from customobj import LambdaRank, McRank, SquaredError
from customobj.ole import TreeBooster

from customobj.objectives.base import Objective
from customobj.ole.fixed_point import VALUE_LIMIT

from _cuda_cases import needs_gpu
from _isolated import run_isolated
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


class _Constant(Objective):
    """A user's own pointwise objective: gradients ``g`` and ``-g / 2`` on alternate rows, hessians ``h``."""

    def __init__(self, g, h):
        self.g, self.h = g, h

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        out_grad += self.g * np.where(np.arange(scores.shape[0]) % 2 == 0, 1.0, -0.5)
        out_hess += self.h

    def _loss(self, scores, prep, state):
        return 0.0


_DEVICES = ["cpu", pytest.param("cuda", marks=needs_gpu)]
_HOSTILE_KW = dict(n_estimators=1, num_leaves=4, min_data_in_leaf=2, min_sum_hessian_in_leaf=0.0, max_bin=8,
                   **QUIET)


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("criterion", ["ole", "se"])
@pytest.mark.parametrize("g, h, message", [
    (2.0**1020, 1.0, "gradients must be finite with magnitude at most 2"),  # was NaN predictions
    (np.nextafter(VALUE_LIMIT, np.inf), 1.0, "gradients must be finite with magnitude at most 2"),
    (1.0, 2.0**1020, "hessians must be finite with magnitude at most 2"),
    (np.nan, 1.0, "gradients must be finite"),
    (np.inf, 1.0, "gradients must be finite"),  # was NaN leaves
    (1.0, 5e-324, r"gradients and hessians made a tree's leaf_value\[\d+\] = -?inf"),  # was NaN leaves
    (1.0, 1e-300, r"gradients and hessians made a tree's leaf_value\[\d+\] = .*beyond 1e\+100"),
])
def test_gradients_or_hessians_outside_the_trees_range_are_refused_naming_them(device, criterion, g, h, message):
    X, y, group = make_rank_data(0, n_queries=3, q_size=8)
    model = TreeBooster(_Constant(g, h), criterion=criterion, device=device, **_HOSTILE_KW)
    with pytest.raises(ValueError, match=message):
        model.fit(X, y, group)


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("criterion", ["ole", "se"])
def test_gradients_and_hessians_inside_the_range_grow_finite_trees(device, criterion):
    """Powers of two as large as the criterion's ``G^2`` allows grow the trees of ``g = h = 1`` (the same
    Newton steps); at the limit itself ``G^2`` overflows, the nodes score no split, and the tree is finite."""
    X, y, group = make_rank_data(0, n_queries=3, q_size=8)
    def fit(g):
        model = TreeBooster(_Constant(g, g), criterion=criterion, device=device, **_HOSTILE_KW)
        return model.fit(X, y, group).predict(X)

    np.testing.assert_array_equal(fit(2.0**450), fit(1.0))
    assert np.all(np.isfinite(fit(VALUE_LIMIT)))


def test_gradients_above_the_largest_power_of_two_are_refused_instead_of_a_hang():
    """Issue 39: 1.5e308 (above 2**1023) looped for ever choosing the grid's power of two; in a child
    process so that the old hang fails this test."""
    out = run_isolated("""
        import numpy as np
        import customobj.ole
        from customobj.objectives.base import Objective
        from customobj.data import synthetic

        class Huge(Objective):
            def _grad_hess(self, scores, prep, state, out_grad, out_hess):
                out_grad += 1.5e308
                out_hess += 1.0
            def _loss(self, scores, prep, state):
                return 0.0

        X, y, group = synthetic(10, 4, 3, seed=0)
        try:
            customobj.ole.TreeBooster(Huge(), n_estimators=1, num_leaves=4, verbose=False).fit(X, y, group)
        except ValueError as exc:
            print(exc)
    """, timeout=120)
    assert "objective's gradients must be finite with magnitude at most 2**900" in out
