"""GPU QueryRMSE, ListNet, QuerySoftMax and XENDCG (customobj/objectives/_listwise_cuda.py, routed by
customobj/objectives/_listwise_route.py; their shared math customobj/objectives/_listwise_terms.py) against their CPU twins under the simulator: random and degenerate data (one-row
queries, equal labels, tied or equal scores, weights, an empty query, extreme scores), XENDCG's noise
over several rounds in both conventions (the same seeds, the same draws), their dense pair couplings (the
CPU's pairs of coupling > 0, in order), and the kernels typed and compiled to PTX for sm_80."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import ListNet, QueryRMSE, QuerySoftMax, XENDCG
from _cuda_cases import (COUPLING_CASES, assert_bits_equal_cpu, assert_case_gpu_equals_cpu,
                         assert_device_trees_equal_cpu, assert_kept_couplings_equal_cpu, assert_kernels_compile,
                         assert_rounds_equal_cpu, data, long_query_cases, needs_gpu, query_level_cases, to_device)

pytestmark = needs_gpu

LOSSES = [QueryRMSE(), ListNet(), QuerySoftMax(beta=2.5), XENDCG(seed=9), XENDCG.like_lightgbm(seed=3)]


@pytest.mark.parametrize("obj", LOSSES, ids=repr)
@pytest.mark.parametrize("case", list(query_level_cases()), ids=lambda c: c[0])
def test_gpu_equals_cpu(case, obj):
    assert_case_gpu_equals_cpu(case, obj)


@pytest.mark.parametrize("obj", [XENDCG(seed=4), XENDCG(seed=4, convention="lightgbm")], ids=repr)
def test_xendcg_rounds_draw_the_cpus_noise(obj):
    # Each grad_hess is a round with new noise; the device draws the CPU's numbers round after round.
    seen = assert_rounds_equal_cpu(obj)
    assert not np.array_equal(seen[0], seen[1])  # the noise did change between rounds


def test_gradients_sum_to_zero_per_query_on_the_device():
    # Shift invariance of all four losses (QueryRMSE, softmax): a query's gradients sum to 0.
    s, y, sizes, _ = data(7)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    for obj in (QueryRMSE(), ListNet(), QuerySoftMax(beta=2.0), XENDCG()):
        g = obj.grad_hess(to_device(s), y, sizes)[0].copy_to_host()
        np.testing.assert_allclose(np.add.reduceat(g, ptr[:-1]), 0.0, atol=1e-12)


@pytest.mark.parametrize("obj", LOSSES, ids=repr)
@pytest.mark.parametrize("case", list(long_query_cases())[:2], ids=lambda c: c[0])
def test_queries_longer_than_a_warp_sum_in_the_cpus_order(case, obj):
    # a block per query: its threads stage a warp's width of terms, thread 0 adds them in row order
    _, s, y, sizes, w = case
    assert_bits_equal_cpu(obj, s, y, sizes, w)


@pytest.mark.parametrize("obj", [QueryRMSE(), ListNet()], ids=repr)
@pytest.mark.parametrize("case", list(long_query_cases()), ids=lambda c: c[0])
def test_dense_couplings_of_queries_longer_than_a_warp(case, obj):
    # a warp per row walks the rows after it a warp's width at a time (19 rows: three steps from row 0)
    _, s, y, sizes, w = case
    i, c = assert_kept_couplings_equal_cpu(obj, s, y, sizes, w)
    assert np.all(c > 0)


@pytest.mark.parametrize("obj", LOSSES, ids=repr)
@pytest.mark.parametrize("case", COUPLING_CASES, ids=lambda c: c[0])
def test_dense_couplings_keep_the_cpus_pairs(case, obj):
    _, s, y, sizes, w = case
    i, c = assert_kept_couplings_equal_cpu(obj, s, y, sizes, w)
    if case[0] == "random":  # every pair of each query of two rows or more
        assert i.size > 0 and np.all(c > 0)


def test_every_kernel_compiles_for_a_real_gpu():
    # The argument types customobj/objectives/_listwise_route.py launches them with.
    assert_kernels_compile("customobj.objectives._listwise_cuda", {
        "query_rmse_queries": ("f1", "f1", "i1", "f1", "b", "f2"),
        "query_rows": ("i", "f1", "i1", "f1", "f1", "b", "f", "f2", "f1", "f1"),
        "softmax_queries": ("f1", "i1", "f1", "f1", "b", "f", "f2"),
        "xendcg_mass_queries": ("f1", "i1", "f1", "i", "i", "f1"),
        "xendcg_lightgbm_queries": ("f1", "f1", "i1", "i", "i", "f2"),
        "xendcg_lightgbm_rows": ("f1", "f1", "i1", "i1", "i", "i", "f1", "b", "f2", "f1", "f1"),
        "softmax_probs_rows": ("f1", "i1", "f1", "b", "f", "f2", "f1"),
        "softmax_qscale_queries": ("f2", "f", "i", "f1"),
        "dense_count_pairs": ("i1", "i1", "f1", "f1", "i1"),
        "dense_fill_pairs": ("i1", "i1", "f1", "f1", "i1", "j1", "j1", "f1"),
    })


@pytest.mark.parametrize("obj", [QueryRMSE(), ListNet(), XENDCG(convention="lightgbm")], ids=repr)
def test_device_gradients_and_couplings_grow_the_cpu_trees(obj):
    assert_device_trees_equal_cpu(obj)
