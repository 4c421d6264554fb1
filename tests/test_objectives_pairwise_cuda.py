"""GPU pairwise losses (customobj/objectives/_pairwise_cuda.py) against their CPU twins: RankNet,
RankSVM, MPBoost with every DDF, QBRank (label pairs, explicit pairs across queries, both hessians,
labelled rows), PreferencePairs (with pair weights), on random and degenerate data; the label pair
losses', QBRank's and PreferencePairs' per-query cost (``label_pairs_loss_rows``, ``pair_list_loss_rows``,
``query_sums``: ``DeviceRoute.grad_hess_loss``, which MultiObjective's cost-reading methods read) against the
CPU's loss."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import MPBoost, PreferencePairs, QBRank, RankNet, RankSVM
from _cuda_cases import (SIZES, assert_gpu_equals_cpu, data, degenerate_cases, needs_gpu, query_order_sum,
                         route_cost)

pytestmark = needs_gpu

# Explicit preferences across queries, a row in several pairs, and a repeated pair.
PAIRS = np.array([[0, 3], [4, 2], [10, 1], [4, 2], [18, 0], [7, 8]])

LABEL_PAIR_LOSSES = [
    RankNet(), RankNet(sigma=3.0), RankSVM(), RankSVM(margin=0.0),
    MPBoost(), MPBoost(ddf="ldd", alpha=0.7), MPBoost(ddf="logdd", lam=2.0), MPBoost(ddf="logitdd", beta=0.5),
]
QBRANKS = [
    QBRank(), QBRank(w=0.8, margin=0.5, hessian="upper_bound"), QBRank(pairs=PAIRS),
    QBRank(pairs=PAIRS, label_pairs=True, labeled="single_label_queries"), QBRank(w=1.0, labeled="none"),
]


@pytest.mark.parametrize("obj", LABEL_PAIR_LOSSES + QBRANKS, ids=repr)
@pytest.mark.parametrize("case", list(degenerate_cases()), ids=lambda c: c[0])
def test_label_pair_losses_equal_cpu(obj, case):
    _, s, y, sizes, w = case
    if isinstance(obj, QBRank) and obj.pairs is not None:  # keep the explicit pairs within this case's rows
        obj = QBRank(**{**dict(obj._params()), "pairs": PAIRS % s.size})
    g, h = assert_gpu_equals_cpu(obj, s, y, sizes, w)
    assert np.all(h >= 0)


def test_mpboost_clipped_exponent_equals_cpu():
    s, y, sizes, _ = data(7)
    assert_gpu_equals_cpu(MPBoost(ddf="ldd", alpha=30.0), -5.0 * s, y, sizes)


@pytest.mark.parametrize("obj", [PreferencePairs(PAIRS), PreferencePairs(PAIRS, margin=1.0),
                                 PreferencePairs(PAIRS, margin=0.5, weight=np.arange(1.0, 7.0))], ids=repr)
def test_preference_pairs_equal_cpu(obj):
    s, y, sizes, w = data(8, weights=True)
    assert_gpu_equals_cpu(obj, s, y, sizes, w)
    assert_gpu_equals_cpu(obj, s, y, None)


def test_rows_in_no_pair_get_zero():
    s, y, _, _ = data(9)
    g, h = assert_gpu_equals_cpu(PreferencePairs(np.array([[1, 2]]), margin=1.0), s, y, None)
    assert not np.delete(g, [1, 2]).any() and not np.delete(h, [1, 2]).any()
    assert sum(SIZES) == s.size


@pytest.mark.parametrize("obj", LABEL_PAIR_LOSSES[::2], ids=repr)
@pytest.mark.parametrize("case", list(degenerate_cases())[::2], ids=lambda c: c[0])
def test_label_pair_losses_cost_equals_the_cpu_loss(obj, case):
    _, s, y, sizes, w = case
    loss, got = route_cost(obj, s, y, sizes, w)
    # each query's pairs summed upper row by upper row (the CPU: one running sum): equal to rounding
    np.testing.assert_allclose(got.sum(), loss, rtol=1e-13, atol=0)
    assert np.isfinite(got).all() and (got >= 0).all()


@pytest.mark.parametrize("obj", QBRANKS + [PreferencePairs(PAIRS, margin=0.5, weight=np.arange(1.0, 7.0))], ids=repr)
def test_explicit_pair_losses_cost_equals_the_cpu_loss(obj):
    """QBRank's label pairs, explicit pairs (across queries: each pair counted at its first row's query) and
    labelled rows, PreferencePairs' weighted pairs: the per-query costs sum to the CPU's loss to rounding (the
    CPU adds one running sum over each pair set); the gradients those of the gradient-only route."""
    s, y, sizes, w = data(8, weights=True)
    loss, got = route_cost(obj, s, y, sizes, w)
    np.testing.assert_allclose(query_order_sum(got), loss, rtol=1e-13, atol=0)
    assert np.isfinite(got).all() and (got >= 0).all() and loss > 0
