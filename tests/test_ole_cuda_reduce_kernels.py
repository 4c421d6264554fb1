"""customobj.ole._cuda_reduce_kernels: the grid computed on the card is the CPU's (fixed_point: the same
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
    from customobj.ole import _cuda_reduce_kernels as R
    return cuda, R


def _grid_on_device(a, b, idx, use_idx, n, launch):
    cuda, R = _k()
    stats, units, sums = (cuda.to_device(np.zeros(k, t)) for k, t in ((4, np.float64), (2, np.int64), (2, np.float64)))
    da, db = cuda.to_device(a), cuda.to_device(b)
    oa, ob = cuda.to_device(np.zeros_like(a)), cuda.to_device(np.zeros_like(b))
    d_idx = cuda.to_device(idx)
    R.grid_max[launch](da, db, d_idx, use_idx, n, stats, cuda.to_device(np.zeros(0)))
    R.grid_units[launch](da, db, d_idx, use_idx, n, stats, units)
    R.grid_round[launch](da, db, d_idx, use_idx, n, stats, units, oa, ob, sums)
    return stats.copy_to_host(), oa.copy_to_host(), ob.copy_to_host(), sums.copy_to_host()


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
    d = cuda.to_device(pc)
    stats, units, sums = (cuda.to_device(np.zeros(k, t)) for k, t in ((4, np.float64), (2, np.int64), (2, np.float64)))
    idx = cuda.device_array(1, np.int64)
    no_clear = cuda.to_device(np.zeros(0))
    for kern, extra in ((R.grid_max, (no_clear,)), (R.grid_units, (units,)), (R.grid_round, (units, d, d, sums))):
        kern[2, 16](d, d, idx, False, 150, stats, *extra)
    np.testing.assert_array_equal(d.copy_to_host(), want)
    assert stats[2] == step and sums.copy_to_host()[0] == sum_couplings(want, 0, 150)


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
    stats, clear = cuda.to_device(np.zeros(4)), cuda.to_device(np.arange(1.0, 101.0))
    da = cuda.to_device(a)
    R.grid_max[launch](da, da, cuda.to_device(np.zeros(1, np.int64)), False, 3, stats, clear)
    assert not clear.copy_to_host().any()
    np.testing.assert_array_equal(stats.copy_to_host(), [3.0, 3.0, 0.0, 0.0])
    np.testing.assert_array_equal(da.copy_to_host(), a)
