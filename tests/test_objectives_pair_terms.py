"""The shared pair math (customobj/objectives/_pair_terms.py): one source for the CPU kernels and the
GPU kernels. The compiled functions (the CPU's, and what the GPU compiles) and their Python source
(what the GPU kernels run under the CUDA simulator) give the same bits, unknown codes give NaN."""
import math

import numpy as np
import pytest

from customobj.objectives import _pair_terms as T

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
