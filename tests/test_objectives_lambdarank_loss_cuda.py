"""LambdaRank's loss on the GPU (customobj/objectives/_lambdarank_loss_cuda.py, driven by
``_lambdarank_route.lambdarank_loss``, ``LambdaRank.device_route().grad_hess_loss``) against the CPU's
GRAD_LOSS (``LambdaRank._grad_hess_loss``): each query's cost the CPU's bits under the simulator, for every
metric, cutoff, truncation, norm, convention, weights and degenerate data (to 1e-12 on a card); the
gradients beside it the same bits as the gradient-only route.""" 
from __future__ import annotations

import numpy as np
import pytest

from customobj import LambdaRank
from customobj.objectives import _lambdarank_kernels as LK
from customobj.objectives import devices
from _cuda_cases import assert_simulated_bits, data, degenerate_cases, needs_gpu, to_device

pytestmark = needs_gpu


def gpu_loss(obj, s, y, sizes, w=None):
    """``(per-query losses, grad, hess)`` of the route on device ``s``; and the CPU's ``(losses, grad, hess)``."""
    from numba import cuda

    prep = obj.prepare(y, sizes, w)
    g, h = np.zeros(y.size), np.zeros(y.size)
    inp = obj.pass_inputs(s, prep)
    per_query = np.zeros(len(sizes))
    # the CPU's GRAD_LOSS per query (its driver's per-query values, summed serially by lambdarank_grad_hess_loss)
    LK._run_blocks(LK.Mode.GRAD_LOSS, inp, LK._without_pairs(g, h), LK._NO_I, LK._NO_I, per_query, LK._NO_DEBIAS)
    data_ = devices.device_data(prep, cuda)
    prep.state_for(obj)
    gd, hd = cuda.to_device(np.zeros(y.size)), cuda.to_device(np.zeros(y.size))
    pq = cuda.to_device(np.full(len(sizes), np.nan))  # every entry written
    obj.device_route().grad_hess_loss(obj, to_device(s), prep, data_, gd, hd, pq)
    return (pq.copy_to_host(), gd.copy_to_host(), hd.copy_to_host()), (per_query, g, h), prep


OPTIONS = [dict(), dict(norm=True), dict(metric="err", k=3), dict(metric="map", truncation=3), dict(metric="mrr"),
           dict(k=2, norm=True, sigma=2.0)]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_each_querys_cost_is_the_cpus_bits(options):
    s, y, sizes, w = data(40, weights=True, per_query=True)
    obj = LambdaRank(**options)
    (pq, gd, hd), (want, g, h), prep = gpu_loss(obj, s, y, sizes, w)
    assert_simulated_bits(pq, want)
    assert want.sum() > 0
    assert_simulated_bits(gd, g)
    assert_simulated_bits(hd, h)
    total = 0.0
    for v in pq:  # in query order, as the CPU sums them: the CPU's cost
        total += v
    assert_simulated_bits(total, obj._grad_hess_loss(s, prep, prep.state_for(obj), np.zeros(y.size), np.zeros(y.size)))
    plain = obj.grad_hess(to_device(s), y, sizes, w)  # the gradient-only route: the same gradients
    np.testing.assert_array_equal(plain[0].copy_to_host(), gd)  # the same kernels on any device


@pytest.mark.parametrize("make", [LambdaRank.like_lightgbm, LambdaRank.like_xgboost], ids=["lightgbm", "xgboost"])
def test_the_conventions(make):
    s, y, sizes, _ = data(41)
    (pq, gd, _), (want, g, _), _ = gpu_loss(make(), s, y, sizes)
    assert_simulated_bits(pq, want)
    assert_simulated_bits(gd, g)


@pytest.mark.parametrize("case", list(degenerate_cases()), ids=lambda c: c[0])
def test_degenerate_data(case):
    _, s, y, sizes, w = case
    (pq, gd, _), (want, g, _), _ = gpu_loss(LambdaRank(norm=True), s, y, sizes, w)
    assert_simulated_bits(pq, want)  # one-row queries and equal labels: exact zeros, never NaN
    assert np.isfinite(pq).all()
    assert_simulated_bits(gd, g)


def test_extreme_scores_stay_finite():
    s, y, sizes, _ = data(42)
    s = np.where(s > 0, 700.0, -700.0) + s  # sigma d far past the softplus table's end
    (pq, _, _), (want, _, _), _ = gpu_loss(LambdaRank(sigma=3.0), s, y, sizes)
    assert_simulated_bits(pq, want)
    assert np.isfinite(pq).all() and pq.max() > 100
