"""GPU StructuredDCG (customobj/objectives/_structured_cuda.py) against its CPU twin: the same
assignment, subgradient and surrogate hessian for several ``k``, on random and degenerate data
(one-row queries, equal labels, tied scores, weights), and the guard on a failed assignment; each query's
loss from the gradients' launch (``grad_hess_loss``, MultiObjective's per-label GPU cost) the CPU's bits."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import StructuredDCG
from customobj.objectives import _structured_kernels as SK
from _cuda_cases import (assert_bits_equal_cpu, assert_gpu_equals_cpu, assert_simulated_bits, data, degenerate_cases,
                         long_query_cases, needs_gpu, query_order_sum, route_cost)

pytestmark = needs_gpu


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("case", list(degenerate_cases()), ids=lambda c: c[0])
def test_structured_dcg_equals_cpu(case, k):
    _, s, y, sizes, w = case
    g, h = assert_gpu_equals_cpu(StructuredDCG(k=k, hess=2.0), s, y, sizes, w)
    assert np.all(h > 0)


@pytest.mark.parametrize("k", [3, 10])
@pytest.mark.parametrize("case", list(long_query_cases())[:2], ids=lambda c: c[0])
def test_queries_longer_than_a_warp_equal_the_cpu_bit_for_bit(case, k):
    # a block per query: the weights summed in row order by thread 0, the hessians by every thread
    _, s, y, sizes, w = case
    assert_bits_equal_cpu(StructuredDCG(k=k, hess=2.0), s, y, sizes, w)


def test_large_score_gaps_give_nonzero_subgradients_equal_to_cpu():
    s, y, sizes, _ = data(40, grades=5)
    g, _ = assert_gpu_equals_cpu(StructuredDCG(k=4), 3.0 * s, y, sizes)
    assert np.any(g != 0.0)


def test_ideal_scores_give_zero_gradient():
    _, y, sizes, _ = data(41)
    g, _ = assert_gpu_equals_cpu(StructuredDCG(k=3), 10.0 * y, y, sizes)
    assert not g.any()


def _cpu_query_losses(obj, s, y, sizes, w):
    """Each query's loss by the CPU's loss kernel on that query alone (``structured_dcg_loss``)."""
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    gain = np.exp2(y) - 1.0
    out = []
    for lo, hi in zip(ptr[:-1], ptr[1:]):
        ww, use_w = (w[lo:hi], True) if w is not None else (np.ones(1), False)
        out.append(SK.structured_dcg_loss(s[lo:hi], np.array([0, hi - lo]), gain[lo:hi], obj.k, ww, use_w,
                                          np.zeros(1, dtype=np.bool_)))
    return np.array(out)


@pytest.mark.parametrize("case", [c for c in degenerate_cases() if c[0] in ("random", "weights", "one-row queries")]
                         + list(long_query_cases())[:2], ids=lambda c: c[0])
def test_each_querys_cost_is_the_cpus(case):
    """Each query's loss from the gradients' launch (MultiObjective's per-label GPU cost) is the CPU loss
    kernel's for that query, and their sum in query order the CPU's ``_grad_hess_loss`` (one pass), which is
    ``_loss``'s bits."""
    _, s, y, sizes, w = case
    obj = StructuredDCG(k=3, hess=2.0)
    want, per_query = route_cost(obj, 3.0 * s, y, sizes, w)
    assert_simulated_bits(per_query, _cpu_query_losses(obj, 3.0 * s, y, sizes, w))
    assert_simulated_bits(query_order_sum(per_query), want)
    prep = obj.prepare(y, sizes, w)
    assert want == obj._loss(3.0 * s, prep, prep.state_for(obj))
    assert (per_query > 0).any() == (max(sizes) > 1)  # one-row queries: nothing to misorder
