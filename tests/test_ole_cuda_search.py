"""customobj.ole.cuda.search: a split's two children searched in one launch and read in one copy,
each the CPU's split (splitting.find_best_split) under its own feature mask; the WSE ranking of two
nodes (splitting.feature_gains) likewise; more than two nodes, or pair histograms for one node of
two, refused. Small data under numba's CUDA simulator."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.common import SPLIT_SIZE, ChildSums
from customobj.ole.criterion import SE, WSE
from customobj.ole.histogram import build_row_hist_fm
from customobj.ole.splitting import FeatureBins, SplitRules, feature_gains, find_best_split

from _cuda_cases import needs_gpu
from _ole_cases import make_X

pytestmark = needs_gpu


def _search():
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.cuda import _search_kernels, _split_kernels
    from customobj.ole.cuda.memory import DeviceMemory
    from customobj.ole.cuda.pool import DevicePool
    from customobj.ole.cuda.search import DeviceSearch
    X = make_X(6, n=60, n_features=4, nan_frac=0.1)
    mapper = BinMapper.fit(X, 5)
    fm = mapper.bins_feature_major(X)
    rng = np.random.default_rng(6)
    grad, hess = np.nan_to_num(X[:, 1]) + 0.2 * rng.normal(size=60), rng.uniform(0.5, 1.0, 60)
    rows = np.arange(60, dtype=np.int64)
    hists = [build_row_hist_fm(fm, rows, lo, hi, grad, hess, mapper.offsets, mapper.n_slots)
             for lo, hi in ((0, 35), (35, 60))]
    sums = [ChildSums(float(grad[lo:hi].sum()), float(hess[lo:hi].sum()), float(hi - lo), 0.0)
            for lo, hi in ((0, 35), (35, 60))]
    mem = DeviceMemory(cuda_module())
    bins = FeatureBins(mapper.n_bins.astype(np.int64), mapper.offsets)
    d_bins = FeatureBins(*(mem.upload(a) for a in bins))
    pool = DevicePool(mem, n_rows=60, n_features=4, n_slots=mapper.n_slots, n_hists=1)
    search = DeviceSearch(mem, _split_kernels, _search_kernels, pool, d_bins, n_features=4, has_nan=True)
    return mem, search, bins, [mem.upload(h) for h in hists], hists, sums


def test_two_children_are_searched_in_one_launch_and_read_once_each_under_its_mask():
    mem, search, bins, d_hists, hists, sums = _search()
    rules = SplitRules(SE, 0.1, 2.0, 0.0)
    masks = [np.array([True, False, True, True]), np.array([True, True, False, True])]
    reads = mem.counter.stats().outside.reads
    res = search.splits([(d_hists[k], None, masks[k], sums[k]) for k in range(2)], rules, mem.upload(np.zeros(4)),
                        False)
    assert mem.counter.stats().outside.reads == reads + 1 and res.shape[0] == 2
    for k in range(2):
        want = np.zeros(SPLIT_SIZE)
        find_best_split(hists[k], np.zeros((1, 3)), False, bins, masks[k], sums[k], rules, want)
        np.testing.assert_array_equal(res[k, :SPLIT_SIZE], want)
    assert res[:, 1].min() >= 0 and res[0, 1] != 1.0 and res[1, 1] != 2.0  # each node split, outside its mask


def test_two_nodes_wse_gains_are_the_cpus():
    mem, search, bins, d_hists, hists, sums = _search()
    rules, mask = SplitRules(SE, 0.1, 2.0, 0.0), np.array([True, True, False, True])
    got = search.wse_gains([(d_hists[k], sums[k]) for k in range(2)], mask, rules, mem.upload(np.zeros(4)), False)
    for k in range(2):
        want = np.zeros(4)
        feature_gains(hists[k], bins, mask, sums[k], rules._replace(score=WSE), want)
        np.testing.assert_array_equal(got[k], want)
    assert got[0][2] == 0.0 and got[0].max() > 0


def test_more_than_two_nodes_or_mixed_pairs_are_refused():
    mem, search, bins, d_hists, hists, sums = _search()
    rules, mask, root = SplitRules(SE, 0.1, 2.0, 0.0), np.ones(4, np.bool_), mem.upload(np.zeros(4))
    with pytest.raises(ValueError, match="one or two nodes"):
        search.splits([(d_hists[0], None, mask, sums[0])] * 3, rules, root, False)
    with pytest.raises(ValueError, match="pair histograms"):
        search.splits([(d_hists[0], None, mask, sums[0]), (d_hists[1], mem.upload(np.zeros((1, 3))), mask, sums[1])],
                      rules, root, False)
    with pytest.raises(ValueError, match="one or two nodes"):
        search.wse_gains([], mask, rules, root, False)
