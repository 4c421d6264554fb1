"""customobj.ole.cuda._pruning_kernels against their CPU twins (customobj.ole.pair_pruning_kernels)
under the simulator, on tiny on-grid pairs: each query's tables (query_tops, query_masses), the kept
pairs in the CPU's order with the CPU's dropped set behind them, each query's cut the CPU's
``_cuts`` (count_kept_blocks, place_kept_blocks), and the dropped couplings per leaf (leaf_map,
dropped_leaf_sums: the CPU's ``_dropped_leaf_sums``, the tables left at 0 for the next tree; the
sides of a leaf's split: tests/test_ole_cuda_pruning.py), each bit for
bit; for epsilon 0, a query whose couplings are all 0, negative couplings, one query and queries of
one pair, and over several launch shapes. The kernels compile to PTX for sm_80 / sm_90 in
tests/test_ole_cuda_split_kernels.py, with every kernel of the OLE GPU learner."""
import numpy as np
import pytest

from customobj.ole.fixed_point import grid_step_of, round_range
from customobj.ole.pair_partition import sum_couplings
from customobj.ole.pair_pruning import query_of_rows
from customobj.ole.pair_pruning_kernels import (N_BUCKETS, KeyedPairs, PairOutput, QueryTable, _cuts,
                                                _dropped_leaf_sums, _prune)

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


def _tables(K, pi, pc, qor, nq, eps, launch):
    """The query tables after query_tops and query_masses (which also zero the kept pairs' record and coupling)."""
    from numba import cuda
    from customobj.ole.cuda._reduce_kernels import QueryTops
    d = [cuda.to_device(a) for a in (pi, pc, pc.view(np.int64), qor)]
    tables = K.QueryTables(*(cuda.to_device(np.zeros(s, t)) for s, t in ((nq, np.int64), (nq, np.float64),
                                                                          ((nq, N_BUCKETS), np.float64))), eps)
    record, kept_c = cuda.to_device(np.full(4, 7, np.int64)), cuda.to_device(np.full(2, 7.0))
    K.query_tops[launch](QueryTops(d[0], d[2], d[3], tables.tops, tables.totals, True), d[1], pc.size)
    K.query_masses[launch](*d, pc.size, tables.tops, tables.mass, record, kept_c)
    assert not record.copy_to_host().any() and kept_c.copy_to_host()[0] == 0.0
    return d, tables


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("eps, launch", [(0.0, (1, 1)), (0.3, (2, 4)), (0.9, (3, 8))])
def test_thresholds_kept_pairs_and_dropped_set_are_the_cpus(case, eps, launch):
    from numba import cuda
    from customobj.ole.cuda import _pruning_kernels as K
    pi, pj, pc, ptr = _case(case)
    qor, nq, m = query_of_rows(ptr), ptr.size - 1, pc.size
    d, tables = _tables(K, pi, pc, qor, nq, eps, launch)
    top, cut = _cuts(pi, pc, pc.view(np.int64), m, qor, nq, eps)
    np.testing.assert_array_equal(tables.tops.copy_to_host(), top)  # the cuts: the CPU's, from these tables
    ref = tuple(np.empty(m, a.dtype) for a in (pi, pj, pc))
    cpu_table = QueryTable(qor, np.zeros(nq, np.int64), np.zeros(nq, np.int64))
    k = _prune(KeyedPairs(pi, pj, pc, pc.view(np.int64)), cpu_table, nq, eps, PairOutput(*ref), True)
    src = K.PairArrays(d[0], cuda.to_device(pj), d[1])
    # segments and lanes a segment (a block each; a warp on a card): the result depends on neither
    for nb, lanes in ((1, 1), (1, 8), (5, 1), (5, 4), (2 * m, 2)):
        counts, record, kept_c = cuda.device_array((nb, 2), np.int64), cuda.to_device(np.zeros(4, np.int64)), \
            cuda.to_device(np.zeros(2))
        out = K.PairArrays(*(cuda.to_device(np.full(m, -5, a.dtype)) for a in (pi, pj, pc)))
        K.count_kept_blocks[nb, lanes](src, d[2], d[3], tables, m, nb, counts, record, kept_c)
        K.place_kept_blocks[nb, lanes](src, d[2], d[3], tables, m, nb, counts, record, out)
        got = [a.copy_to_host() for a in out]
        assert record.copy_to_host().tolist() == [k, 0, 0, 0]  # the root's pair counts: (kept, 0)
        assert kept_c.copy_to_host()[0] == sum_couplings(ref[2], 0, k)  # exact
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a[:k], b[:k])  # the kept pairs, in the CPU's order
        drop = sorted(zip(*(a[k:].tolist() for a in got)))
        assert drop == sorted(zip(*(b[k:].tolist() for b in ref)))  # the CPU's dropped set (it writes it reversed)
    if case == "random" and eps > 0:
        assert 0 < k < m  # some pairs kept, some dropped
    if case == "zeros and negatives":  # zeros are dropped, negatives kept, whatever epsilon
        assert not (ref[2][:k] == 0).any() and (ref[2][:k] < 0).any() and (ref[2][k:] == 0).any()
    assert cut.size == nq


@pytest.mark.parametrize("case", CASES)
def test_dropped_couplings_per_leaf_are_the_cpus(case):
    from numba import cuda
    from customobj.ole.cuda import _pruning_kernels as K
    pi, pj, pc, ptr = _case(case)
    n = int(ptr[-1])
    rng = np.random.default_rng(5)
    order = rng.permutation(n)[: n - 1].astype(np.int64)  # one row out of the bag
    cuts = np.sort(rng.choice(np.arange(1, n - 1), min(3, n - 2), replace=False))
    starts, ends = np.r_[0, cuts, cuts[-1]].astype(np.int64), np.r_[cuts, n - 1, cuts[-1]].astype(np.int64)
    perm = rng.permutation(starts.size)  # the leaves in the grower's order, one of them empty
    starts, ends = starts[perm], ends[perm]
    want = np.zeros(starts.size)
    _dropped_leaf_sums(order, starts, ends, KeyedPairs(pi, pj, pc, pc.view(np.int64)),
                       QueryTable(query_of_rows(ptr), np.zeros(1, np.int64), np.zeros(1, np.int64)), True, n, want)
    leaf = cuda.to_device(np.zeros(n, np.int64))
    sums = cuda.to_device(np.full(3 * starts.size, 9.0))
    by = np.lexsort((ends, starts))  # as pruning sorts them
    dev = [cuda.to_device(a) for a in (order, starts[by], ends[by], by)]
    pairs = K.PairArrays(*(cuda.to_device(np.r_[a[:2], a]) for a in (pi, pj, pc)))  # two kept pairs first
    record = cuda.to_device(np.array([2, 0, 0, 0], np.int64))
    nq = ptr.size - 1
    tables = K.QueryTables(cuda.to_device(np.ones(nq, np.int64)), cuda.to_device(np.ones(nq)),
                           cuda.to_device(np.ones((nq, N_BUCKETS))), 0.5)
    no_splits = K.LeafSplits(cuda.to_device(np.full((starts.size, 4), -1, np.int64)), cuda.to_device(np.zeros((2, 20))),
                             cuda.to_device(np.zeros((1, n), np.uint8)), cuda.to_device(np.array([2])))
    for tree, launch in ((1, (1, 1)), (2, (2, 8))):  # a later tree: the earlier stamps match nothing
        stamp = tree << 32
        K.leaf_map[launch](dev[0], n - 1, dev[1], dev[2], dev[3], starts.size, stamp, leaf, sums)
        K.dropped_leaf_sums[launch](pairs, record, pc.size + 2, leaf, stamp, starts.size, no_splits, sums, tables)
        got = sums.copy_to_host().reshape(-1, 3)
        np.testing.assert_array_equal(got[:, 0], want)
        assert not got[:, 1:].any()  # no split: no side sums
        assert leaf.copy_to_host()[np.setdiff1d(np.arange(n), order)][0] == 0  # out of the bag: no leaf
        for a in tables[:3]:  # cleared for the next tree
            assert not a.copy_to_host().any()
