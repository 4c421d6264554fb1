"""customobj.ole._cuda_prune_kernels against their CPU twins (customobj.ole.pair_pruning_kernels)
under the simulator, on tiny on-grid pairs: each query's thresholds (query_tops, query_masses,
query_cuts: the CPU's ``_cuts``, the tables left at 0 for the next tree), the kept pairs in the CPU's
order with the CPU's dropped set behind them (count_kept_blocks, place_kept_blocks) and the dropped
couplings per leaf (leaf_map, dropped_leaf_sums: the CPU's ``_dropped_leaf_sums``), each bit for
bit; for epsilon 0, a query whose couplings are all 0, negative couplings, one query and queries of
one pair, and over several launch shapes. The kernels compile to PTX for sm_80 / sm_90 in
tests/test_ole_cuda_split_kernels.py, with every kernel of the OLE GPU learner."""
import numpy as np
import pytest

from customobj.ole.fixed_point import grid_step_of, round_range
from customobj.ole.pair_partition import sum_couplings
from customobj.ole.pair_pruning import query_of_rows
from customobj.ole.pair_pruning_kernels import N_BUCKETS, _cuts, _dropped_leaf_sums, _prune

from _cuda_cases import needs_gpu
from _ole_cases import random_pairs

pytestmark = needs_gpu


def _case(name):
    """``(pi, pj, pc, ptr)`` with the couplings on their grid (as the backend prunes them)."""
    if name == "random":
        pi, pj, pc, ptr = random_pairs(11, n_queries=6, max_rows=7)  # zeros, negatives, many octaves
    elif name == "one query":
        pi, pj, pc, ptr = random_pairs(12, n_queries=1, max_rows=9)
    elif name == "one-pair queries":
        ptr = np.arange(0, 13, 2)
        pi, pj = ptr[:-1].astype(np.int32), (ptr[:-1] + 1).astype(np.int32)
        pc = np.array([0.5, 0.0, -0.25, 3.0, 1e-9, 2.0])
    else:  # a query whose couplings are all 0 beside one with negative ones
        pi, pj, pc, ptr = random_pairs(13, n_queries=3, max_rows=6)
        q = query_of_rows(ptr)[pi]
        pc[q == 1] = 0.0
        pc[(q == 2) & (np.arange(pc.size) % 3 == 0)] *= -1.0
    pc = np.array(pc, dtype=np.float64)
    round_range(pc, 0, pc.size, grid_step_of(pc, 0, pc.size))
    return pi.astype(np.int32), pj.astype(np.int32), pc, np.asarray(ptr)


CASES = ["random", "one query", "one-pair queries", "zeros and negatives"]


def _thresholds(K, pi, pc, qor, nq, eps, launch):
    from numba import cuda
    d = [cuda.to_device(a) for a in (pi, pc, pc.view(np.int64), qor)]
    tops, totals, mass = (cuda.to_device(np.zeros(s, t)) for s, t in ((nq, np.int64), (nq, np.float64),
                                                                        ((nq, N_BUCKETS), np.float64)))
    thr, acc = cuda.device_array((nq, 2), np.int64), cuda.to_device(np.full(4, 7, np.int64))
    K.query_tops[launch](*d, pc.size, tops, totals)
    K.query_masses[launch](*d, pc.size, tops, mass)
    K.query_cuts[launch](tops, totals, mass, nq, eps, thr, acc)
    for a in (tops, totals, mass, acc):  # left at 0 for the next tree
        assert not a.copy_to_host().any()
    return d, thr


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("eps, launch", [(0.0, (1, 1)), (0.3, (2, 4)), (0.9, (3, 8))])
def test_thresholds_kept_pairs_and_dropped_set_are_the_cpus(case, eps, launch):
    from numba import cuda
    from customobj.ole import _cuda_prune_kernels as K
    from customobj.ole.cuda_partitions import _blocks
    pi, pj, pc, ptr = _case(case)
    qor, nq, m = query_of_rows(ptr), ptr.size - 1, pc.size
    d, thr = _thresholds(K, pi, pc, qor, nq, eps, launch)
    top, cut = _cuts(pi, pc, pc.view(np.int64), m, qor, nq, eps)
    np.testing.assert_array_equal(thr.copy_to_host(), np.stack([top, cut], axis=1))
    ref = tuple(np.empty(m, a.dtype) for a in (pi, pj, pc))
    k = _prune(pi, pj, pc, pc.view(np.int64), qor, nq, eps, *ref, True, np.zeros(nq, np.int64), np.zeros(nq, np.int64))
    for nb in (1, 5):  # partition blocks: the result does not depend on them
        counts, acc = cuda.device_array((nb, 2), np.int64), cuda.to_device(np.zeros(4, np.int64))
        out = tuple(cuda.to_device(np.full(m, -5, a.dtype)) for a in (pi, pj, pc))
        K.count_kept_blocks[_blocks(nb)](*d, thr, m, nb, counts, acc[0:2], acc[2:4].view(np.float64))
        K.place_kept_blocks[_blocks(nb)](d[0], cuda.to_device(pj), d[1], d[2], d[3], thr, m, nb, counts, acc[0:2], *out)
        got, packed = [a.copy_to_host() for a in out], acc.copy_to_host()
        assert packed[0] == k and packed[2:4].view(np.float64)[0] == sum_couplings(ref[2], 0, k)  # exact
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a[:k], b[:k])  # the kept pairs, in the CPU's order
        drop = sorted(zip(*(a[k:].tolist() for a in got)))
        assert drop == sorted(zip(*(b[k:].tolist() for b in ref)))  # the CPU's dropped set (it writes it reversed)
    if case == "random" and eps > 0:
        assert 0 < k < m  # some pairs kept, some dropped
    if case == "zeros and negatives":  # zeros are dropped, negatives kept, whatever epsilon
        assert not (ref[2][:k] == 0).any() and (ref[2][:k] < 0).any() and (ref[2][k:] == 0).any()


@pytest.mark.parametrize("case", CASES)
def test_dropped_couplings_per_leaf_are_the_cpus(case):
    from numba import cuda
    from customobj.ole import _cuda_prune_kernels as K
    pi, pj, pc, ptr = _case(case)
    n = int(ptr[-1])
    rng = np.random.default_rng(5)
    order = rng.permutation(n)[: n - 1].astype(np.int64)  # one row out of the bag
    cuts = np.sort(rng.choice(np.arange(1, n - 1), min(3, n - 2), replace=False))
    starts, ends = np.r_[0, cuts, cuts[-1]].astype(np.int64), np.r_[cuts, n - 1, cuts[-1]].astype(np.int64)
    perm = rng.permutation(starts.size)  # the leaves in the grower's order, one of them empty
    starts, ends = starts[perm], ends[perm]
    want = np.zeros(starts.size)
    _dropped_leaf_sums(order, starts, ends, pi, pj, pc, pc.view(np.int64), query_of_rows(ptr), np.zeros(1, np.int64),
                       np.zeros(1, np.int64), True, n, want)
    leaf = cuda.to_device(np.zeros(n, np.int64))
    sums = cuda.to_device(np.full(starts.size, 9.0))
    by = np.lexsort((ends, starts))  # as cuda_pruning sorts them
    dev = [cuda.to_device(a) for a in (order, starts[by], ends[by], by, pi, pj, pc)]
    for tree, launch in ((1, (1, 1)), (2, (2, 8))):  # a later tree: the earlier stamps match nothing
        stamp = tree << 32
        K.leaf_map[launch](dev[0], n - 1, dev[1], dev[2], dev[3], starts.size, stamp, leaf, sums)
        K.dropped_leaf_sums[launch](*dev[4:], pc.size, leaf, stamp, starts.size, sums)
        np.testing.assert_array_equal(sums.copy_to_host(), want)
        assert leaf.copy_to_host()[np.setdiff1d(np.arange(n), order)][0] == 0  # out of the bag: no leaf
