"""customobj.ole.grower: a grown OLE tree checked node by node against brute force (partitioning,
histogram subtraction, leaf values), growth order and depth, scores updated from leaf row ranges,
and ole_fast's feature selection."""
import numpy as np
import pytest

from customobj import RankNet
from customobj.ole import TreeBooster
from customobj.ole.binning import BinMapper
from customobj.ole.grower import select_features

from _oracles import node_rows
from _ole_cases import QUIET, leaf_rows, make_X, ranknet_setup, reference_best_split, tree_dicts


@pytest.mark.parametrize("growth", ["best_first", "breadth_first"])
def test_grown_ole_tree_matches_brute_force_at_every_node(growth):
    """Partitioning, histogram subtraction (rows and pairs) and leaf values checked node by node."""
    X, y, group, obj, s, g, h, pairs = ranknet_setup(7, n_queries=10, q_size=30)
    lam = 0.3
    model = TreeBooster(obj, criterion="ole", num_leaves=8, n_estimators=1, learning_rate=1.0, lambda_l2=lam,
                        min_data_in_leaf=4, growth=growth, **QUIET).fit(X, y, group, init_score=s)
    tree = tree_dicts(model)[0]
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    assert tree["num_leaves"] == 8
    for node, rows in node_rows(tree, X).items():
        ref_gain, ref = reference_best_split(bins, mapper.n_bins, rows, g, h, pairs, "ole", lam=lam, min_data=4)
        assert tree["split_gain"][node] == pytest.approx(ref_gain, rel=1e-8)
        assert tree["split_feature"][node] == ref[0]
        assert tree["threshold_bin"][node] == ref[1]
    leaf = leaf_rows(tree, X)
    pi, pj, pc = pairs
    for k in range(tree["num_leaves"]):
        in_leaf = leaf == k
        C = pc[in_leaf[pi] & in_leaf[pj]].sum()
        expect = -g[in_leaf].sum() / (h[in_leaf].sum() - 2 * C + lam)
        assert tree["leaf_value"][k] == pytest.approx(expect, rel=1e-9)
        assert tree["leaf_count"][k] == in_leaf.sum()


def test_breadth_first_grows_level_by_level():
    X, y, group, obj, s, g, h, pairs = ranknet_setup(8)
    tree = tree_dicts(TreeBooster(obj, num_leaves=4, n_estimators=1, growth="breadth_first", min_data_in_leaf=5,
                                  **QUIET).fit(X, y, group))[0]
    # root split, then its left child, then its right child: a complete depth-2 tree
    assert tree["num_leaves"] == 4
    assert tree["left_child"][0] >= 0 and tree["right_child"][0] >= 0


def test_max_depth_limits_depth():
    X, y, group, obj, *_ = ranknet_setup(9)
    model = TreeBooster(obj, num_leaves=31, max_depth=2, n_estimators=2, min_data_in_leaf=2, **QUIET).fit(X, y, group)
    for t in tree_dicts(model):
        assert t["num_leaves"] <= 4


@pytest.mark.parametrize("criterion", ["wse", "ole"])
def test_score_update_from_leaf_ranges_equals_tree_traversal(criterion):
    from customobj.ole.backend import CPUBackend
    from customobj.ole.context import GrowContext
    from customobj.ole.grower import TreeGrower, add_leaf_values
    from customobj.ole.predictor import add_tree_bins
    X = make_X(9, n=360, n_features=5, nan_frac=0.15)
    y = np.random.default_rng(9).integers(0, 3, 360).astype(float)
    obj = RankNet()
    booster = TreeBooster(obj, criterion=criterion, num_leaves=9, min_data_in_leaf=4, verbose=False)
    mapper = BinMapper.fit(X, 16)
    fm = mapper.bins_feature_major(X)
    prep = obj.prepare(y, [36] * 10, None)
    grad, hess, (pi, pj, pc) = obj.grad_hess_couplings_prepared(np.zeros(360), prep)
    ctx = GrowContext(fm, mapper)
    pairs = ctx.pairs.load((pi, pj, pc), None)
    params = booster._grow_params()
    tree, order, starts, ends = TreeGrower(CPUBackend(ctx, params), grad, hess, np.arange(360, dtype=np.int64), pairs,
                                           np.ones(5, np.bool_), params).grow()
    assert tree["num_leaves"] == 9
    want, got = np.full(360, 0.25), np.full(360, 0.25)
    add_tree_bins(fm.T, mapper.n_bins, tree, want)
    add_leaf_values(order, starts, ends, np.asarray(tree["leaf_value"]), got)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.sort(order), np.arange(360))


def test_select_features_takes_the_largest_gains_in_the_mask():
    gains = np.array([0.5, 2.0, 2.0, 0.0, 3.0, 1.0])
    mask = np.array([True, True, True, True, False, True])
    np.testing.assert_array_equal(select_features(gains, mask, 2), [1, 2])  # 4 is masked out
    np.testing.assert_array_equal(select_features(gains, mask, 3), [1, 2, 5])
    np.testing.assert_array_equal(select_features(gains, mask, 10), [0, 1, 2, 3, 5])


@pytest.mark.parametrize("criterion", ["ole", "ole_fast"])
def test_a_childs_coupling_from_its_split_is_the_sum_over_its_own_pairs(criterion):
    """The children's C come from the split's record (the pair histograms' sums, exact on the grid),
    nothing summed after the split: each leaf's C is the sum of the couplings of the pairs inside it
    (ole_fast: kept pairs, then the dropped ones added at the end), bit for bit."""
    from customobj.ole.backend import CPUBackend
    from customobj.ole.context import GrowContext
    from customobj.ole.grower import TreeGrower
    X = make_X(5, n=96, n_features=4, nan_frac=0.1)
    y = np.random.default_rng(5).integers(0, 3, 96).astype(float)
    obj = RankNet()
    params = TreeBooster(obj, criterion=criterion, num_leaves=7, min_data_in_leaf=3, ole_fast_epsilon=0.0,
                         verbose=False)._grow_params()
    mapper = BinMapper.fit(X, 8)
    ctx = GrowContext(mapper.bins_feature_major(X), mapper)
    grad, hess, (pi, pj, pc) = obj.grad_hess_couplings_prepared(np.zeros(96), obj.prepare(y, [12] * 8, None))
    rounded = []

    class Keeps(CPUBackend):  # the tree's couplings on their grid, before the grower partitions them
        def pair_buffers(self, pairs):
            bufs = super().pair_buffers(pairs)
            rounded.append(tuple(a.copy() for a in bufs[0]))
            return bufs

    grower = TreeGrower(Keeps(ctx, params), grad, hess, np.arange(96, dtype=np.int64),
                        ctx.pairs.load((pi, pj, pc), None), np.ones(4, np.bool_), params)
    tree, order, starts, ends = grower.grow()
    assert tree["num_leaves"] == 7
    ri, rj, rc = rounded[0]
    for leaf, s, e in zip(grower.leaves, starts, ends):
        inside = np.zeros(96, np.bool_)
        inside[order[s:e]] = True
        assert leaf.C == rc[inside[ri] & inside[rj]].sum() and leaf.N == e - s


@pytest.mark.parametrize("growth", ["best_first", "breadth_first"])
def test_the_backend_gets_one_leaf_best_first_and_a_level_breadth_first(growth):
    # the batch seam: best-first expands the open leaf of largest gain, breadth-first the open leaves
    # of one level at once (as many as num_leaves allows); either way the tree is the one-by-one tree
    from customobj.ole.backend import CPUBackend
    from customobj.ole.context import GrowContext
    from customobj.ole.grower import TreeGrower
    X = make_X(6, n=120, n_features=4, nan_frac=0.1)
    y = np.random.default_rng(6).integers(0, 3, 120).astype(float)
    obj = RankNet()
    params = TreeBooster(obj, criterion="ole", num_leaves=6, min_data_in_leaf=3, growth=growth,
                         verbose=False)._grow_params()
    mapper = BinMapper.fit(X, 8)
    ctx = GrowContext(mapper.bins_feature_major(X), mapper)
    grad, hess, (pi, pj, pc) = obj.grad_hess_couplings_prepared(np.zeros(120), obj.prepare(y, [12] * 10, None))
    batches = []

    class Records(CPUBackend):
        def expand(self, batch):
            batches.append([e.leaf for e in batch])
            return super().expand(batch)

    grower = TreeGrower(Records(ctx, params), grad, hess, np.arange(120, dtype=np.int64),
                        ctx.pairs.load((pi, pj, pc), None), np.ones(4, np.bool_), params)
    tree = grower.grow().tree
    assert tree["num_leaves"] == 6 and sum(len(b) for b in batches) == 5
    if growth == "best_first":
        assert all(len(b) == 1 for b in batches)
    else:  # the root, its two children, then as many of the next level as fit (2 more leaves)
        assert batches == [[0], [0, 1], batches[2]] and len(batches[2]) == 2
        assert all(leaf in (0, 1, 2, 3) for leaf in batches[2])


def _grow_with_lookahead(lookahead, criterion, seed=11, n=240, num_leaves=9, **params):
    """One tree grown best-first by a CPUBackend expanding ``lookahead`` leaves ahead (1: one at a
    time); the grown tree, each leaf's rows as a set, its dropped couplings' C and the backend's batches."""
    from customobj.ole.backend import CPUBackend
    from customobj.ole.context import GrowContext
    from customobj.ole.grower import TreeGrower
    from customobj.ole.training import query_of_rows
    X = make_X(seed, n=n, n_features=5, nan_frac=0.1)
    y = np.random.default_rng(seed).integers(0, 4, n).astype(float)
    obj = RankNet()
    p = TreeBooster(obj, criterion=criterion, num_leaves=num_leaves, min_data_in_leaf=3, verbose=False,
                    **params)._grow_params()
    mapper = BinMapper.fit(X, 12)
    ctx = GrowContext(mapper.bins_feature_major(X), mapper)
    prep = obj.prepare(y, [n // 12] * 12, None)
    if p.criterion.fast:
        ctx.queries = (query_of_rows(prep.ptr), prep.ptr.shape[0] - 1)
    grad, hess, (pi, pj, pc) = obj.grad_hess_couplings_prepared(np.zeros(n), prep)
    batches, spans = [], []

    class Ahead(CPUBackend):
        def expand(self, batch):
            batches.append([e.leaf for e in batch])
            return super().expand(batch)

        def end_tree(self, s=None):
            spans.append(s)
            return super().end_tree(s)

    backend = Ahead(ctx, p)
    backend.lookahead = lookahead
    grower = TreeGrower(backend, grad, hess, np.arange(n, dtype=np.int64), ctx.pairs.load((pi, pj, pc), None),
                        np.ones(5, np.bool_), p)
    tree, order, starts, ends = grower.grow()
    rows = [frozenset(order[s:e].tolist()) for s, e in zip(starts, ends)]
    return tree, rows, [leaf.C for leaf in grower.leaves], batches, spans[0]


@pytest.mark.parametrize("criterion, params", [("wse", {}), ("ole", {}), ("ole_fast", {"ole_fast_epsilon": 0.05}),
                                               ("ole", {"leaf_solver": "joint"}), ("ole", {"max_depth": 3})])
@pytest.mark.parametrize("lookahead", [2, 4, 64])
def test_best_first_lookahead_grows_the_one_at_a_time_tree_bit_for_bit(criterion, params, lookahead):
    """Leaves expanded ahead of their turn (the GPU's one read a batch) change nothing in the tree:
    the same nodes and leaves, numbered the same, each leaf the same rows and coupling (ole_fast: its
    dropped pairs' added from its rows, also for a leaf whose expansion the tree never used)."""
    want, want_rows, want_c, one_each, none = _grow_with_lookahead(1, criterion, **params)
    got, got_rows, got_c, batches, spans = _grow_with_lookahead(lookahead, criterion, **params)
    assert all(len(b) == 1 for b in one_each) and none is None
    np.testing.assert_array_equal(got.nodes, want.nodes)
    np.testing.assert_array_equal(got.leaves, want.leaves)
    assert got_rows == want_rows and got_c == want_c
    assert len(batches) < len(one_each) and max(len(b) for b in batches) <= lookahead  # fewer batches, reads
    expanded = sum(len(b) for b in batches)
    assert expanded >= len(one_each)  # those the tree never split are given back whole (spans)
    if expanded > len(one_each):
        assert spans is not None and any(first != last for first, last in spans)


def test_a_lookahead_batch_is_the_tree_order_replayed_over_what_is_expanded():
    """The first batch after the root holds the root's two children (both known, the larger gain
    first); a batch never names a leaf twice, nor one expanded before."""
    _, _, _, batches, _ = _grow_with_lookahead(4, "ole", num_leaves=15, n=480)
    assert batches[0] == [0]
    assert sorted(batches[1]) == [0, 1]
    assert all(len(set(b)) == len(b) for b in batches) and max(len(b) for b in batches) == 4


def test_lookahead_gives_back_whole_the_leaves_the_tree_never_split():
    """With room for 9 leaves and 64 ahead, expansions outrun the tree: the leaves it never split are
    handed to end_tree as their subtrees' first and last leaves, and hold the same rows."""
    _, want_rows, _, one_each, _ = _grow_with_lookahead(1, "ole", num_leaves=9, n=480, seed=5)
    _, got_rows, _, batches, spans = _grow_with_lookahead(64, "ole", num_leaves=9, n=480, seed=5)
    assert sum(len(b) for b in batches) > len(one_each) == 8
    assert any(first != last for first, last in spans) and got_rows == want_rows


def test_leaves_held_sizes_the_backends_table_for_what_lookahead_may_leave_unused():
    from customobj.ole.grower import leaves_held
    assert leaves_held(31, 1) == 31 and leaves_held(31, 4) == 61 and leaves_held(0, 4) == 1
