"""GPU pointwise losses and device plumbing (customobj/objectives/_pointwise_cuda.py) against the CPU:
SquaredError, Logistic (plain, balanced), SquaredHinge, McRank (K outputs), with weights; the
checked float64 conversion of device scores; each query's loss (``pointwise_loss_rows``, ``query_sums``:
``DeviceRoute.grad_hess_loss``, which MultiObjective's cost-reading methods read) against the CPU's loss."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import Logistic, McRank, SquaredError, SquaredHinge
from _cuda_cases import assert_gpu_equals_cpu, data, needs_gpu, to_device

pytestmark = needs_gpu


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("obj", [SquaredError(), Logistic(), Logistic(sigma=2.0, balanced=True), SquaredHinge(),
                                 SquaredHinge(C=3.0)], ids=repr)
def test_binary_and_regression_losses_equal_cpu(obj, weights):
    s, y, _, w = data(10, grades=2, weights=weights)
    assert_gpu_equals_cpu(obj, 4.0 * s, y, None, w)


@pytest.mark.parametrize("weights", [False, True])
def test_mcrank_k_outputs_equal_cpu(weights):
    rng = np.random.default_rng(11)
    _, y, _, w = data(11, grades=3, weights=weights)
    s = rng.normal(scale=5.0, size=(y.size, 3))
    g, h = assert_gpu_equals_cpu(McRank(n_classes=3), s, y, None, w)
    assert g.shape == (y.size, 3)
    np.testing.assert_allclose(g.sum(axis=1), 0.0, atol=1e-12 * (1 if w is None else w.max()))


def test_float32_and_integer_device_scores_are_converted():
    s, y, _, _ = data(12, grades=2)
    g, _ = SquaredError().grad_hess(s.astype(np.float32), y)
    gd, _ = SquaredError().grad_hess(to_device(s.astype(np.float32)), y)
    np.testing.assert_array_equal(gd.copy_to_host(), g)
    gi, _ = SquaredError().grad_hess(to_device(np.arange(y.size)), y)
    np.testing.assert_array_equal(gi.copy_to_host(), np.arange(y.size) - y)


@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e101])
def test_non_finite_or_huge_device_scores_are_refused(bad):
    s, y, _, _ = data(13, grades=2)
    s[3] = bad
    # the device check refuses, then the CPU's check on a host copy words it (the CPU's message)
    with pytest.raises(ValueError, match=r"scores must (be finite|satisfy \|scores\| <= 1e\+100)"):
        SquaredError().grad_hess(to_device(s), y)


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("obj", [SquaredError(), Logistic(sigma=2.0, balanced=True), SquaredHinge(C=3.0)], ids=repr)
def test_each_querys_loss_sums_to_the_cpu_loss(obj, weights):
    from numba import cuda

    from customobj.objectives import devices
    from _cuda_cases import SIZES

    s, y, sizes, w = data(12, grades=2, weights=weights)
    prep = obj.prepare(y, sizes, w)
    g, h = np.zeros(y.size), np.zeros(y.size)
    loss = obj._grad_hess_loss(4.0 * s, prep, prep.state_for(obj), g, h)
    gd, hd = cuda.to_device(np.zeros(y.size)), cuda.to_device(np.zeros(y.size))
    per_query = cuda.to_device(np.full(len(SIZES), np.nan))  # every entry written
    obj.device_route().grad_hess_loss(obj, to_device(4.0 * s), prep, devices.device_data(prep, cuda), gd, hd,
                                      per_query)
    got = per_query.copy_to_host()
    from customobj.objectives._pointwise_kernels import rows_loss

    kw, use_w = obj._row_weights(prep, prep.state_for(obj))  # Logistic(balanced=True): the data set's weights
    rows = [rows_loss(int(obj._ROW_KIND), 4.0 * s[a:b], prep.labels[a:b], kw[a:b] if use_w else kw, use_w, obj._param())
            for a, b in zip(prep.ptr, prep.ptr[1:])]
    np.testing.assert_allclose(got, rows, rtol=1e-14, atol=0)  # each query's rows, in row order
    np.testing.assert_allclose(got.sum(), loss, rtol=1e-13, atol=0)  # the CPU adds all rows at once: to rounding
    np.testing.assert_allclose(gd.copy_to_host(), g, rtol=1e-12, atol=0)
    assert got.sum() > 0
