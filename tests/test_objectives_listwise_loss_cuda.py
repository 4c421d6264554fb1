"""The query-level losses' GPU costs (customobj/objectives/_listwise_loss_cuda.py, driven by
``_listwise_route.softmax_loss`` / ``query_rmse_loss`` / ``xendcg_loss``: ``ListNet``'s, ``QuerySoftMax``'s,
``QueryRMSE``'s and ``XENDCG``'s ``device_route().grad_hess_loss``) against the CPU's per-query values under the simulator: random and degenerate
data (one-row queries, equal labels, ties, weights, an empty query, extreme scores, all labels 0), softmax
weights of 0 and far apart; the gradients beside them those of the gradient-only route; the kernels typed and
compiled to PTX for sm_80."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import XENDCG, ListNet, QueryRMSE, QuerySoftMax
from customobj.objectives import _listwise_kernels as QK
from customobj.objectives import devices
from _cuda_cases import (assert_kernels_compile, assert_simulated_bits, needs_gpu, query_level_cases, query_order_sum,
                         to_device)

pytestmark = needs_gpu

LOSSES = [QueryRMSE(), ListNet(), QuerySoftMax(beta=2.5), XENDCG(seed=9), XENDCG.like_lightgbm(seed=3)]


def cpu_per_query(obj, s, prep):
    """The CPU's per-query losses, each query's own call of the CPU's loss kernel (its values summed in
    query order are the CPU's total: ``_listwise_kernels``' serial sum); XENDCG's against the masses of the
    data set's latest round."""
    out = np.zeros(prep.groups.n_groups)
    for q in range(out.size):
        lo, hi = prep.ptr[q], prep.ptr[q + 1]
        ptr = np.array([0, hi - lo], dtype=np.int64)
        if isinstance(obj, QueryRMSE):
            w, use_w = (prep.weight[lo:hi], True) if prep.weight is not None else (np.ones(1), False)
            out[q] = QK.query_rmse_loss(s[lo:hi], prep.labels[lo:hi], ptr, w, use_w)
        else:
            m = obj._targets(s, prep, prep.state_for(obj), False)
            vw = m.vw[lo:hi] if m.use_vw else m.vw
            out[q] = QK.softmax_ce_loss(s[lo:hi], ptr, m.mass[lo:hi], vw, m.use_vw, m.beta)
    return out


def gpu_loss(obj, s, prep):
    """``(per-query losses, grad, hess)`` of the route at device ``s``."""
    from numba import cuda

    data = devices.device_data(prep, cuda)
    prep.state_for(obj)
    gd, hd = cuda.to_device(np.zeros(s.size)), cuda.to_device(np.zeros(s.size))
    pq = cuda.to_device(np.full(max(prep.groups.n_groups, 1), np.nan))  # every entry written
    obj.device_route().grad_hess_loss(obj, to_device(s), prep, data, gd, hd, pq)
    return pq.copy_to_host()[:prep.groups.n_groups], gd.copy_to_host(), hd.copy_to_host()


@pytest.mark.parametrize("obj", LOSSES, ids=repr)
@pytest.mark.parametrize("case", list(query_level_cases()), ids=lambda c: c[0])
def test_each_querys_cost_is_the_cpus_bits(case, obj):
    """Each query's cost, and their sum in query order (as MultiObjective's GPU round adds them), the CPU's
    ``_grad_hess_loss`` (XENDCG: a round's gradients, then the loss at that round's noisy masses)."""
    _, s, y, sizes, w = case
    cpu = obj.prepare(y, sizes, w)
    g, h = np.zeros_like(s), np.zeros_like(s)
    want = obj._grad_hess_loss(s, cpu, cpu.state_for(obj), g, h)
    pq, gd, hd = gpu_loss(obj, s, obj.prepare(y, sizes, w))
    assert_simulated_bits(pq, cpu_per_query(obj, s, cpu))
    assert_simulated_bits(query_order_sum(pq), want)
    # the gradient-only route at the same round: the same gradients
    plain_g, plain_h = obj.grad_hess_prepared(to_device(s), obj.prepare(y, sizes, w))
    np.testing.assert_array_equal(gd, plain_g.copy_to_host())
    np.testing.assert_array_equal(hd, plain_h.copy_to_host())


def test_softmax_weights_of_zero_and_far_apart():
    """QuerySoftMax's value weights (the row weights inside the softmax): rows of weight 0 leave it, weights
    1e-30 and 1e40 take ``log_ratio``'s fallback; the largest logit found in the CPU's order."""
    rng = np.random.default_rng(4)
    sizes = [4, 6, 1, 5]
    n = sum(sizes)
    s, y = rng.normal(size=n) * 3.0, rng.integers(0, 3, n).astype(float)
    w = rng.choice([0.0, 1e-30, 0.5, 2.0, 1e40], n)
    w[0] = 1.0  # the first query keeps a row in the softmax
    obj = QuerySoftMax(beta=0.7)
    prep = obj.prepare(y, sizes, w)
    pq, _, _ = gpu_loss(obj, s, prep)
    want = cpu_per_query(obj, s, prep)
    assert_simulated_bits(pq, want)
    assert np.count_nonzero(want) >= 2 and np.isfinite(want).all()


def test_every_kernel_compiles_for_a_real_gpu():
    # The argument types customobj/objectives/_listwise_route.py launches them with.
    assert_kernels_compile("customobj.objectives._listwise_loss_cuda", {
        "softmax_ce_loss_queries": ("f1", "i1", "f1", "f1", "b", "f", "f2", "f1"),
        "query_rmse_loss_queries": ("f1", "f1", "i1", "f1", "b", "f2", "f1"),
    })
