"""Reproducibility of the objectives (issue 7): gradients, hessians, couplings, losses and label-pair
sampling are bit-identical with 1 and 2 numba threads."""
from __future__ import annotations

import numba
import numpy as np
import pytest

import customobj as co
from _objective_cases import listwise_objectives, peer_objectives


def _with_threads(n, fn):
    saved = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        return fn()
    finally:
        numba.set_num_threads(saved)


@pytest.mark.parametrize("obj", [co.RankNet(), co.RankSVM(), co.MPBoost(ddf="logdd"), co.QBRank(),
                                 co.SquaredError() + co.RankNet()] + listwise_objectives() + peer_objectives(),
                         ids=repr)
def test_bit_identical_across_thread_counts(obj, two_threads):
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 60, 40)
    n = int(sizes.sum())
    y = rng.integers(0, 4, n).astype(float)
    s = np.round(rng.normal(size=n), 1)  # ties on purpose
    w = rng.uniform(0.5, 2.0, n)

    def run():
        prep = obj.prepare(y, sizes, w)
        g, h = obj.grad_hess_prepared(s, prep)
        pc = obj.pair_couplings_prepared(s, prep)
        return g, h, obj.loss_prepared(s, prep), pc

    a = _with_threads(1, run)
    b = _with_threads(two_threads, run)
    c = _with_threads(two_threads, run)
    for other in (b, c):
        np.testing.assert_array_equal(a[0], other[0])
        np.testing.assert_array_equal(a[1], other[1])
        if a[3] is not None:
            for x, z in zip(a[3], other[3]):
                np.testing.assert_array_equal(x, z)
        assert a[2] == other[2]


@pytest.mark.parametrize("obj", listwise_objectives(), ids=repr)
def test_listwise_loss_bit_identical_across_thread_counts(obj, two_threads):
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 60, 40)
    n = int(sizes.sum())
    y = rng.integers(0, 4, n).astype(float)
    s = np.round(rng.normal(size=n), 1)
    prep = obj.prepare(y, sizes)
    assert _with_threads(1, lambda: obj.loss_prepared(s, prep)) == _with_threads(two_threads, lambda: obj.loss_prepared(s, prep))


def test_label_pairs_sampling_reproducible(two_threads):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 300).astype(float)
    sizes = [100, 150, 50]
    a = _with_threads(1, lambda: co.label_pairs(y, sizes, max_pairs_per_query=50, seed=7))
    b = _with_threads(two_threads, lambda: co.label_pairs(y, sizes, max_pairs_per_query=50, seed=7))
    for x, z in zip(a, b):
        np.testing.assert_array_equal(x, z)
    c = co.label_pairs(y, sizes, max_pairs_per_query=50, seed=8)
    assert not np.array_equal(a[0], c[0])
