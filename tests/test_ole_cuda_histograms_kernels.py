"""customobj.ole.cuda._histograms_kernels: the shared-memory GPU row and pair histograms equal their CPU twins
(histogram.build_row_hist_fm, pairhist.build_pair_hist) bit for bit on on-grid values, for any
chunk count, block shape (1-D, or features x items) and feature grouping (shared memory or the global path of a wide
feature), NaN rows and feature subsets included. Small data: on a machine without a GPU they run
on numba's CUDA simulator (tests/conftest.py). The pair histograms' ``R`` comes from the rows (each row's
coupling sum, made by the root's row-histogram launch). Also covers customobj/ole/cuda/_hist_layout.py
(the feature groups and launch shapes)."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.common import HIST_CHANNELS, HIST_COUNT
from customobj.ole.fixed_point import grid_step_of, grid_step_of_rows, round_range, round_rows
from customobj.ole.histogram import build_row_hist_fm
from customobj.ole.pairhist import PairScratch, build_pair_hist

from _cuda_cases import needs_gpu
from _ole_cases import assert_subset_slots, make_X, random_pairs

pytestmark = needs_gpu


def _setup(seed=0, n=160, n_features=4):
    X = make_X(seed, n=n, n_features=n_features)  # NaN, a constant feature, long runs of equal bins
    mapper = BinMapper.fit(X, 12)
    return mapper, mapper.bins_feature_major(X)


def _groups(mapper, feats, capacity):
    from customobj.ole.cuda._histograms_kernels import feature_groups
    return feature_groups(mapper.offsets, mapper.n_bins.astype(np.int64), feats, capacity=capacity)


def _gpu_hist(kernel_name, mapper, bins_fm, args, steps, chunks, threads, feats, capacity, extra=None):
    """``kernel_name`` over ``args`` (arrays go to the device, ints as they are) on a ``(chunks, groups)`` grid;
    ``extra``: the kernel's last record (row_hist_shared: none, pair_hist_shared: the node's rows for ``R``,
    all of them, their coupling sums made here from the pairs)."""
    from numba import cuda
    from customobj.ole.cuda import _histograms_kernels as K
    groups, members, smap = _groups(mapper, feats, capacity)
    out = cuda.device_array((mapper.n_slots, HIST_CHANNELS))
    K.zero[4, 32](out.reshape(out.size))
    dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in (*args, steps, groups, members, smap)]
    grid = (chunks, groups.shape[0])
    if extra is None and kernel_name == "row_hist_shared":  # no pairs: blocks of depth 0 only
        extra = K.RootPairs(dev[0], dev[0], dev[2], 0, 0, dev[0], False, dev[2])
    elif extra is None:
        extra = _node_rows(bins_fm.shape[1], *args[:3], args[3], args[4])
        grid = grid + (2,)
    getattr(K, kernel_name)[grid, threads](cuda.to_device(np.ascontiguousarray(bins_fm.T)), *dev, out, extra)
    return out.copy_to_host()


def _node_rows(n_rows, pi, pj, pc, start, n):
    """Every row as a node's, with its coupling sum over the pairs ``start:start+n`` (the pairs' ``R`` from rows)."""
    from numba import cuda
    from customobj.ole.cuda._histograms_kernels import NodeRows
    rho = np.zeros(n_rows)
    np.add.at(rho, pi[start:start + n], pc[start:start + n])
    np.add.at(rho, pj[start:start + n], pc[start:start + n])
    return NodeRows(cuda.to_device(rho), cuda.to_device(np.arange(n_rows, dtype=np.int64)), n_rows)


def _on_grid_rows(seed, n):
    rng = np.random.default_rng(seed)
    grad, hess = rng.normal(size=n) * 1e3, rng.uniform(0.1, 2.0, n)
    rows = np.sort(rng.choice(n, size=97, replace=False)).astype(np.int64)  # a node: increasing rows
    g, h = np.zeros(n), np.zeros(n)
    round_rows(rows, grad, grid_step_of_rows(rows, grad), g)
    round_rows(rows, hess, grid_step_of_rows(rows, hess), h)
    return rows, g, h, np.array([grid_step_of_rows(rows, grad), grid_step_of_rows(rows, hess)])


# threads: 1-D blocks (lanes on features only) and 2-D ones (features x items, as launch_shape makes)
@pytest.mark.parametrize("chunks,threads,capacity", [(1, 32, 2000), (3, 8, 2000), (2, 16, 26), (2, 4, 5),
                                                     (2, (2, 4), 2000), (1, (4, 2), 26)])
def test_the_row_histogram_is_the_cpus_bit_for_bit_for_any_launch_and_grouping(chunks, threads, capacity):
    mapper, bins_fm = _setup()
    n = bins_fm.shape[1]
    rows, g, h, steps = _on_grid_rows(1, n)
    cpu = build_row_hist_fm(bins_fm, rows, 0, rows.size, g, h, mapper.offsets, mapper.n_slots)
    feats = np.arange(bins_fm.shape[0], dtype=np.int64)
    if capacity < 2000:  # several groups; at 5 slots every feature is wider: the global path
        assert _groups(mapper, feats, capacity)[0].shape[0] > 1
    gpu = _gpu_hist("row_hist_shared", mapper, bins_fm, (rows, rows.size, g, h), steps, chunks, threads, feats,
                    capacity)
    np.testing.assert_array_equal(gpu, cpu)
    assert gpu[:, HIST_COUNT].sum() == rows.size * bins_fm.shape[0]


def test_an_empty_node_has_an_empty_histogram():
    mapper, bins_fm = _setup(2)
    n = bins_fm.shape[1]
    gpu = _gpu_hist("row_hist_shared", mapper, bins_fm, (np.zeros(1, np.int64), 0, np.ones(n), np.ones(n)),
                    np.ones(2), 1, 8, np.arange(bins_fm.shape[0], dtype=np.int64), 2000)
    assert not gpu.any()


def _on_grid_pairs(mapper_rows):
    pi, pj, pc, _ = random_pairs(4, n_queries=8, max_rows=25)
    keep = (pi < mapper_rows) & (pj < mapper_rows)
    pairs = [np.ascontiguousarray(a[keep]) for a in (pi, pj, pc)]
    step = grid_step_of(pairs[2], 0, pairs[2].size)
    round_range(pairs[2], 0, pairs[2].size, step)
    return pairs, np.array([step, step])


@pytest.mark.parametrize("chunks,threads,capacity", [(1, 32, 2000), (3, 16, 26), (2, 8, 5), (2, (2, 4), 2000),
                                                     (1, (4, 2), 5)])
def test_the_pair_histogram_is_the_cpus_bit_for_bit_with_nan_rows_and_subsets(chunks, threads, capacity):
    mapper, bins_fm = _setup(3, n=200)
    assert mapper.has_nan.any()  # the nanp channel is exercised
    pairs, steps = _on_grid_pairs(200)
    assert pairs[0].size > 50
    feats = np.arange(bins_fm.shape[0], dtype=np.int64)
    scratch = PairScratch(bins_fm.shape[1], bins_fm.shape[0], True, dtype=np.float64)
    cpu = build_pair_hist(np.ascontiguousarray(bins_fm.T), *pairs, 0, pairs[0].size, mapper.offsets, mapper.n_bins,
                          mapper.n_slots, scratch)
    gpu = _gpu_hist("pair_hist_shared", mapper, bins_fm, (*pairs, 0, pairs[0].size), steps, chunks, threads, feats, capacity)
    np.testing.assert_array_equal(gpu, cpu)
    # a feature subset fills only its own slots (the rest stays zero)
    sub = _gpu_hist("pair_hist_shared", mapper, bins_fm, (*pairs, 0, pairs[0].size), steps, chunks, threads,
                    np.array([0, 2], dtype=np.int64), capacity)
    assert_subset_slots(sub, gpu, mapper.offsets, bins_fm.shape[0], (0, 2))


def test_feature_groups_pack_features_in_order_and_flag_wide_ones():
    from customobj.ole.cuda._histograms_kernels import chunks_for, CHUNK_UPDATES, MAX_CHUNKS
    offsets, n_bins = np.array([0, 3, 9, 12, 40]), np.array([2, 5, 2, 27])
    groups, members, smap = _groups(type("M", (), {"offsets": offsets, "n_bins": n_bins})(), np.arange(4), 10)
    assert groups.tolist() == [[0, 2, 9, 1, 0], [2, 3, 3, 1, 9], [3, 4, 28, 0, 12]]
    assert members[:, 0].tolist() == [0, 1, 2, 3] and smap.tolist() == list(range(40))
    assert chunks_for(0, groups) == 1 and chunks_for(10**12, groups) == MAX_CHUNKS
    assert chunks_for(CHUNK_UPDATES, groups) == 2  # groups of two features: two updates per item


def test_zero6_clears_six_histograms_in_one_launch():
    from numba import cuda
    from customobj.ole.cuda import _histograms_kernels as K
    arrays = [cuda.to_device(np.full(37, v)) for v in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)]
    K.zero6[2, 8](*arrays)  # fewer threads than items: the grid-stride loop covers the rest
    assert all(not a.copy_to_host().any() for a in arrays)


def test_the_launch_shape_puts_features_on_x_and_items_on_y():
    from customobj.ole.cuda._histograms_kernels import launch_shape
    from customobj.ole.cuda._launch import pow2_threads
    top = pow2_threads(10**6)  # THREADS, or the simulator's
    (chunks, groups), (x, y) = launch_shape(10**6, 3, 5)
    assert groups == 3 and chunks >= 1 and x == min(8, top) and x * y == top
    (_, _), (x, y) = launch_shape(3, 1, 2)  # 6 updates: 2 feature lanes, 4 item lanes (at most 6 threads needed)
    assert (x, y) == (2, min(8, top) // 2)


def test_a_row_without_a_grid_adds_nothing_but_its_count():
    # a non-finite gradient leaves the grid step at 0 (fixed_point): its sums are 0, never NaN, on any card
    mapper, bins_fm = _setup(5)
    n = bins_fm.shape[1]
    rows = np.arange(n, dtype=np.int64)
    g = np.full(n, np.nan)
    h = np.ones(n)
    gpu = _gpu_hist("row_hist_shared", mapper, bins_fm, (rows, n, g, h), np.array([0.0, 1.0]), 2, (2, 4),
                    np.arange(bins_fm.shape[0], dtype=np.int64), 2000)
    assert np.isfinite(gpu).all() and not gpu[:, 0].any()
    assert gpu[:, HIST_COUNT].sum() == n * bins_fm.shape[0] and gpu[:, 1].sum() == n * bins_fm.shape[0]


@pytest.mark.parametrize("counted", [False, True])
def test_the_roots_row_histogram_launch_sums_each_rows_couplings(counted):
    """row_hist_shared's blocks of depth 1: ``rho[r]`` += each pair's coupling at both its rows (the root's
    ``R`` from rows), the pairs ``start:start+n`` or, counted, ``start:start+count[0]`` (ole_fast's kept
    pairs: a count on the card); the row histogram beside it unchanged."""
    from numba import cuda
    from customobj.ole.cuda import _histograms_kernels as K
    mapper, bins_fm = _setup(6)
    n = bins_fm.shape[1]
    rows, g, h, steps = _on_grid_rows(2, n)
    (pi, pj, pc), _ = _on_grid_pairs(n)
    start, m = 3, pi.size - 10
    want = np.zeros(n)
    np.add.at(want, pi[start:start + m], pc[start:start + m])
    np.add.at(want, pj[start:start + m], pc[start:start + m])
    feats = np.arange(bins_fm.shape[0], dtype=np.int64)
    groups, members, smap = _groups(mapper, feats, 2000)
    out, rho = cuda.to_device(np.zeros((mapper.n_slots, HIST_CHANNELS))), cuda.to_device(np.zeros(n))
    count = cuda.to_device(np.array([m, 0, 0, 0], np.int64))
    pairs = K.RootPairs(*(cuda.to_device(a) for a in (pi, pj, pc)), start, 0 if counted else m, count, counted, rho)
    dev = [cuda.to_device(a) for a in (rows, g, h, steps, groups, members, smap)]
    K.row_hist_shared[(2, groups.shape[0], 2), (2, 4)](cuda.to_device(np.ascontiguousarray(bins_fm.T)), dev[0],
                                                       rows.size, *dev[1:], out, pairs)
    np.testing.assert_array_equal(rho.copy_to_host(), want)  # on the grid: exact in any order
    np.testing.assert_array_equal(out.copy_to_host(), build_row_hist_fm(bins_fm, rows, 0, rows.size, g, h,
                                                                        mapper.offsets, mapper.n_slots))
