"""customobj.ole.cuda._split_kernels: the GPU split search (a block per feature, its lanes scanning the
bins) against the CPU's (splitting.find_best_split and feature_gains) on random and deliberately tied
histograms of values on the fixed-point grid (as a tree's) for every score, with and without pairs
and NaN, with feature masks (the best feature picked by _reduce_kernels.pick_best); the
elementwise subtraction. Small data: without a GPU they run on numba's CUDA simulator. Where
NVIDIA's NVVM is installed, every kernel of the OLE GPU learner (these, the histograms', the
reductions', the partitions' and the score update) is also typed and compiled to PTX as for a real
GPU (sm_80 and sm_90), and every kernel of those modules is in the list."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.common import SPLIT_SIZE, ChildSums
from customobj.ole.criterion import OLE, SE, WSE
from customobj.ole.cuda.partitions import launch as _launch
from customobj.ole.cuda.search import NodeHists
from customobj.ole.histogram import build_row_hist_fm
from customobj.ole.pairhist import build_pair_hist
from customobj.ole.splitting import FeatureBins, SplitRules, feature_gains, find_best_split

from _cuda_cases import LIST_KERNELS, NVVM_MISSING, needs_gpu
from _ole_cases import make_X, on_grid, random_pairs

pytestmark = needs_gpu


def _node(seed, tie):
    """A node's row and pair histograms (float64), sums and mapper; ``tie`` copies feature 0 into 2
    and 3, so three features tie on every threshold."""
    X = make_X(seed, n=140, n_features=5)
    if tie:
        X[:, 2] = X[:, 0]
        X[:, 3] = X[:, 0]
    mapper = BinMapper.fit(X, 10)
    fm = mapper.bins_feature_major(X)
    rng = np.random.default_rng(seed)
    grad, hess = rng.normal(size=140), rng.uniform(0.2, 1.0, 140)
    if tie:  # feature 0 (and its copies) explains the gradients: the tied features are the best ones
        grad = np.nan_to_num(X[:, 0]) + 0.1 * grad
    grad, hess = on_grid(grad, hess)  # as a tree's: the GPU's scans of the bins are exact
    rows = np.arange(140, dtype=np.int64)
    hist = build_row_hist_fm(fm, rows, 0, 140, grad, hess, mapper.offsets, mapper.n_slots)
    pi, pj, pc, _ = random_pairs(seed, n_queries=8, max_rows=17)
    keep = (pi < 140) & (pj < 140) & (pc > 0)
    pi, pj, (pc,) = pi[keep], pj[keep], on_grid(pc[keep] * 0.02)
    ph = build_pair_hist(np.ascontiguousarray(fm.T), pi, pj, pc, 0, pi.size, mapper.offsets, mapper.n_bins,
                         mapper.n_slots)
    G, H = float(grad.sum()), float(hess.sum())
    return mapper, hist, ph, (G, H, 140.0, float(pc.sum()))


def _gpu_split(mapper, hist, ph, use_pairs, score, mask, sums, lam, min_data, min_hess, on_device=False):
    from numba import cuda
    from customobj.ole.cuda import _reduce_kernels as R
    gains, per = _gpu_bests(mapper, hist, ph, use_pairs, mask, ChildSums(*sums),
                            SplitRules(score, lam, min_data, min_hess), on_device)
    res = cuda.device_array(SPLIT_SIZE)
    R.pick_best[1, 8](per, gains, res)
    return res.copy_to_host()


def _gpu_bests(mapper, hist, ph, use_pairs, mask, node, rules, on_device=False):
    """``feature_bests`` with the node's G, H, C in its record, or (``on_device``: a root's) on the
    device, the record's then wrong (0)."""
    from numba import cuda
    from customobj.ole.cuda import _split_kernels as K
    n_feat = mapper.n_bins.shape[0]
    per, gains = cuda.device_array((1, n_feat, SPLIT_SIZE)), cuda.device_array((1, n_feat))
    bins = FeatureBins(cuda.to_device(mapper.n_bins.astype(np.int64)), cuda.to_device(mapper.offsets))
    sums = cuda.to_device(np.array([node.G, node.H, node.C, 0.0]))
    record = node._replace(G=0.0, H=0.0, C=0.0) if on_device else node
    h, p, m = cuda.to_device(hist), cuda.to_device(ph), cuda.to_device(mask)
    K.feature_bests[(2, 1), 4](NodeHists(h, h, p, p, m, m), use_pairs, bins, record, record, rules, sums, on_device,
                               per, gains)  # 2 blocks of 4 threads: 5 features
    return gains[0], per[0]


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("score", [SE, WSE, OLE])
def test_the_gpu_search_picks_the_cpu_split_ties_included(score, tie):
    mapper, hist, ph, sums = _node(1, tie)
    masks = [np.ones(5, np.bool_), np.array([False, True, True, True, False])]
    for mask, tied_winner in zip(masks, (0.0, 2.0)):
        for use_pairs in ([False, True] if score == OLE else [False]):
            for lam, min_data, min_hess in ((0.0, 1.0, 0.0), (0.5, 9.0, 0.5)):
                want = np.zeros(SPLIT_SIZE)
                find_best_split(hist, ph if use_pairs else np.zeros((1, 3)), use_pairs,
                                FeatureBins(mapper.n_bins, mapper.offsets), mask, ChildSums(*sums),
                                SplitRules(score, lam, min_data, min_hess), want)
                got = _gpu_split(mapper, hist, ph if use_pairs else np.zeros((1, 3)), use_pairs, score, mask, sums,
                                 lam, min_data, min_hess, on_device=lam > 0)  # a root's sums on the device
                np.testing.assert_array_equal(got, want)  # the same record, bit for bit
                if tie and lam == 0.0:  # three equal features: the lowest unmasked one wins
                    assert got[1] == tied_winner


def test_no_split_is_gain_zero_and_feature_minus_one():
    mapper, hist, ph, sums = _node(2, False)
    got = _gpu_split(mapper, hist, ph, True, OLE, np.zeros(5, np.bool_), sums, 0.0, 1.0, 0.0)
    assert got[0] == 0.0 and got[1] == -1.0
    got = _gpu_split(mapper, hist, ph, False, WSE, np.ones(5, np.bool_), sums, 0.0, 1e6, 0.0)  # min_data too large
    assert got[0] == 0.0 and got[1] == -1.0


def test_the_wse_gains_equal_the_cpu_feature_gains():
    mapper, hist, _, (G, H, N, _) = _node(3, True)
    mask = np.array([True, True, False, True, True])
    want = np.zeros(5)
    node, rules = ChildSums(G, H, N, 0.0), SplitRules(WSE, 0.5, 2.0, 0.1)
    feature_gains(hist, FeatureBins(mapper.n_bins, mapper.offsets), mask, node, rules, want)
    for on_device in (False, True):
        gains, _ = _gpu_bests(mapper, hist, np.zeros((1, 3)), False, mask, node, rules, on_device)
        np.testing.assert_array_equal(gains.copy_to_host(), want)
    assert want[2] == 0.0 and want.max() > 0


@pytest.mark.parametrize("threads", [1, 4, 8])
@pytest.mark.parametrize("score", [SE, WSE])
def test_equal_gains_in_different_lanes_keep_the_cpus_first_threshold(score, threads):
    # one feature of 9 bins, bins 3-5 empty: thresholds 2-5 split alike (the best gain, four times); with 4
    # lanes of 2 thresholds each, 2 and 3 are lane 1's, 4 and 5 lane 2's: the first, 2, wins, as on the CPU
    from numba import cuda
    from customobj.ole.cuda import _split_kernels as K
    hist = np.zeros((10, 3))
    hist[[0, 1, 2, 6, 7, 8], 0] = [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0]
    hist[[0, 1, 2, 6, 7, 8], 1:] = [1.0, 2.0]
    bins = FeatureBins(np.array([9]), np.array([0]))
    node, rules = ChildSums(0.0, 6.0, 12.0, 0.0), SplitRules(score, 0.0, 1.0, 0.0)
    want = np.zeros(SPLIT_SIZE)
    find_best_split(hist, np.zeros((1, 3)), False, bins, np.ones(1, np.bool_), node, rules, want)
    assert want[2] == 2.0  # the bin of the first of the four equal thresholds
    h, m, p = cuda.to_device(hist), cuda.to_device(np.ones(1, np.bool_)), cuda.to_device(np.zeros((1, 3)))
    per, gains = cuda.to_device(np.zeros((1, 1, SPLIT_SIZE))), cuda.device_array((1, 1))
    K.feature_bests[(1, 1), threads](NodeHists(h, h, p, p, m, m), False, FeatureBins(*map(cuda.to_device, bins)),
                                     node, node, rules, cuda.to_device(np.zeros(4)), False, per, gains)
    np.testing.assert_array_equal(per.copy_to_host()[0, 0], want)
    assert gains.copy_to_host()[0, 0] == want[0]


@pytest.mark.parametrize("n_ops", [1, 2, 3])
def test_subtract3_is_numpys_elementwise_subtractions_in_order(n_ops):
    from numba import cuda
    from customobj.ole.cuda import _split_kernels as K
    rng = np.random.default_rng(0)
    a, c, b, x, y = rng.normal(size=300) * 1e8, rng.normal(size=300), *rng.normal(size=(3, 300))
    da, dc = cuda.to_device(a), cuda.to_device(c)
    # a -= b; c -= x; a -= y (a twice: in order), the ones past n_ops not applied
    K.subtract3[_launch(300)](da, cuda.to_device(b), dc, cuda.to_device(x), da, cuda.to_device(y), n_ops)
    want_a = a - b - (y if n_ops > 2 else 0.0)
    np.testing.assert_array_equal(da.copy_to_host(), want_a)
    np.testing.assert_array_equal(dc.copy_to_host(), c - x if n_ops > 1 else c)


@pytest.mark.parametrize("n_ops", [0, 1])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_subtract_children_completes_the_larger_child_in_the_cpus_order(mode, n_ops):
    from numba import cuda
    from customobj.ole.cuda import _split_kernels as K
    from customobj.ole.common import PART_PLAN, PART_RECORD, PH_R
    from customobj.ole.pairhist import PAIRS_DIRECT, PAIRS_LEFT_SMALL, PAIRS_RIGHT_SMALL
    rng = np.random.default_rng(1)
    a, b, p, left, right = rng.normal(size=(5, 200)) * np.array([[1e8], [1.0], [1e9], [3.0], [1e-3]])
    d = [cuda.to_device(v) for v in (a, b, p, left, right)]
    record = np.zeros(PART_RECORD, np.int64)
    record[PART_PLAN] = (PAIRS_DIRECT, PAIRS_LEFT_SMALL, PAIRS_RIGHT_SMALL)[mode]
    K.subtract_children[_launch(200)](d[0], d[1], n_ops, d[2], d[3], d[4], cuda.to_device(record))
    want_left, want_right = left.copy(), right.copy()
    r = np.arange(200) % 3 == PH_R  # flat (slots, 3): R is each child's own, from its rows (child_hists)
    if mode == 1:  # the CPU: parent -= left; parent -= split pairs (in right's buffer)
        want_right = np.where(r, right, (p - left) - right)
    elif mode == 2:
        want_left = np.where(r, left, (p - right) - left)
    np.testing.assert_array_equal(d[3].copy_to_host(), want_left)
    np.testing.assert_array_equal(d[4].copy_to_host(), want_right)
    np.testing.assert_array_equal(d[0].copy_to_host(), a - b if n_ops else a)
    np.testing.assert_array_equal(d[2].copy_to_host(), p)  # the parent is read only


_PTX = """
import os
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
import types as pytypes
from customobj._cuda_runtime import cuda_module
cuda = cuda_module()
from numba import types as T
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))  # no GPU: sm_80
from customobj.ole.cuda import _split_kernels as K, _scores_kernels as S, _histograms_kernels as HK
from customobj.ole.cuda import _partitions_kernels as P, _reduce_kernels as R, _search_kernels as N
from customobj.ole.cuda import _pruning_kernels as PR, _level_place_kernels as LP
f1, i1, f2, f3, b1 = T.float64[::1], T.int64[::1], T.float64[:, ::1], T.float64[:, :, ::1], T.boolean[::1]
i, f, b, fA = T.int64, T.float64, T.boolean, T.float64[:]  # fA: a column of McRank's (n, K) gradients
i2, j1 = T.int64[:, ::1], T.int32[::1]  # block counts, feature groups; int32 pair indices
u8, u16 = T.uint8[:, ::1], T.uint16[:, ::1]
from customobj.ole.common import ChildSums
from customobj.ole.splitting import FeatureBins, SplitRules
bins = T.NamedTuple([i1, i1], FeatureBins)  # the split search's records (issue: no kernel over 12 arguments)
node, rules = T.NamedUniTuple(f, 4, ChildSums), T.NamedTuple([i, f, f, f], SplitRules)
from customobj.ole.cuda.search import NodeHists, SearchOut
hists = T.NamedTuple([f2, f2, f2, f2, b1, b1], NodeHists)
out = T.NamedTuple([f3, f2, f2, i1], SearchOut)
from customobj.ole.cuda import _choice_kernels as C
choice = T.NamedTuple([b1, T.boolean[:, ::1], T.int64[:, :, ::1], T.int64[:, :, ::1], i2], C.FeatureChoice)
from customobj.ole.cuda.partitions import PairCount, RowPlace
place, count = T.NamedTuple([i1, i1, i2, i, i, i, i], RowPlace), T.NamedTuple([j1, j1, i2, i1, i, i, i], PairCount)
from customobj.ole.cuda.histograms import ChildPlan, ChosenPairs, RowBuild
plan32, plan64 = (T.NamedTuple([i1, i, i, f, f, f, b, b, p, p, f1, f1, f2, f2], ChildPlan) for p in (j1, i1))
build = T.NamedTuple([i1, i, f1, f1, f1, f2], RowBuild)
nrows = T.NamedTuple([f1, i1, i], HK.NodeRows)
root32, root64 = (T.NamedTuple([p, p, f1, i, i, i1, b, f1], HK.RootPairs) for p in (j1, i1))
place32 = T.NamedTuple([j1, j1, f1, f1], P.PairPlace)
pairs, tables = T.NamedTuple([j1, j1, f1], PR.PairArrays), T.NamedTuple([i1, f1, f2, f], PR.QueryTables)
grid, gridA = (T.NamedTuple([a, a, i1, b, i, f1, i1, f1, f1, f1], R.GridItems) for a in (f1, fA))  # fA: McRank's
tops32, tops64 = (T.NamedTuple([p, i1, j1, i1, f1, b], R.QueryTops) for p in (j1, i1))
SIGS = [(K.feature_bests, (hists, b, bins, node, node, rules, f1, b, f3, f2)), (R.pick_best, (f2, f1, f1)),
        (K.subtract3, (f1, f1, f1, f1, f1, f1, i)), (K.subtract_children, (f1, f1, i, f1, f1, f1, i1)),
        (HK.child_hists, (u8, i2, i2, i1, plan32, build, nrows, nrows)),
        (HK.child_hists, (u16, i2, i2, i1, plan64, build, nrows, nrows)),
        (HK.chosen_child_pairs, (u8, T.NamedTuple([i1, i, i, i, j1, j1, f1, f1], ChosenPairs), choice, f2, f2, nrows,
                                 nrows)),
        (S.add_tree_bins, (u8, i1, i1, i1, b1, i1, i1, f1, f1)), (S.add_tree_bins, (u16, i1, i1, i1, b1, i1, i1, f1, fA)),
        (HK.zero, (f1,)), (HK.zero6, (f1, f1, f1, f1, f1, f1)),
        (HK.row_hist_shared, (u8, i1, i, f1, f1, f1, i2, i2, i1, f2, root32)),
        (HK.row_hist_shared, (u16, i1, i, f1, f1, f1, i2, i2, i1, f2, root64)),
        (HK.pair_hist_shared, (u8, j1, j1, f1, i, i, f1, i2, i2, i1, f2, nrows)),
        (HK.pair_hist_shared, (u16, i1, i1, f1, i, i, f1, i2, i2, i1, f2, nrows)),
        (R.grid_max, (grid, grid, f1, f1)), (R.grid_max, (gridA, grid, f1, f1)), (R.grid_units, (grid, grid)),
        (R.grid_units, (gridA, grid)), (R.grid_round, (grid, grid, tops32)), (R.grid_round, (gridA, grid, tops64)),
        (R.coupling_sums, (f1, i, i, f1)),
        (P.mark_rows_blocks, (T.uint8[::1], i1, i, i, i, i, i, b, b1, i1, i2)),
        (P.place_rows_blocks, (i1, i1, i, i, i, i, b1, i2)),
        (P.count_sides_blocks, (j1, j1, i, i, i, b1, i2, i1)),
        (P.place_sides_blocks, (T.NamedTuple([j1, j1, f1, i, i, i, i2, i1], P.PairSides), b1, place32)),
        (P.place_rows_count_sides, (place, count, b1)),
        (P.mark_rows_level, (i2, u8, i1, b1, i1, i2)),
        (P.place_rows_count_sides_level, (i2, i1, i1, i2, T.NamedTuple([j1, j1, j1, j1], P.PairSources), i2, i2, b1)),
        (P.place_sides_row_hist, (u8, i2, i2, i1, build, T.NamedTuple([j1, j1, f1, i, i, i, i2, i1], P.PairSides), b1,
                                  place32)),
        (LP.place_sides_row_hist_level, (u8, i2, i2, i1, T.NamedTuple([i1, f1, f1, f1, f3, i2], LP.LevelRows), i2,
                                         T.NamedTuple([j1, j1, f1, j1, j1, f1, i2, i2, f1], LP.LevelPlacings), b1)),
        (N.search_nodes, (hists, b, bins, node, node, rules, f1, b, out, b, i1, b)),
        (N.search_batch, (T.NamedTuple([f3, f2, i2, T.boolean[:, ::1], f2], N.BatchNodes), b, bins, rules, out, b)),
        (C.wse_choose, (hists, bins, node, node, rules, f1, b, out, choice, i, i,
                        T.NamedTuple([i, f2, f2, i, T.boolean[:, ::1]], C.Completion))),
        (C.wse_choose_level, (T.NamedTuple([f3, f2], C.LevelChoice), bins, rules, f3, f2, i1, choice, i, i)),
        (C.chosen_level_pairs, (u8, T.NamedTuple([i2, i2, j1, j1, f1, j1, j1, f1, f3, i1, f1, f1], C.LevelPairs), choice)),
        (PR.query_tops, (tops32, f1, i)), (PR.query_masses, (j1, f1, i1, j1, i, i1, f2, i1, f1)),
        (PR.count_kept_blocks, (pairs, i1, j1, tables, i, i, i2, i1, f1)),
        (PR.place_kept_blocks, (pairs, i1, j1, tables, i, i, i2, i1, pairs)),
        (PR.leaf_map, (i1, i, i1, i1, i1, i, i, i1, f1)),
        (PR.dropped_leaf_sums, (pairs, i1, i, i1, i, i, T.NamedTuple([i2, f2, u8, i1], PR.LeafSplits), f1, tables)),
        (PR.dropped_leaf_sums, (pairs, i1, i, i1, i, i, T.NamedTuple([i2, f2, u16, i1], PR.LeafSplits), f1, tables))]
try:
    cuda.compile_ptx(K.subtract3.py_func, T.void(f1, f1, f1, f1, f1, f1, i), cc=(8, 0))
except Exception as exc:
    print("NO-NVVM", type(exc).__name__)
    raise SystemExit
import sys
sys.path.insert(0, "benchmarks")
from sass import kernel_ptx  # typed and lowered once, NVVM once per chip
for kernel, sig in SIGS:
    assert all(".entry" in ptx for ptx in kernel_ptx(kernel, sig, ((8, 0), (9, 0))).values())
print("COMPILED", len(SIGS))
check_listed(SIGS, "customobj.ole.cuda")
"""


def test_the_kernels_compile_for_a_real_gpu_the_cpu_search_as_a_device_function():
    # The simulator runs the search's Python source; a GPU compiles splitting._best_in_feature (an
    # @njit function) as a device function. Typing and PTX for sm_80 need NVIDIA's NVVM, not a GPU.
    from _isolated import run_isolated
    out = run_isolated(LIST_KERNELS + _PTX, timeout=600)
    if "NO-NVVM" in out:
        pytest.skip(NVVM_MISSING)
    assert "UNLISTED []" in out, out  # every kernel of ole/cuda/_*_kernels.py, found in the code, compiled
    kernels = int(out.split("KERNELS ")[1].split()[0])
    assert kernels >= 15 and f"LISTED {kernels}" in out and "COMPILED" in out
