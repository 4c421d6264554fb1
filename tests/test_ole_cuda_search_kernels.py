"""customobj.ole.cuda._search_kernels: a split's two children searched and picked in one launch
(search_nodes), each split the CPU's (splitting.find_best_split: the first strictly best feature,
none: feature -1) with its NaN-slot count beside it, a searched root's sums with it; in several
feature blocks (the last block picks, whichever it is) and twice in a row (its ticket counter back
at 0); a pair partition's counts come back in node 0's result when asked. Small data under the
simulator; the kernel compiles to PTX for sm_80 / sm_90 in tests/test_ole_cuda_split_kernels.py, with every kernel of the OLE GPU learner."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.common import HIST_COUNT, NODE_SUMS, PAIR_COUNTS, RESULT_SIZE, SPLIT_FEATURE, SPLIT_SIZE, ChildSums
from customobj.ole.criterion import SE
from customobj.ole.cuda.search import NodeHists, SearchOut
from customobj.ole.histogram import build_row_hist_fm
from customobj.ole.splitting import FeatureBins, SplitRules, find_best_split

from _cuda_cases import needs_gpu
from _ole_cases import make_X, on_grid

pytestmark = needs_gpu


def _nodes():
    """Two nodes' row histograms over 5 features with NaN (values on the fixed-point grid, as a tree's),
    their sums and feature masks (node 1: every feature masked, so no split)."""
    X = make_X(4, n=80, n_features=5, nan_frac=0.2)
    mapper = BinMapper.fit(X, 6)
    fm = mapper.bins_feature_major(X)
    rng = np.random.default_rng(4)
    grad, hess = on_grid(np.nan_to_num(X[:, 3]) + 0.1 * rng.normal(size=80), rng.uniform(0.2, 1.0, 80))
    order = rng.permutation(80).astype(np.int64)
    hists, sums = [], []
    for lo, hi in ((0, 50), (50, 80)):
        hists.append(build_row_hist_fm(fm, order, lo, hi, grad, hess, mapper.offsets, mapper.n_slots))
        rows = order[lo:hi]
        sums.append(ChildSums(float(grad[rows].sum()), float(hess[rows].sum()), float(hi - lo), 0.0))
    masks = [np.array([True, True, False, True, True]), np.zeros(5, np.bool_)]
    return mapper, hists, sums, masks


@pytest.mark.parametrize("threads", [2, 8])
def test_both_children_are_the_cpus_splits_with_their_nan_counts(threads):
    from numba import cuda
    from customobj.ole.cuda import _search_kernels as K
    mapper, hists, sums, masks = _nodes()
    bins = FeatureBins(mapper.n_bins.astype(np.int64), mapper.offsets)
    rules = SplitRules(SE, 0.5, 3.0, 0.1)
    d = [cuda.to_device(a) for a in (*hists, *masks)]
    h = NodeHists(d[0], d[1], cuda.to_device(np.zeros((1, 3))), cuda.to_device(np.zeros((1, 3))), d[2], d[3])
    out = SearchOut(cuda.device_array((2, 5, SPLIT_SIZE)), cuda.device_array((2, 5)),
                    cuda.to_device(np.full((2, RESULT_SIZE), 7.0)), cuda.to_device(np.zeros(1, np.int64)))
    d_bins = FeatureBins(*(cuda.to_device(a) for a in bins))
    root = np.array([1.5, 2.5, -0.25, 9.0])  # stands for a root's G, H, C on the device: not used here
    record = cuda.to_device(np.array([12, 30, 0, 0], np.int64))  # a pair partition's: its counts come back
    for _ in range(2):  # the ticket counter is back at 0: the second search picks again
        K.search_nodes[(-(-5 // threads), 2), threads](h, False, d_bins, sums[0], sums[1], rules,
                                                       cuda.to_device(root), False, out, True, record, True)
        got = out.res.copy_to_host()
        assert out.done.copy_to_host()[0] == 0
        for b in range(2):
            want = np.zeros(SPLIT_SIZE)
            find_best_split(hists[b], np.zeros((1, 3)), False, bins, masks[b], sums[b], rules, want)
            np.testing.assert_array_equal(got[b, :SPLIT_SIZE], want)
            f = int(want[SPLIT_FEATURE])
            assert got[b, SPLIT_SIZE] == (hists[b][mapper.offsets[f] + mapper.n_bins[f], HIST_COUNT] if f >= 0 else 0)
        assert got[0, SPLIT_FEATURE] == 3 and got[1, SPLIT_FEATURE] == -1 and got[0, SPLIT_SIZE] > 0
        assert got[0, NODE_SUMS:PAIR_COUNTS].tolist() == root[:3].tolist()
        assert got[0, PAIR_COUNTS:].tolist() == [12.0, 30.0] and got[1, NODE_SUMS:].tolist() == [0.0] * 5
        out.res.copy_to_device(np.full((2, RESULT_SIZE), 7.0))


def test_a_root_is_searched_from_its_sums_on_the_device():
    from numba import cuda
    from customobj.ole.cuda import _search_kernels as K
    mapper, hists, sums, masks = _nodes()
    bins = FeatureBins(mapper.n_bins.astype(np.int64), mapper.offsets)
    rules = SplitRules(SE, 0.5, 3.0, 0.1)
    want = np.zeros(SPLIT_SIZE)
    find_best_split(hists[0], np.zeros((1, 3)), False, bins, masks[0], sums[0], rules, want)
    hd, md, ph = cuda.to_device(hists[0]), cuda.to_device(masks[0]), cuda.to_device(np.zeros((1, 3)))
    out = SearchOut(cuda.device_array((2, 5, SPLIT_SIZE)), cuda.device_array((2, 5)),
                    cuda.device_array((2, RESULT_SIZE)), cuda.to_device(np.zeros(1, np.int64)))
    root = np.array([sums[0].G, sums[0].H, 0.0, 0.0])
    wrong = sums[0]._replace(G=0.0, H=1.0)  # the record's G, H are not read: the device's are
    K.search_nodes[(1, 1), 8](NodeHists(hd, hd, ph, ph, md, md), False, FeatureBins(*(cuda.to_device(a) for a in bins)),
                              wrong, wrong, rules, cuda.to_device(root), True, out, False,
                              cuda.to_device(np.full(4, 7, np.int64)), False)
    got = out.res.copy_to_host()[0]
    np.testing.assert_array_equal(got[:SPLIT_SIZE], want)
    assert got[NODE_SUMS:PAIR_COUNTS].tolist() == root[:3].tolist() and got[SPLIT_SIZE] == 0.0  # no NaN count asked
    assert got[PAIR_COUNTS:].tolist() == [0.0, 0.0]  # no pair counts asked
