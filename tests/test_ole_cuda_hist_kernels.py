"""customobj.ole._cuda_hist_kernels: the GPU row and pair histograms against their CPU twins
(histogram.build_row_hist_fm, pairhist.build_pair_hist in float64): one block is the CPU's sum bit
for bit, several blocks equal it to rounding, the results never depend on the run, and the NaN
channels follow the CPU's rules. Small data: on a machine without a GPU they run on numba's CUDA
simulator (tests/conftest.py)."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.common import HIST_CHANNELS, HIST_COUNT, PH_CHANNELS
from customobj.ole.cuda_backend import MAX_BLOCKS, _launch
from customobj.ole.histogram import build_row_hist_fm
from customobj.ole.pairhist import PairScratch, build_pair_hist

from _cuda_cases import needs_gpu
from _ole_cases import assert_subset_slots, make_X, random_pairs

pytestmark = needs_gpu


def _setup(seed=0, n=160, n_features=4):
    X = make_X(seed, n=n, n_features=n_features)  # NaN, a constant feature, long runs of equal bins
    mapper = BinMapper.fit(X, 12)
    return mapper, mapper.bins_feature_major(X)


def _gpu_row_hist(mapper, bins_fm, rows, grad, hess, nb):
    from numba import cuda
    from customobj.ole import _cuda_hist_kernels as K
    partial = cuda.device_array((MAX_BLOCKS, mapper.n_slots, HIST_CHANNELS))
    out = cuda.device_array((mapper.n_slots, HIST_CHANNELS))
    n = rows.shape[0]
    K.row_hist_blocks[_launch(bins_fm.shape[0] * nb)](cuda.to_device(bins_fm), cuda.to_device(rows), n, nb,
                                                      cuda.to_device(grad), cuda.to_device(hess),
                                                      cuda.to_device(mapper.offsets), partial)
    K.reduce_blocks[_launch(out.size)](partial, nb, out)
    return out.copy_to_host()


def _gpu_pair_hist(mapper, bins_fm, pairs, nb, feats):
    from numba import cuda
    from customobj.ole import _cuda_hist_kernels as K
    partial = cuda.device_array((MAX_BLOCKS, mapper.n_slots, PH_CHANNELS))
    K.zero[_launch(partial.size)](partial.reshape(partial.size))
    out = cuda.device_array((mapper.n_slots, PH_CHANNELS))
    pi, pj, pc = (cuda.to_device(np.ascontiguousarray(a)) for a in pairs)
    K.pair_hist_blocks[_launch(feats.size * nb)](cuda.to_device(bins_fm), pi, pj, pc, pc.shape[0], nb,
                                                 cuda.to_device(feats), cuda.to_device(mapper.offsets[feats]),
                                                 cuda.to_device(mapper.n_bins[feats].astype(np.int64)), partial)
    K.reduce_blocks[_launch(out.size)](partial, nb, out)
    return out.copy_to_host()


def test_one_block_is_the_cpu_row_histogram_bit_for_bit_and_more_blocks_equal_it_to_rounding():
    mapper, bins_fm = _setup()
    rng = np.random.default_rng(1)
    n = bins_fm.shape[1]
    grad, hess = rng.normal(size=n) * 1e3, rng.uniform(0.1, 2.0, n)
    rows = np.sort(rng.choice(n, size=97, replace=False)).astype(np.int64)  # a node: increasing rows
    cpu = build_row_hist_fm(bins_fm, rows, 0, rows.size, grad, hess, mapper.offsets, mapper.n_slots)
    np.testing.assert_array_equal(_gpu_row_hist(mapper, bins_fm, rows, grad, hess, 1), cpu)
    for nb in (2, 5):
        gpu = _gpu_row_hist(mapper, bins_fm, rows, grad, hess, nb)
        np.testing.assert_array_equal(gpu[:, HIST_COUNT], cpu[:, HIST_COUNT])
        np.testing.assert_allclose(gpu, cpu, rtol=1e-12, atol=1e-9)
        np.testing.assert_array_equal(_gpu_row_hist(mapper, bins_fm, rows, grad, hess, nb), gpu)  # deterministic


def test_an_empty_node_has_an_empty_histogram():
    mapper, bins_fm = _setup(2)
    gpu = _gpu_row_hist(mapper, bins_fm, np.zeros(0, np.int64), np.ones(bins_fm.shape[1]), np.ones(bins_fm.shape[1]), 1)
    assert not gpu.any()


@pytest.mark.parametrize("nb", [1, 3])
def test_the_pair_histogram_equals_the_cpu_float64_one_with_nan_rows(nb):
    mapper, bins_fm = _setup(3, n=200)
    assert mapper.has_nan.any()  # the nanp channel is exercised
    pi, pj, pc, _ = random_pairs(4, n_queries=8, max_rows=25)
    keep = (pi < 200) & (pj < 200)
    pairs = tuple(np.ascontiguousarray(a[keep]) for a in (pi, pj, pc))
    assert pairs[0].size > 50
    feats = np.arange(bins_fm.shape[0], dtype=np.int64)
    scratch = PairScratch(bins_fm.shape[1], bins_fm.shape[0], True, dtype=np.float64)
    cpu = build_pair_hist(np.ascontiguousarray(bins_fm.T), *pairs, 0, pairs[0].size, mapper.offsets, mapper.n_bins,
                          mapper.n_slots, scratch)
    gpu = _gpu_pair_hist(mapper, bins_fm, pairs, nb, feats)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-12, atol=1e-12 * np.abs(cpu).max())
    # a feature subset fills only its own slots (the partials were zeroed)
    sub = _gpu_pair_hist(mapper, bins_fm, pairs, nb, np.array([0, 2], dtype=np.int64))
    assert_subset_slots(sub, gpu, mapper.offsets, bins_fm.shape[0], (0, 2))
