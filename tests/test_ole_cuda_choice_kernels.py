"""customobj/ole/cuda/_choice_kernels.py: ``wse_choose``, ole_fast's feature choice where the gains
are, against its CPU twin: the WSE gains (splitting.feature_gains), the top ``k`` of the mask
(backend.select_features: larger gain first, ties to the lower index) and their shared-memory groups
(_histograms_kernels.feature_groups), the group table zero past its last group. Capacities of a few
slots force several groups and a feature wider than one; two identical features tie. A level's nodes
in one launch (``wse_choose_level``: each choice in its result row) and their pair histograms in one
more (``chosen_level_pairs``, against pairhist.build_pair_hist). Small data under numba's CUDA
simulator."""
import numpy as np
import pytest

from customobj.ole.backend import select_features
from customobj.ole.binning import BinMapper
from customobj.ole.common import RESULT_SIZE, SPLIT_SIZE, ChildSums
from customobj.ole.criterion import SE, WSE
from customobj.ole.histogram import build_row_hist_fm
from customobj.ole.splitting import FeatureBins, SplitRules, feature_gains

from _cuda_cases import needs_gpu
from _ole_cases import on_grid

pytestmark = needs_gpu

N_FEAT = 7


def _data():
    rng = np.random.default_rng(3)
    n = 80
    X = np.column_stack([np.round(rng.normal(size=n) * k) for k in (1, 2, 3, 5, 8, 8, 13)])
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 5] = X[:, 4]  # features 4 and 5 are one: equal gains, the lower index first
    mapper = BinMapper.fit(X, 12)
    fm = mapper.bins_feature_major(X)
    grad, hess = on_grid(np.nan_to_num(X[:, 2] + X[:, 4]) + 0.3 * rng.normal(size=n), rng.uniform(0.5, 1.0, n))
    rows = np.arange(n, dtype=np.int64)
    cuts = ((0, 50), (50, n))
    hists = [build_row_hist_fm(fm, rows, lo, hi, grad, hess, mapper.offsets, mapper.n_slots) for lo, hi in cuts]
    sums = [ChildSums(float(grad[lo:hi].sum()), float(hess[lo:hi].sum()), float(hi - lo), 0.0) for lo, hi in cuts]
    return mapper, hists, sums


def _choose(mapper, hists, sums, mask, k, capacity, subtract=None, keep_row=None):
    """``wse_choose`` launched as DeviceSearch.choose_features does, with a given capacity;
    ``subtract``: ``(node, small)``, node ``node``'s histogram completed there as ``-= small``
    (then returned as well, after the launch); ``keep_row``: each node's choice also copied to
    rows ``keep_row, keep_row + 1`` of a 4-row mask table (-1: not; the table, filled with True
    before, returned last)."""
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.cuda import _choice_kernels as K
    from customobj.ole.cuda.search import NodeHists, SearchOut
    cuda = cuda_module()
    f, n_slots = N_FEAT, mapper.n_slots
    bins = FeatureBins(*(cuda.to_device(np.asarray(a, np.int64)) for a in (mapper.n_bins, mapper.offsets)))
    choice = K.FeatureChoice(cuda.to_device(mask), cuda.to_device(np.zeros((2, f), np.bool_)),
                             cuda.to_device(np.full((2, f, 5), -7, np.int64)),  # garbage: the kernel overwrites
                             cuda.to_device(np.zeros((2, f, 4), np.int64)), cuda.to_device(np.zeros((2, n_slots), np.int64)))
    d = [cuda.to_device(h) for h in hists]
    no_ph = cuda.to_device(np.zeros((1, 3)))
    out = SearchOut(cuda.to_device(np.zeros((2, f, SPLIT_SIZE))), cuda.to_device(np.zeros((2, f))),
                    cuda.to_device(np.zeros((2, RESULT_SIZE))), cuda.to_device(np.zeros(1, np.int64)))
    rules = SplitRules(WSE, 0.1, 2.0, 0.0)
    node = [ChildSums(float(s.G), float(s.H), float(s.N), 0.0) for s in sums]
    sub, small = (-1, d[0]) if subtract is None else (subtract[0], cuda.to_device(subtract[1]))
    masks = cuda.to_device(np.ones((4, f), np.bool_))
    K.wse_choose[(3, 2), 4](NodeHists(d[0], d[1], no_ph, no_ph, choice.mask, choice.mask), bins, node[0], node[1], rules,
                            cuda.to_device(np.zeros(4)), False, out, choice, k, capacity,
                            K.Completion(sub, d[max(sub, 0)], small, -1 if keep_row is None else keep_row, masks))
    assert out.done.copy_to_host()[0] == 0  # the ticket counter is back to 0 for the next search
    got = out.gains.copy_to_host(), [a.copy_to_host() for a in choice[1:]]
    if keep_row is not None:
        return (*got, masks.copy_to_host())
    return got if subtract is None else (*got, d[sub].copy_to_host())


cuda = None  # numba.cuda (or its simulator), set by the test that compiles the kernel below


def _choose_top_of_node_0(gains, k, offsets, n_bins, choice):
    from customobj.ole.cuda._choice_kernels import choose_top
    counts = cuda.shared.array(2, dtype=np.int64)
    choose_top(gains, 0, k, offsets, n_bins, 100, choice, counts)


@pytest.mark.parametrize("k, capacity, mask", [
    (3, 12, np.ones(N_FEAT, np.bool_)),
    (1, 2000, np.ones(N_FEAT, np.bool_)),
    (5, 9, np.array([1, 1, 0, 1, 1, 1, 1], np.bool_)),  # a feature masked out
    (20, 6, np.ones(N_FEAT, np.bool_)),  # k above the features; 6 slots: features wider than a group
])
def test_the_choice_and_its_groups_are_the_cpus(k, capacity, mask):
    from customobj.ole.cuda._histograms_kernels import feature_groups
    mapper, hists, sums = _data()
    gains, (keep, groups, members, slot_map) = _choose(mapper, hists, sums, mask, k, capacity)
    bins = FeatureBins(mapper.n_bins.astype(np.int64), mapper.offsets)
    for node in range(2):
        want_gains = np.zeros(N_FEAT)
        feature_gains(hists[node], bins, mask, sums[node], SplitRules(WSE, 0.1, 2.0, 0.0), want_gains)
        np.testing.assert_array_equal(gains[node], want_gains)
        feats = select_features(want_gains, mask, k)
        np.testing.assert_array_equal(np.flatnonzero(keep[node]), feats)
        g, m, smap = feature_groups(mapper.offsets, bins.n_bins, feats, capacity=capacity)
        np.testing.assert_array_equal(groups[node, :len(g)], g)
        assert not groups[node, len(g):].any()  # absent groups: no feature, their blocks return
        np.testing.assert_array_equal(members[node, :len(feats)], m)
        np.testing.assert_array_equal(slot_map[node, :len(smap)], smap)
    assert len(np.unique(gains[0][[4, 5]])) == 1  # the tie the choice breaks by index


def test_ties_go_to_the_lower_index_and_nan_gains_last():
    # through the device function alone: gains given, one node
    global cuda
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.cuda import _choice_kernels as K
    cuda = cuda_module()
    run = cuda.jit(_choose_top_of_node_0)
    gains = np.array([[1.0, 3.0, np.nan, 3.0, 2.0, 0.0]])
    for k, want in ((1, [1]), (2, [1, 3]), (3, [1, 3, 4]), (5, [0, 1, 3, 4, 5]), (6, [0, 1, 2, 3, 4, 5])):
        choice = K.FeatureChoice(*(cuda.to_device(a) for a in (
            np.ones(6, np.bool_), np.zeros((1, 6), np.bool_), np.zeros((1, 6, 5), np.int64),
            np.zeros((1, 6, 4), np.int64), np.zeros((1, 18), np.int64))))
        run[1, 4](cuda.to_device(gains), k, cuda.to_device(np.arange(0, 18, 3)), cuda.to_device(np.full(6, 2)), choice)
        assert np.flatnonzero(choice.keep.copy_to_host()[0]).tolist() == want, k
        np.testing.assert_array_equal(np.flatnonzero(choice.keep.copy_to_host()[0]),
                                      select_features(gains[0], np.ones(6, np.bool_), k))


@pytest.mark.parametrize("node", [0, 1])
def test_a_larger_childs_subtraction_runs_in_the_choice_and_before_its_search(node):
    # node ``node`` arrives as its parent's histogram (parent = both nodes' rows) and is completed
    # there by ``-= the other node's``, every feature, masked out or not; the gains and the choice
    # are those of the finished histogram
    mapper, hists, sums = _data()
    hists = [np.round(h * 64) / 64 for h in hists]  # on a grid: (a + b) - b is a, as on the fit's
    other = hists[1 - node]
    parent = [h.copy() for h in hists]
    parent[node] = hists[0] + hists[1]
    mask = np.array([1, 1, 0, 1, 1, 1, 1], np.bool_)  # feature 2's slots are subtracted all the same
    gains, tables, done = _choose(mapper, parent, sums, mask, 3, 12, subtract=(node, other))
    np.testing.assert_array_equal(done, hists[node])
    want_gains, want_tables = _choose(mapper, hists, sums, mask, 3, 12)
    np.testing.assert_array_equal(gains, want_gains)
    for got, want in zip(tables, want_tables):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("row", [-1, 1, 2])
def test_each_nodes_choice_is_kept_by_its_result_row_for_the_batch_search(row):
    # a breadth-first level's ole_fast nodes are searched in one launch (search_batch) after every
    # split's choice has overwritten the two keep slots: each node's choice is copied to its result
    # row of the mask table, the other rows untouched (-1: none copied)
    mapper, hists, sums = _data()
    mask = np.array([1, 1, 0, 1, 1, 1, 1], np.bool_)
    gains, (keep, *_), masks = _choose(mapper, hists, sums, mask, 3, 12, keep_row=row)
    want = np.ones((4, N_FEAT), np.bool_)
    if row >= 0:
        want[row:row + 2] = keep
    np.testing.assert_array_equal(masks, want)
    assert keep.sum(axis=1).tolist() == [3, 3]


def test_a_levels_nodes_are_chosen_for_in_one_launch_into_their_result_rows():
    # wse_choose_level: three nodes of a breadth-first level in one launch, each a pool histogram, its
    # choice into its own result row of 6-row tables (rows 4, 0, 3; the others untouched), node 1's
    # histogram arriving as its parent's and completed there (-= node 0's): the gains, the choice and the
    # groups are the CPU's (splitting.feature_gains, select_features, feature_groups)
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.cuda import _choice_kernels as K
    from customobj.ole.cuda._histograms_kernels import feature_groups
    cuda = cuda_module()
    mapper, hists, sums = _data()
    hists = [np.round(h * 64) / 64 for h in hists]  # on a grid: (a + b) - b is a, as on the fit's
    third = hists[0][::-1].copy()  # a node of its own (its slots reversed: other gains)
    third_sums = sums[0]
    pool = np.stack([hists[0], hists[0] + hists[1], third, np.zeros_like(third)])
    mask = np.array([1, 1, 0, 1, 1, 1, 1], np.bool_)
    rows, k, capacity = (4, 0, 3), 3, 12
    table = np.array([[0, 4, -1, *sums[0][:3]], [1, 0, 0, *sums[1][:3]], [2, 3, -1, *third_sums[:3]]], np.float64)
    n_rows, f, n_slots = 6, N_FEAT, mapper.n_slots
    choice = K.FeatureChoice(cuda.to_device(mask), cuda.to_device(np.ones((n_rows, f), np.bool_)),
                             cuda.to_device(np.full((n_rows, f, 5), -7, np.int64)),
                             cuda.to_device(np.full((n_rows, f, 4), -7, np.int64)),
                             cuda.to_device(np.full((n_rows, n_slots), -7, np.int64)))
    bins = FeatureBins(*(cuda.to_device(np.asarray(a, np.int64)) for a in (mapper.n_bins, mapper.offsets)))
    dpool, done = cuda.to_device(pool), cuda.to_device(np.zeros(1, np.int64))
    rules = SplitRules(WSE, 0.1, 2.0, 0.0)
    K.wse_choose_level[(3, 3), 4](K.LevelChoice(dpool, cuda.to_device(table)), bins, rules,
                                  cuda.to_device(np.zeros((3, f, SPLIT_SIZE))), cuda.to_device(np.zeros((3, f))),
                                  done, choice, k, capacity)
    assert done.copy_to_host()[0] == 0  # the ticket counter is back to 0
    np.testing.assert_array_equal(dpool.copy_to_host()[1], hists[1])  # completed in the launch
    keep, groups, members, slot_map = (a.copy_to_host() for a in choice[1:])
    cpu_bins = FeatureBins(mapper.n_bins.astype(np.int64), mapper.offsets)
    for hist, node_sums, row in zip((hists[0], hists[1], third), (sums[0], sums[1], third_sums), rows):
        want_gains = np.zeros(f)
        feature_gains(hist, cpu_bins, mask, node_sums, rules, want_gains)
        feats = select_features(want_gains, mask, k)
        np.testing.assert_array_equal(np.flatnonzero(keep[row]), feats)
        g, m, smap = feature_groups(mapper.offsets, cpu_bins.n_bins, feats, capacity=capacity)
        np.testing.assert_array_equal(groups[row, :len(g)], g)
        assert not groups[row, len(g):].any()
        np.testing.assert_array_equal(members[row, :len(feats)], m)
        np.testing.assert_array_equal(slot_map[row, :len(smap)], smap)
    assert np.flatnonzero(keep[4]).tolist() != np.flatnonzero(keep[3]).tolist()  # the reversed node differs
    for row in (1, 2, 5):  # no node's: untouched
        assert keep[row].all() and (groups[row] == -7).all() and (slot_map[row] == -7).all()


def test_a_levels_chosen_pair_histograms_are_the_cpus_in_one_launch():
    # chosen_level_pairs (through DeviceFeatureChoice.level_pair_hists): two splits of a level on disjoint
    # rows, their placed pairs in the tree's two buffers (split 1's from pair 10), counts on the card in
    # rows 1 and 3 of the record ring; split 0's two children and split 1's right child alone, each over
    # its own chosen features (its result row of the level's tables: 0, 1, 2): every histogram is the CPU's
    # (pairhist.build_pair_hist: hi, nanp and R) on its features and 0 elsewhere, in one launch (and a zero6)
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.binning import BinMapper
    from customobj.ole.common import PART_N_LEFT, PART_N_RIGHT, PART_RECORD
    from customobj.ole.cuda import _choice_kernels, _histograms_kernels, _split_kernels
    from customobj.ole.cuda._histograms_kernels import feature_groups
    from customobj.ole.cuda.choice import DeviceFeatureChoice
    from customobj.ole.cuda.histograms import DeviceHistograms
    from customobj.ole.cuda.memory import DeviceMemory
    from customobj.ole.cuda.partitions import DevicePairCounts
    from customobj.ole.cuda.pool import DevicePool
    from customobj.ole.cuda.stats import CountedKernels
    from customobj.ole.fixed_point import grid_step_of, round_range
    from customobj.ole.leaf_table import LeafRows
    from customobj.ole.pair_partition import partition_pairs
    from customobj.ole.pairhist import build_pair_hist
    from _ole_cases import make_X
    n, m = 60, 100
    X = make_X(2, n=n, n_features=3, nan_frac=0.15)
    mapper = BinMapper.fit(X, 8)
    fm = mapper.bins_feature_major(X)
    rng = np.random.default_rng(5)
    go_left = rng.uniform(size=n) < 0.4
    # each split's parent's pairs: split 0's on rows 0-29 (pairs 0-79), split 1's on rows 30-59 (pairs 10-79)
    src = [[rng.integers(0, 30, m).astype(np.int32) + lo, rng.integers(0, 30, m).astype(np.int32) + lo,
            rng.uniform(0.0, 2.0, m)] for lo in (0, 30)]
    step = grid_step_of(np.concatenate([src[0][2], src[1][2]]), 0, 2 * m)
    for s in src:
        round_range(s[2], 0, m, step)
    bufs = [tuple(np.zeros_like(a) for a in s) for s in src]
    counts = [partition_pairs(*src[0], 0, 80, go_left, *bufs[0]), partition_pairs(*src[1], 10, 80, go_left, *bufs[1])]
    rho = np.zeros(n)  # each row's coupling sum over its child's pairs (the pair partitions keep it so)
    ranges = []  # (buffer, lo, hi) of each child's pairs: split 0's left and right, split 1's left and right
    for b, (start, (nl, nr)) in enumerate(zip((0, 10), counts)):
        ranges += [(b, start, start + nl), (b, start + nl, start + nl + nr)]
    for b, lo, hi in ranges:
        np.add.at(rho, bufs[b][0][lo:hi], bufs[b][2][lo:hi])
        np.add.at(rho, bufs[b][1][lo:hi], bufs[b][2][lo:hi])
    child_rows = [np.flatnonzero(side[lo:lo + 30]) + lo for lo in (0, 30) for side in (go_left, ~go_left)]
    order = np.concatenate(child_rows).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum([r.size for r in child_rows])])
    mem = DeviceMemory(cuda_module())
    pool = DevicePool(mem, n_rows=n, n_features=3, n_slots=mapper.n_slots, n_hists=6)
    hists = DeviceHistograms(mem, CountedKernels(_histograms_kernels, mem.counter), _split_kernels, pool,
                             mem.upload(np.ascontiguousarray(fm.T)), mapper.offsets, mapper.n_bins)
    choice = DeviceFeatureChoice(mem, CountedKernels(_choice_kernels, mem.counter), pool, n_features=3,
                                 n_slots=mapper.n_slots, rows=4, level_slots=mapper.n_slots)
    feats = [np.array([0, 2]), np.array([1]), np.array([1, 2])]  # result rows 0, 1, 2
    for row, f in enumerate(feats):
        for table, got in zip(choice.level[2:], feature_groups(mapper.offsets, mapper.n_bins, f)):
            host = np.zeros(table.shape[1:], np.int64)
            host[:len(got)] = got
            table[row].copy_to_device(host)
    records = np.zeros((4, PART_RECORD), np.int64)
    for k, (nl, nr) in zip((1, 3), counts):
        records[k, PART_N_LEFT], records[k, PART_N_RIGHT] = nl, nr
    d_records = mem.upload(records)
    sums = ChildSums(0.0, 0.0, 0.0, 0.0)
    leaf = [LeafRows(starts[c], starts[c + 1], (0, 0, 10, 10)[c], (80, 80, 80, 80)[c], sums, pbuf=c // 2,
                     is_left=c % 2 == 0) for c in range(4)]
    splits = [([leaf[0], leaf[1]], DevicePairCounts(mem, d_records[1], 1), 0),
              ([leaf[3]], DevicePairCounts(mem, d_records[3], 3), 2)]
    steps = mem.upload(np.array([step] * 2))
    before = mem.counter.stats().outside
    got = choice.level_pair_hists(hists, splits, tuple(tuple(mem.upload(a) for a in b) for b in bufs), d_records,
                                  mem.upload(order), mem.upload(rho), steps, 2)
    after = mem.counter.stats().outside
    assert after.launches - before.launches == 2 and after.reads == before.reads  # zero6, chosen_level_pairs
    for hist, (b, lo, hi), f in zip([got[0][0], got[0][1], got[1][0]], [ranges[0], ranges[1], ranges[3]], feats):
        want = build_pair_hist(fm.T.copy(), *bufs[b], lo, hi, mapper.offsets, mapper.n_bins, mapper.n_slots)
        slots = np.concatenate([np.arange(mapper.offsets[k], mapper.offsets[k] + mapper.n_bins[k] + 1) for k in f])
        have = hist.copy_to_host()
        np.testing.assert_array_equal(have[slots], want[slots])
        assert not np.delete(have, slots, axis=0).any()  # features not chosen stay 0
        assert have[:, 2].any()  # R, from the rows, is there
    # a split whose record is not the ring's: nothing launched, each split's own launch instead (None)
    before = mem.counter.stats().outside.launches
    assert choice.level_pair_hists(hists, [([leaf[3]], DevicePairCounts(mem, d_records[3]), 2)],
                                   tuple(tuple(mem.upload(a) for a in b) for b in bufs), d_records, mem.upload(order),
                                   mem.upload(rho), steps, 2) is None
    assert mem.counter.stats().outside.launches == before
    with pytest.raises(ValueError, match="1 to 4 splits"):
        choice.level_pair_hists(hists, [], bufs, d_records, order, rho, steps, 2)
