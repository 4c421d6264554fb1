"""customobj.ole.cuda._reduce_kernels: the grid computed on the card is the CPU's (fixed_point: the same
step, the same rounded values, the same exact sums) for any launch, of a node's rows or of a range;
the coupling sums equal the CPU's bit for bit; the best
split across features is the CPU's first strictly best. Small data: without a GPU they run on
numba's CUDA simulator (tests/conftest.py)."""
import numpy as np
import pytest

from customobj.ole.common import SPLIT_FEATURE, SPLIT_SIZE
from customobj.ole.fixed_point import grid_step_of, grid_step_of_rows, round_range, round_rows
from customobj.ole.pair_partition import sum_couplings

from _cuda_cases import needs_gpu
from _ole_cases import random_pairs

pytestmark = needs_gpu


def _k():
    from numba import cuda
    from customobj.ole.cuda import _reduce_kernels as R
    return cuda, R


def _items(a, b, idx, use_idx, n, out_a=None, out_b=None):
    """A GridItems on the device (zeroed accumulators; rounded values to ``out_a``/``out_b``: new arrays)."""
    cuda, R = _k()
    stats, units, sums = (cuda.to_device(np.zeros(k, t)) for k, t in ((4, np.float64), (2, np.int64), (2, np.float64)))
    da, db = cuda.to_device(a), cuda.to_device(b)
    oa = cuda.to_device(np.zeros_like(a)) if out_a is None else out_a
    ob = cuda.to_device(np.zeros_like(b)) if out_b is None else out_b
    return R.GridItems(da, db, cuda.to_device(idx), use_idx, n, stats, units, oa, ob, sums)


def _no_tops():
    cuda, R = _k()
    return R.QueryTops(*(cuda.to_device(np.zeros(1, t)) for t in (np.int32, np.int64, np.int32, np.int64, np.float64)),
                       False)


def _run(x, y, launch, tops=None, clear=None):
    cuda, R = _k()
    R.grid_max[launch](x, y, cuda.to_device(np.zeros(0)) if clear is None else clear, cuda.to_device(np.zeros(0)))
    R.grid_units[launch](x, y)
    R.grid_round[launch](x, y, _no_tops() if tops is None else tops)


def _grid_on_device(a, b, idx, use_idx, n, launch):
    x = _items(a, b, idx, use_idx, n)
    _run(x, x._replace(n=0), launch)
    return x.stats.copy_to_host(), x.oa.copy_to_host(), x.ob.copy_to_host(), x.sums.copy_to_host()


@pytest.mark.parametrize("launch", [(1, 1), (3, 8), (2, 32)])
def test_the_device_grid_of_a_nodes_rows_is_the_cpus(launch):
    rng = np.random.default_rng(5)
    g, h = rng.normal(size=300) * 37.0, rng.uniform(0.01, 3.0, 300)
    order = rng.permutation(300)[:211].astype(np.int64)
    stats, og, oh, sums = _grid_on_device(g, h, order, True, order.size, launch)
    want_g, want_h = np.zeros(300), np.zeros(300)
    G = round_rows(order, g, grid_step_of_rows(order, g), want_g)
    H = round_rows(order, h, grid_step_of_rows(order, h), want_h)
    assert tuple(stats[2:]) == (grid_step_of_rows(order, g), grid_step_of_rows(order, h))
    np.testing.assert_array_equal(og, want_g)
    np.testing.assert_array_equal(oh, want_h)
    assert tuple(sums) == (G, H)  # exact sums: the same bits for every launch


def test_the_device_grid_of_a_range_rounds_in_place_like_the_cpu():
    cuda, R = _k()
    pc = np.random.default_rng(2).lognormal(size=150)
    want = pc.copy()
    step = grid_step_of(want, 0, 150)
    round_range(want, 0, 150, step)
    x = _items(pc, pc, np.zeros(1, np.int64), False, 150)
    x = x._replace(oa=x.a, ob=x.a, b=x.a)  # in place, as the backend rounds its couplings
    _run(x, x._replace(n=0), (2, 16))
    np.testing.assert_array_equal(x.a.copy_to_host(), want)
    assert x.stats[2] == step and x.sums.copy_to_host()[0] == sum_couplings(want, 0, 150)


@pytest.mark.parametrize("launch", [(1, 1), (3, 8)])
def test_a_trees_rows_and_couplings_share_their_launches_and_the_couplings_tops_are_the_cpus(launch):
    # one set of launches for both grids: each is what it is alone; the rounded couplings' per-query
    # tops and masses are pair_pruning's (the first pruning step, on the card as they are rounded)
    from customobj.ole.pair_pruning import query_of_rows
    from customobj.ole.pair_pruning_kernels import _cuts
    cuda, R = _k()
    rng = np.random.default_rng(7)
    g, h = rng.normal(size=90) * 3.0, rng.uniform(0.1, 2.0, 90)
    order = rng.permutation(90)[:70].astype(np.int64)
    pi, pj, pc, ptr = random_pairs(4, n_queries=5, max_rows=9)
    pc = pc.astype(np.float64)
    rows = _items(g, h, order, True, order.size)
    pairs = _items(pc, pc, np.zeros(1, np.int64), False, pc.size)
    pairs = pairs._replace(b=pairs.a, oa=pairs.a, ob=pairs.a)
    qor, nq = query_of_rows(ptr), ptr.size - 1
    tops = R.QueryTops(cuda.to_device(pi), pairs.a.view(np.int64), cuda.to_device(qor),
                       cuda.to_device(np.zeros(nq, np.int64)), cuda.to_device(np.zeros(nq)), True)
    _run(rows, pairs, launch, tops)
    stats, og, oh, sums = _grid_on_device(g, h, order, True, order.size, launch)
    np.testing.assert_array_equal(rows.stats.copy_to_host(), stats)
    np.testing.assert_array_equal(rows.oa.copy_to_host(), og)
    np.testing.assert_array_equal(rows.sums.copy_to_host(), sums)
    want = pc.copy()
    round_range(want, 0, want.size, grid_step_of(want, 0, want.size))
    np.testing.assert_array_equal(pairs.a.copy_to_host(), want)
    top, _ = _cuts(pi, want, want.view(np.int64), want.size, qor, nq, 0.5)
    np.testing.assert_array_equal(tops.tops.copy_to_host(), top)
    np.testing.assert_array_equal(tops.totals.copy_to_host(),
                                  [sum_couplings(np.where((qor[pi] == q) & (want > 0), want, 0.0), 0, want.size)
                                   for q in range(nq)])


def test_all_zero_values_round_to_zero_without_nan():
    stats, og, oh, sums = _grid_on_device(np.zeros(20), np.zeros(20), np.arange(20), True, 20, (1, 8))
    assert not og.any() and not oh.any() and not sums.any() and not np.isnan(stats).any()


@pytest.mark.parametrize("launch", [(1, 2), (4, 16)])
def test_coupling_sums_are_the_cpus_bit_for_bit(launch):
    cuda, R = _k()
    pi, pj, pc, ptr = random_pairs(2, n_queries=10, max_rows=12)
    round_range(pc, 0, pc.size, grid_step_of(pc, 0, pc.size))
    start, end = 5, pi.size - 3
    sums = cuda.to_device(np.zeros(2))
    R.coupling_sums[launch](cuda.to_device(pc), start, end - start, sums)
    assert tuple(sums.copy_to_host()) == (sum_couplings(pc, start, end), 0.0)


@pytest.mark.parametrize("threads", [1, 4, 16])
def test_pick_best_is_the_first_strictly_best_feature(threads):
    cuda, R = _k()
    per = np.arange(9 * SPLIT_SIZE, dtype=np.float64).reshape(9, SPLIT_SIZE)
    for gains, want in (([0, 2, 5, 1, 5, 0, 5, 3, 0], 2), ([0, 0, 0, 0, 0, 0, 0, 0, 1e-300], 8),
                        ([7, 2, 5, 1, 5, 0, 7, 3, 0], 0), ([0.0] * 9, -1)):
        res = cuda.device_array(SPLIT_SIZE)
        R.pick_best[1, threads](cuda.to_device(per), cuda.to_device(np.array(gains, float)), res)
        got = res.copy_to_host()
        if want >= 0:
            np.testing.assert_array_equal(got, per[want])
        else:
            assert got[SPLIT_FEATURE] == -1.0 and np.count_nonzero(got) == 1


@pytest.mark.parametrize("launch", [(1, 1), (2, 32)])
def test_grid_max_clears_what_it_is_given_and_nothing_else(launch):
    # a tree's first launch clears the pool's histograms (DevicePool.clear_all): any grid, every entry
    cuda, R = _k()
    a = np.array([1.0, -3.0, 2.0])
    x = _items(a, a, np.zeros(1, np.int64), False, 3)
    clear, rho = cuda.to_device(np.arange(1.0, 101.0)), cuda.to_device(np.arange(1.0, 38.0))  # rho: rows' sums
    R.grid_max[launch](x, x._replace(n=0), clear, rho)
    assert not clear.copy_to_host().any() and not rho.copy_to_host().any()
    np.testing.assert_array_equal(x.stats.copy_to_host(), [3.0, 3.0, 0.0, 0.0])
    np.testing.assert_array_equal(x.a.copy_to_host(), a)
