"""customobj.ole._cuda_partition_kernels: the GPU row and pair partitions give the CPU's order (stable,
[left | right] rows, [both left | both right | split] pairs) and sides for any block count, NaN rows
included (the block counts scanned by _cuda_reduce_kernels.scan_counts). Without a GPU they run on numba's CUDA simulator (tests/conftest.py): small data."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.cuda_backend import _launch
from customobj.ole.pair_partition import partition_pairs
from customobj.ole.partition import partition_rows

from _cuda_cases import needs_gpu
from _ole_cases import make_X, random_pairs

pytestmark = needs_gpu


def _cuda():
    from numba import cuda
    from customobj.ole import _cuda_partition_kernels as P, _cuda_reduce_kernels as R
    return cuda, P, R


@pytest.mark.parametrize("nb", [1, 3, 7])
@pytest.mark.parametrize("nan_left", [False, True])
def test_the_row_partition_is_the_cpus(nb, nan_left):
    cuda, P, R = _cuda()
    X = make_X(5, n=150, n_features=3, nan_frac=0.2)
    mapper = BinMapper.fit(X, 8)
    fm = mapper.bins_feature_major(X)
    f, tbin, start, end = 0, 2, 9, 140
    order = np.random.default_rng(1).permutation(150).astype(np.int64)
    want, go = order.copy(), np.zeros(150, np.bool_)
    nl = partition_rows(fm[f], want, start, end, tbin, int(mapper.n_bins[f]), nan_left, go, np.empty(150, np.int64))
    d_order, d_go, tmp = cuda.to_device(order), cuda.to_device(np.zeros(150, np.bool_)), cuda.device_array(150, np.int64)
    counts = cuda.device_array((nb, 2), np.int64)
    n = end - start
    P.mark_rows_blocks[_launch(nb)](cuda.to_device(fm[f]), d_order, start, n, nb, tbin, int(mapper.n_bins[f]),
                                    nan_left, d_go, counts)
    before = cuda.device_array((nb + 1, 2), np.int64)
    R.scan_counts[1, 4](counts, nb, before)
    P.place_rows_blocks[_launch(nb)](d_order, start, n, nb, d_go, before, tmp)
    P.copy_rows[_launch(n)](tmp, d_order, start, n)
    assert counts.copy_to_host()[:, 0].sum() == nl and 0 < nl < n
    np.testing.assert_array_equal(d_order.copy_to_host(), want)  # untouched outside start:end too
    rows = order[start:end]
    np.testing.assert_array_equal(d_go.copy_to_host()[rows], go[rows])


@pytest.mark.parametrize("nb", [1, 4])
def test_the_pair_partition_is_the_cpus(nb):
    cuda, P, R = _cuda()
    pi, pj, pc, ptr = random_pairs(2, n_queries=10, max_rows=12)
    n_rows = int(ptr[-1])
    go = np.random.default_rng(3).random(n_rows) < 0.5
    start, end = 5, pi.size - 3
    want = tuple(np.zeros_like(a) for a in (pi, pj, pc))
    tl, tr = partition_pairs(pi, pj, pc, start, end, go, *want)
    src = tuple(cuda.to_device(a) for a in (pi, pj, pc))
    dst = tuple(cuda.to_device(np.zeros_like(a)) for a in (pi, pj, pc))
    counts, d_go = cuda.device_array((nb, 2), np.int64), cuda.to_device(go)
    n = end - start
    P.count_sides_blocks[_launch(nb)](src[0], src[1], start, n, nb, d_go, counts)
    before = cuda.device_array((nb + 1, 2), np.int64)
    R.scan_counts[1, 4](counts, nb, before)
    np.testing.assert_array_equal(before.copy_to_host(), np.r_[[[0, 0]], np.cumsum(counts.copy_to_host(), axis=0)])
    P.place_sides_blocks[_launch(nb)](*src, start, n, nb, d_go, before, *dst)
    assert tuple(counts.copy_to_host().sum(axis=0)) == (tl, tr) and tl > 0 and tr > 0
    for got, w in zip(dst, want):
        np.testing.assert_array_equal(got.copy_to_host(), w)
