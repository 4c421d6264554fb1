"""GPU StructuredDCG (customobj/objectives/_structured_cuda.py) against its CPU twin: the same
assignment, subgradient and surrogate hessian for several ``k``, on random and degenerate data
(one-row queries, equal labels, tied scores, weights), and the guard on a failed assignment."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import StructuredDCG
from _cuda_cases import (assert_bits_equal_cpu, assert_gpu_equals_cpu, data, degenerate_cases, long_query_cases,
                         needs_gpu)

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
