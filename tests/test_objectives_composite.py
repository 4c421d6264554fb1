"""Sums and scalings of objectives (``customobj/objectives/composite.py``): everything adds or scales."""
import numpy as np
import pytest

from customobj import SquaredError
from customobj.objectives import Scaled, Sum
from test_objectives_base import data


def test_sum_and_scale_add_everything():
    s, y, g, w = data()
    a = SquaredError()
    combo = 2.0 * a + a * 0.5
    assert isinstance(combo, Sum) and all(isinstance(p, Scaled) for p in combo.parts)
    grad, hess = combo.grad_hess(s, y, g, weight=w)
    g1, h1 = a.grad_hess(s, y, g, weight=w)
    assert np.allclose(grad, 2.5 * g1) and np.allclose(hess, 2.5 * h1)
    assert combo.loss(s, y, g, weight=w) == pytest.approx(2.5 * a.loss(s, y, g, weight=w))
    nested = (a + a) + (a + a)
    assert len(nested.parts) == 4
    assert (0.5 * (2.0 * a)).factor == 1.0


# --- issue 13: scaling is bounded along every path (Prepared's own checks: test_objectives_prepared.py) ---
def test_scale_is_bounded_through_nesting():
    from customobj._validation import PARAM_LIMIT
    from customobj.objectives import RankNet

    assert (1e10 * (1e10 * RankNet())).factor == PARAM_LIMIT  # at the bound
    with pytest.raises(ValueError, match=r"factor must keep the total scale of the objective <= 1e\+20 .*got 1e\+308 times 1"):
        1e308 * (1e308 * RankNet())
    inner = SquaredError() + 1e15 * RankNet()
    with pytest.raises(ValueError, match=r"got 1e\+06 times 1e\+15"):
        1e6 * inner  # the Sum hides a 1e15 factor
    assert (1e5 * inner)._scale_bound() == 1e20
    with pytest.raises(ValueError, match=r"factor must be finite"):
        Scaled(SquaredError(), 10**400)
    with pytest.raises(TypeError, match=r"factor must be a real number, got bool"):
        Scaled(SquaredError(), True)


def test_the_gradient_and_loss_pass_is_the_parts_own():
    """``Sum._grad_hess_loss`` / ``Scaled._grad_hess_loss`` (``MultiObjective``'s per-label costs): each part's own
    gradient-and-loss pass (LambdaRank's one walk over its pairs), added in part order, the scaled child's times
    its factor; the gradients those of ``grad_hess``."""
    from customobj import LambdaRank, RankNet

    s, y, g, w = data()
    lam, net = LambdaRank(), RankNet()
    combo = lam + 2.0 * (net + SquaredError())
    prep = combo.prepare(y, g, w)
    grad, hess = np.zeros_like(s), np.zeros_like(s)
    cost = combo._grad_hess_loss(s, prep, prep.state_for(combo), grad, hess)

    def own(obj):
        return obj._grad_hess_loss(s, prep, prep.state_for(obj), np.zeros_like(s), np.zeros_like(s))

    inner = 0.0 + own(net) + own(SquaredError())
    assert cost == 0.0 + own(lam) + 2.0 * inner
    assert cost == pytest.approx(combo.loss_prepared(s, prep), rel=1e-6)  # LambdaRank's pass: a softplus table
    want_g, want_h = combo.grad_hess_prepared(s, prep)
    np.testing.assert_allclose(grad, want_g, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(hess, want_h, rtol=1e-14, atol=1e-15)


def test_the_cost_beside_the_pairs_is_the_cost_without_them():
    """``_grad_hess_couplings_loss`` (``MultiObjective``'s cost of a composite label with ``criterion="ole"``):
    each part's cost as ``_grad_hess_loss`` reads it (LambdaRank's tabled softplus, the cost its GPU route
    writes), added in part order and scaled, beside the pairs and gradients of ``_grad_hess_couplings``. Before,
    ``_loss`` (LambdaRank's exact softplus): another cost at the same scores."""
    from customobj import LambdaRank, RankNet

    s, y, g, w = data()
    obj = 0.5 * (LambdaRank() + 3.0 * RankNet()) + SquaredError()
    prep = obj.prepare(y, g, w)
    state = prep.state_for(obj)
    gp, hp = np.zeros_like(s), np.zeros_like(s)
    pairs, cost = obj._grad_hess_couplings_loss(s, prep, state, gp, hp)
    gl, hl = np.zeros_like(s), np.zeros_like(s)
    assert cost == obj._grad_hess_loss(s, prep, state, gl, hl)  # bit for bit
    assert cost != obj._loss(s, prep, state)  # the exact softplus: what was read beside the pairs before
    gc, hc = np.zeros_like(s), np.zeros_like(s)
    for got, want in zip((gp, hp) + pairs, (gc, hc) + obj._grad_hess_couplings(s, prep, state, gc, hc)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(gp, gl)
