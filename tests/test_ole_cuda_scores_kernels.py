"""customobj.ole.cuda._scores_kernels: the device score update adds each row's leaf value exactly as
the CPU's add_tree_bins does (NaN rows to the default side, a stump to every row), into a 1-D score
vector or one column of McRank's scores. Without a GPU it runs on numba's CUDA simulator."""
import numpy as np
import pytest

from customobj.ole import TreeBooster
from customobj.ole.predictor import add_tree_bins

from _cuda_cases import needs_gpu
from _ole_cases import QUIET, make_rank_data

pytestmark = needs_gpu


def _device_add(bins_fm, n_bins, tree, out):
    from numba import cuda
    from customobj.ole.cuda import _scores_kernels as K
    nodes = tree.nodes
    args = [cuda.to_device(np.ascontiguousarray(nodes[k], dtype=t)) for k, t in
            (("split_feature", np.int64), ("threshold_bin", np.int64), ("default_left", np.bool_),
             ("left_child", np.int64), ("right_child", np.int64))]
    K.add_tree_bins[(out.shape[0] + 31) // 32, 32](cuda.to_device(bins_fm), cuda.to_device(n_bins.astype(np.int64)),
                                                   *args, cuda.to_device(np.ascontiguousarray(tree.leaves["leaf_value"])), out)


@pytest.mark.parametrize("num_leaves, min_data, n_nodes", [(2, 10**4, 0), (2, 3, 1), (7, 3, 6)])
def test_the_device_update_equals_the_cpu_one_with_nan_rows(num_leaves, min_data, n_nodes):
    from numba import cuda
    X, y, group = make_rank_data(4, nan_frac=0.2)
    model = TreeBooster(criterion="wse", num_leaves=num_leaves, n_estimators=1, min_data_in_leaf=min_data, max_bin=12,
                        **QUIET).fit(X, y, group)
    tree = model.trees_[0]
    assert len(tree.nodes) == n_nodes  # a stump (no split) adds its one value to every row
    bins_fm = model.bin_mapper_.bins_feature_major(X)
    start = np.random.default_rng(0).normal(size=y.size)
    want = start.copy()
    add_tree_bins(np.ascontiguousarray(bins_fm.T), model.bin_mapper_.n_bins, tree, want)
    out = cuda.to_device(start)
    _device_add(bins_fm, model.bin_mapper_.n_bins, tree, out)
    np.testing.assert_array_equal(out.copy_to_host(), want)
    two = cuda.to_device(np.zeros((y.size, 2)))  # one column of (n, K) scores: a strided view
    _device_add(bins_fm, model.bin_mapper_.n_bins, tree, two[:, 1])
    alone = np.zeros(y.size)
    add_tree_bins(np.ascontiguousarray(bins_fm.T), model.bin_mapper_.n_bins, tree, alone)
    np.testing.assert_array_equal(two.copy_to_host()[:, 1], alone)
    assert not two.copy_to_host()[:, 0].any()
