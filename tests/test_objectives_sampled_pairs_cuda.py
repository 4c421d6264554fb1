"""GPU LambdaLoss (its three weightings) and YetiRank (customobj/objectives/_sampled_pairs_cuda.py,
routed by _listwise_route.py) against their CPU twins under the simulator: random and degenerate data
(one-row queries, equal labels, tied or equal scores, weights, an empty query, extreme scores), YetiRank's
seeded permutations over several rounds (the same draws), the pair budget, YetiRank's pair couplings (the
CPU's sampled pairs, in order), YetiRank's per-query cost at the round's pairs (the CPU's bits), and the
kernels typed and compiled to PTX for sm_80."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import LambdaLoss, YetiRank
from _cuda_cases import (COUPLING_CASES, assert_bits_equal_cpu, assert_case_gpu_equals_cpu,
                         assert_device_trees_equal_cpu, assert_gpu_equals_cpu, assert_kept_couplings_equal_cpu,
                         assert_kernels_compile, assert_rounds_equal_cpu, assert_simulated_bits, data,
                         long_query_cases, needs_gpu,
                         query_level_cases, query_order_sum, route_cost, to_device)

# The simulator runs the seeded streams' Python source, where numpy warns on the uint64 wraparound
# the generators rely on (compiled code, on the CPU or a GPU, wraps silently).
pytestmark = [needs_gpu, pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")]

LOSSES = [LambdaLoss(weighting="ndcg1"), LambdaLoss(weighting="ndcg2", sigma=2.0), LambdaLoss(),
          LambdaLoss(mu=0.5, sigma=0.7), YetiRank(), YetiRank(permutations=3, decay=0.5, seed=2**40 + 7)]


@pytest.mark.parametrize("obj", LOSSES, ids=repr)
@pytest.mark.parametrize("case", list(query_level_cases()), ids=lambda c: c[0])
def test_gpu_equals_cpu(case, obj):
    assert_case_gpu_equals_cpu(case, obj)


@pytest.mark.parametrize("obj", LOSSES[:4], ids=repr)
@pytest.mark.parametrize("case", list(query_level_cases())[::3], ids=lambda c: c[0])
def test_lambdaloss_cost_equals_the_cpu_loss(obj, case):
    """LambdaLoss's ``grad_hess_loss`` (``MultiObjective``'s per-label GPU cost): each pair's loss at its first
    row (``pair_list_loss_rows``), the rows of a query in order; their sum in query order is the CPU's
    ``_grad_hess_loss`` to rounding (the CPU keeps one running sum over the pair list); the gradients those of
    the gradient-only route."""
    _, s, y, sizes, w = case
    want, got = route_cost(obj, s, y, sizes, w)
    np.testing.assert_allclose(query_order_sum(got), want, rtol=1e-13, atol=0)
    assert np.isfinite(got).all() and (got >= 0).all()


def _yetirank_query_losses(obj, s, prep):
    """Each query's loss at the pairs of ``prep``'s latest round, by the CPU's pair-list loss kernel on that
    query's pairs alone (the kept pairs of a query are contiguous in the list)."""
    from customobj.objectives import _pairwise_kernels as PK
    from customobj.objectives.yetirank import _LOGISTIC

    pi, pj, theta, pw, _, none, _ = obj._pairs(s, prep, prep.state_for(obj), False)
    query = np.searchsorted(prep.ptr, pi, side="right") - 1
    out = np.zeros(prep.groups.n_groups)
    for q in range(out.size):
        k = query == q
        out[q] = PK.pair_list_loss(s, pi[k], pj[k], theta[k], pw[k], True, none, False, _LOGISTIC)[0]
    return out


@pytest.mark.parametrize("obj", LOSSES[4:], ids=repr)
@pytest.mark.parametrize("case", list(query_level_cases())[::3] + list(long_query_cases())[:2], ids=lambda c: c[0])
def test_yetirank_cost_is_the_loss_at_the_rounds_pairs(obj, case):
    """YetiRank's ``grad_hess_loss`` (``MultiObjective``'s per-label GPU cost): each query's loss at the round's
    sampled pairs, from the round's own permutations (``yetirank_query_losses``), is the CPU's for that query
    (its pair-list loss kernel on the query's pairs); their sum in query order the CPU's ``_grad_hess_loss``
    (one sampling), and the public loss after the round (one running sum over the list) to rounding. A
    second round: new pairs, still equal."""
    from numba import cuda

    from customobj.objectives import devices

    _, s, y, sizes, w = case
    pc, pg = obj.prepare(y, sizes, w), obj.prepare(y, sizes, w)
    data = devices.device_data(pg, cuda)
    for _ in range(2):
        g, h = np.zeros(y.size), np.zeros(y.size)
        want = obj._grad_hess_loss(s, pc, pc.state_for(obj), g, h)
        gd, hd = cuda.to_device(np.zeros(y.size)), cuda.to_device(np.zeros(y.size))
        per_query = cuda.to_device(np.full(len(sizes), np.nan))  # every entry written
        obj.device_route().grad_hess_loss(obj, to_device(s), pg, data, gd, hd, per_query)
        got = per_query.copy_to_host()
        assert_simulated_bits(gd.copy_to_host(), g)
        assert_simulated_bits(hd.copy_to_host(), h)
        assert_simulated_bits(got, _yetirank_query_losses(obj, s, pc))
        assert_simulated_bits(query_order_sum(got), want)
        np.testing.assert_allclose(obj._loss(s, pc, pc.state_for(obj)), want, rtol=1e-13, atol=0)
        assert np.isfinite(got).all() and (got >= 0).all()
        s = s - 0.3 * g


def test_yetirank_rounds_sample_the_cpus_permutations():
    # Each grad_hess is a round with new permutations; the device samples the CPU's, round after round.
    seen = assert_rounds_equal_cpu(YetiRank(permutations=4, seed=11))
    assert not np.array_equal(seen[0], seen[1])  # the permutations did change between rounds


def test_lambdaloss_weights_follow_the_device_ranking():
    # Reversing the scores reverses the positions: the NDCG-Loss1 weights, and so the gradients, change.
    s, y, sizes, _ = data(8)
    obj = LambdaLoss(weighting="ndcg1")
    g1 = assert_gpu_equals_cpu(obj, s, y, sizes)[0]
    g2 = assert_gpu_equals_cpu(obj, -s, y, sizes)[0]
    assert not np.allclose(g1, g2)


def test_yetirank_pair_budget_is_refused_on_the_device(monkeypatch):
    s, y, sizes, _ = data(9)
    monkeypatch.setattr("customobj._validation.MAX_PAIRS", 3)
    with pytest.raises(ValueError, match="YetiRank's sampled pairs"):
        YetiRank().grad_hess(to_device(s), y, sizes)


@pytest.mark.parametrize("obj", [LambdaLoss(), YetiRank(permutations=2)], ids=repr)
def test_device_gradients_and_couplings_grow_the_cpu_trees(obj):
    assert_device_trees_equal_cpu(obj)


def test_every_kernel_compiles_for_a_real_gpu():
    # The argument types customobj/objectives/_listwise_route.py launches them with.
    assert_kernels_compile("customobj.objectives._sampled_pairs_cuda", {
        "lambdaloss_weights": ("i1", "i1", "i1", "f1", "f1", "i", "f", "f1"),
        "yetirank_ranks": ("f1", "i1", "i1", SAMPLED, "i", "i"),
        "yetirank_rows": ("f1", "f1", "i1", "i1", "f1", SAMPLED, "f1", "f1"),
        "yetirank_count_pairs": ("f1", "f1", "i1", "f1", SAMPLED, "i1"),
        "yetirank_fill_pairs": ("f1", "f1", "i1", "f1", SAMPLED, "i1", "j1", "j1", "f1"),
        "yetirank_query_losses": ("f1", "f1", "i1", "f1", SAMPLED, "f1"),
    })


#: ``_sampled_pairs_cuda.Sampled`` as numba types it (evaluated in the PTX child: ``K`` the module).
SAMPLED = "T.NamedTuple([i, i1, i1, f1], K.Sampled)"


@pytest.mark.parametrize("obj", [YetiRank(), YetiRank(permutations=3, decay=0.5)], ids=repr)
@pytest.mark.parametrize("case", list(long_query_cases())[:2], ids=lambda c: c[0])
def test_yetirank_rows_add_their_pairs_in_the_cpus_order(case, obj):
    # a thread per row: its two neighbour pairs of each permutation, in list order, decay^(r - 1) from
    # the table of the CPU's running product
    _, s, y, sizes, w = case
    assert_bits_equal_cpu(obj, s, y, sizes, w)


@pytest.mark.parametrize("case", list(long_query_cases()), ids=lambda c: c[0])
def test_yetirank_couplings_of_queries_longer_than_a_warp(case):
    _, s, y, sizes, w = case
    assert_kept_couplings_equal_cpu(YetiRank(permutations=2, seed=3), s, y, sizes, w)


@pytest.mark.parametrize("case", COUPLING_CASES, ids=lambda c: c[0])
def test_yetirank_couplings_keep_the_cpus_sampled_pairs(case):
    _, s, y, sizes, w = case
    assert_kept_couplings_equal_cpu(YetiRank(permutations=3, seed=5), s, y, sizes, w)
