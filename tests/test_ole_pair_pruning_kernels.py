"""customobj.ole.pair_pruning_kernels: the parallel per-query-block path and the any-order path give
the same pruning, whatever the thread count, and a query in two runs is noticed."""
import numba
import numpy as np
import pytest

from _ole_cases import contiguous_pairs, random_pairs
from customobj.ole.pair_pruning import prune_pairs, query_of_rows
from customobj.ole.pair_pruning_kernels import _BLOCK_PAIRS, KeyedPairs, PairOutput, QueryTable, _prune


def serial_prune(pi, pj, pc, qor, nq, eps, ref, tables=None):
    """The any-order kernel ``_prune`` into ``ref`` (the reference), dropped pairs written."""
    tables = (np.zeros(nq, np.int64), np.zeros(nq, np.int64)) if tables is None else tables
    return _prune(KeyedPairs(pi, pj, pc, pc.view(np.int64)), QueryTable(qor, *tables), nq, eps, PairOutput(*ref), True)


def run(pi, pj, pc, ptr, eps):  # the public entry: the kernels' dispatch included
    out = tuple(np.full(pc.size, -7, a.dtype) for a in (pi, pj, pc))
    k = prune_pairs(pi, pj, pc, query_of_rows(ptr), ptr.size - 1, eps, *out)
    return k, out


@pytest.mark.parametrize("eps", [0.0, 0.2, 0.6])
def test_contiguous_queries_take_the_per_query_path_with_the_same_result(eps):
    pi, pj, pc, ptr = random_pairs(6)
    qor = query_of_rows(ptr)
    by_query = np.argsort(qor[pi], kind="stable")
    pi, pj, pc = pi[by_query], pj[by_query], pc[by_query]
    k, out = run(pi, pj, pc, ptr, eps)
    ref = tuple(np.empty(pc.size, a.dtype) for a in (pi, pj, pc))
    nq = ptr.size - 1
    k_ref = serial_prune(pi, pj, pc, qor, nq, eps, ref)
    assert k == k_ref
    for a, b in zip(out, ref):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("write_dropped", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_blocks_of_queries_give_the_serial_result(threads, write_dropped):
    """Over 2 * 65,536 pairs, blocks of whole queries are pruned in parallel, each placing its pairs
    at its own offsets: the same pairs, order (kept in front, dropped behind in reverse) and
    per-query thresholds as the serial reference, whatever the thread count (the blocks depend
    only on the pairs), and with ``write_dropped=False`` nothing written past the kept pairs but
    the one slot the branch-free placement may use."""
    pi, pj, pc, ptr = contiguous_pairs(7, n_queries=600, max_rows=60)
    assert pc.size > 4 * _BLOCK_PAIRS
    qor, nq = query_of_rows(ptr), ptr.size - 1
    ref = tuple(np.empty(pc.size, a.dtype) for a in (pi, pj, pc))
    ref_t = (np.zeros(nq, np.int64), np.zeros(nq, np.int64))
    k_ref = serial_prune(pi, pj, pc, qor, nq, 0.3, ref, ref_t)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        out = tuple(np.full(pc.size, -7, a.dtype) for a in (pi, pj, pc))
        tops, cuts = np.zeros(nq, np.int64), np.zeros(nq, np.int64)
        k = prune_pairs(pi, pj, pc, qor, nq, 0.3, *out, write_dropped=write_dropped, thresholds=(tops, cuts))
    finally:
        numba.set_num_threads(before)
    assert k == k_ref and 0 < k < pc.size
    for a, b in zip(out, ref):
        if write_dropped:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_array_equal(a[:k], b[:k])
            assert np.all(a[k + 1:] == -7)
    np.testing.assert_array_equal(tops, ref_t[0])
    np.testing.assert_array_equal(cuts, ref_t[1])


def test_a_query_in_two_runs_is_noticed_across_blocks():
    """A query whose pairs come in two runs (here: its first pair moved to the end, another block)
    is caught by the run count and pruned by the any-order path: same result as the reference."""
    pi, pj, pc, ptr = contiguous_pairs(8, n_queries=400, max_rows=60)
    pi, pj, pc = (np.r_[a[1:], a[:1]] for a in (pi, pj, pc))
    qor, nq = query_of_rows(ptr), ptr.size - 1
    k, out = run(pi, pj, pc, ptr, 0.3)
    ref = tuple(np.empty(pc.size, a.dtype) for a in (pi, pj, pc))
    k_ref = serial_prune(pi, pj, pc, qor, nq, 0.3, ref)
    assert k == k_ref
    for a, b in zip(out, ref):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("write_dropped", [False, True])
@pytest.mark.parametrize("block_order", ["reversed", "shuffled"])
def test_block_edges_are_restored_whatever_order_the_blocks_ran_in(write_dropped, block_order):
    """The race that parallel branch-free placement allows, played out deterministically: blocks
    placed one after the other in an order where earlier blocks run last (their stray writes land
    on later blocks' slots), with a block that keeps nothing and one that drops nothing. After
    ``_restore_block_edges`` the output is the serial reference's."""
    from customobj.ole.pair_pruning_kernels import (_block_bounds, _cut_queries, _place_queries,
                                                    _restore_block_edges)
    pi, pj, pc, ptr = contiguous_pairs(11, n_queries=300, max_rows=40)
    qor, nq, m = query_of_rows(ptr), ptr.size - 1, pc.size
    bounds = _block_bounds(pi, qor, 6)
    pc = pc.copy()
    pc[bounds[2]:bounds[3]] = 0.0  # block 2 keeps nothing (zero couplings are dropped)
    block4 = slice(bounds[4], bounds[5])
    pc[block4] = np.where(pc[block4] == 0.0, 1.0, np.abs(pc[block4]))  # at epsilon 0 block 4 drops nothing
    bits = pc.view(np.int64)
    tops, cuts, seen = np.zeros(nq, np.int64), np.zeros(nq, np.int64), np.zeros(nq, np.bool_)
    kept = [_cut_queries(pi, pc, bits, qor, bounds[b], bounds[b + 1], 0.0, tops, cuts, seen)[0] for b in range(6)]
    assert kept[2] == 0 and kept[4] == bounds[5] - bounds[4]
    front = np.r_[0, np.cumsum(kept)].astype(np.int64)
    out = tuple(np.full(m, -7, a.dtype) for a in (pi, pj, pc))
    order = range(5, -1, -1) if block_order == "reversed" else np.random.default_rng(0).permutation(6)
    for b in order:
        _place_queries(KeyedPairs(pi, pj, pc, bits), QueryTable(qor, tops, cuts), bounds[b], bounds[b + 1],
                       write_dropped, PairOutput(*out), front[b], m - (bounds[b] - front[b]))
    _restore_block_edges(KeyedPairs(pi, pj, pc, bits), QueryTable(qor, tops, cuts), bounds, front, write_dropped,
                         PairOutput(*out))
    ref = tuple(np.empty(m, a.dtype) for a in (pi, pj, pc))
    k_ref = serial_prune(pi, pj, pc, qor, nq, 0.0, ref)
    assert k_ref == front[-1]
    for a, b in zip(out, ref):
        if write_dropped:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_array_equal(a[:k_ref], b[:k_ref])
