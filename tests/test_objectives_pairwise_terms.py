"""The shared pair math (customobj/objectives/_pairwise_terms.py): one source for the CPU kernels and the
GPU kernels. The compiled functions (the CPU's, and what the GPU compiles) and their Python source
(what the GPU kernels run under the CUDA simulator) give the same bits, unknown codes give NaN."""
import math

import numpy as np
import pytest

from customobj.objectives import _pairwise_terms as T

RNG = np.random.default_rng(0)
D = np.concatenate([RNG.normal(size=200) * 3, [0.0, -0.0, 60.0, -60.0, 800.0, -800.0, 1e100, -1e100]])
THETA = np.array([1e-3, 0.5, 1.0, 7.0, 100.0])


@pytest.mark.parametrize("kind", list(T.PairKind))
def test_compiled_and_python_pair_terms_agree_bit_for_bit(kind):
    for theta in THETA:
        for d in D:
            assert T.pair_grad(kind, d, theta) == T.pair_grad.py_func(kind, d, theta)
            got, want = T.pair_terms(kind, d, theta), T.pair_terms.py_func(kind, d, theta)
            assert np.array_equal(np.array(got), np.array(want), equal_nan=True)


@pytest.mark.parametrize("mode", list(T.Theta))
def test_compiled_and_python_theta_agree(mode):
    for yi, yj in ((1.0, 0.0), (4.0, 1.0), (31.0, 0.0)):
        assert T.pair_theta(mode, yi, yj, 0.7) == T.pair_theta.py_func(mode, yi, yj, 0.7)


def test_unknown_codes_give_nan_never_another_loss():
    assert math.isnan(T.pair_theta(99, 1.0, 0.0, 1.0))
    assert all(math.isnan(v) for v in T.pair_grad(7, 0.5, 1.0))
    assert all(math.isnan(v) for v in T.pair_terms.py_func(7, 0.5, 1.0))
    assert not T.kind_known(7) and not T.theta_known(99) and T.kind_known(T.PairKind.EXPONENTIAL)


def test_pair_weights_halve_before_adding():
    assert T.pair_weight(1.5e308, 1.5e308) == 1.5e308 == T.pair_weight.py_func(1.5e308, 1.5e308)


def test_debiasing_tracks_positions_below_the_propensities_size():
    from customobj.objectives._pairwise_terms import TINY_PROPENSITY, debias_scale, tracked_propensities

    tplus, tminus = np.array([1.0, 0.5, 0.0]), np.array([1.0, 0.8, 0.4])
    assert tracked_propensities(1, 2, tplus, tminus) == (True, 0.5, 0.4)
    for a, b in ((3, 0), (0, 3), (-1, 0)):
        assert tracked_propensities(a, b, tplus, tminus) == (False, 1.0, 1.0)
    assert debias_scale(0.5, 0.4) == 1.0 / (0.5 * 0.4)
    assert debias_scale(0.0, 0.4) == debias_scale(0.5, TINY_PROPENSITY / 2) == 1.0
    assert debias_scale.py_func(0.5, 0.4) == debias_scale(0.5, 0.4)
