"""customobj.ole.cuda.pruning: ``ole_fast``'s pruning on the card keeps the CPU's pairs in the CPU's
order (``pair_pruning.prune_for_tree``) with the CPU's dropped set behind them and their exact
coupling, its dropped couplings per leaf are the CPU's (``dropped_leaf_couplings``), a second tree
reuses every buffer, bad inputs are refused; and ``TreeBooster(device="cuda", criterion="ole_fast")``
grows the CPU's trees with its pairs and row order left on the card (device couplings, host
couplings, bagging). Tiny data under the simulator."""
import numpy as np
import pytest

from customobj import LambdaRank, RankNet
from customobj.ole import TreeBooster
from customobj.ole.common import RESULT_SIZE
from customobj.ole.fixed_point import grid_step_of, round_range
from customobj.ole.pair_pruning import dropped_leaf_couplings, prune_for_tree, query_of_rows

from _cuda_cases import needs_gpu
from _ole_cases import QUIET, make_rank_data, random_pairs, tree_dicts

pytestmark = needs_gpu


def _pruning(eps, n_queries=5, seed=21):
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.cuda.memory import DeviceMemory
    from customobj.ole.cuda.pruning import DevicePruning
    pi, pj, pc, ptr = random_pairs(seed, n_queries=n_queries, max_rows=8)
    round_range(pc, 0, pc.size, grid_step_of(pc, 0, pc.size))  # on the tree's grid, as the backend prunes
    mem = DeviceMemory(cuda_module())
    qor, n = query_of_rows(ptr), int(ptr[-1])
    return mem, DevicePruning(mem, qor, ptr.size - 1, epsilon=eps, n_rows=n, num_leaves=3), (pi, pj, pc), qor, n


@pytest.mark.parametrize("eps", [0.0, 0.4])
def test_two_trees_prune_and_correct_their_leaves_as_the_cpu_with_no_new_buffer(eps):
    mem, prune, pairs, qor, n = _pruning(eps)
    m = pairs[2].size
    host = (tuple(a.copy() for a in pairs), tuple(np.empty(m, a.dtype) for a in pairs))
    (kept_c, _), dropped_c = prune_for_tree(host, qor, qor.max() + 1, eps)
    rng = np.random.default_rng(1)
    bins, n_bins = mem.upload(np.zeros((1, n), np.uint8)), mem.upload(np.array([2]))
    for tree in range(2):
        bufs = (tuple(mem.upload(a) for a in pairs), tuple(mem.upload(np.full(m, -1, a.dtype)) for a in pairs))
        order = rng.permutation(n)[: n - 2 * tree]  # the second tree's bag leaves two rows out
        order_d = mem.upload(order.astype(np.int64))
        c = mem.upload(np.full(2, 7.0))  # the root's C: set, not added to
        before = mem.counter.stats().outside.allocations
        reads = mem.counter.stats().outside.reads
        (kept, other), counts, dropped = prune.prune(bufs, c)
        assert mem.counter.stats().outside.reads == reads  # nothing read: the count stays on the card
        k = kept_c[0].size
        assert counts.counts == (k, 0) and other[2].shape[0] == m
        assert mem.read(c)[0] == kept_c[2].sum()  # on the grid: exact in any order
        for a, b in zip(kept, kept_c):
            np.testing.assert_array_equal(mem.read(a)[:k], b)
        gone = set(zip(*(mem.read(a)[k:].tolist() for a in dropped.pairs)))
        want = {p for p in zip(*(a.tolist() for a in pairs)) if p not in set(zip(*(a.tolist() for a in kept_c)))}
        assert gone == want and len(gone) == m - k
        cuts = np.sort(rng.choice(np.arange(1, order.size), 2, replace=False))
        ranges = list(zip(np.r_[0, cuts].tolist(), np.r_[cuts, order.size].tolist()))
        got = prune.leaf_couplings(order_d, ranges, dropped, bins, n_bins)
        np.testing.assert_array_equal(got, dropped_leaf_couplings(order, ranges, dropped_c, n))
        if tree:  # the tables, counts and leaf buffers of the first tree serve the second
            assert mem.counter.stats().outside.allocations == before
    assert eps == 0.0 or got.any()


@pytest.mark.parametrize("nan_left", [0, 1])
def test_a_plan_sums_each_leaf_and_each_side_of_its_split_as_the_cpu_after_it(nan_left):
    # three leaves: one with a split given on the host, one whose split is a search's result on the
    # card, one without; each side's sum is the CPU's for the leaf the split would make
    from customobj.ole.common import SPLIT_BIN, SPLIT_FEATURE, SPLIT_GAIN, SPLIT_NAN_LEFT
    mem, prune, pairs, qor, n = _pruning(0.6, n_queries=6, seed=4)
    m = pairs[2].size
    bufs = (tuple(mem.upload(a) for a in pairs), tuple(mem.upload(np.zeros(m, a.dtype)) for a in pairs))
    (kept, _), counts, dropped = prune.prune(bufs, mem.upload(np.zeros(2)))
    host = (tuple(a.copy() for a in pairs), tuple(np.empty(m, a.dtype) for a in pairs))
    _, dropped_c = prune_for_tree(host, qor, qor.max() + 1, 0.6)
    rng = np.random.default_rng(2)
    fm = rng.integers(0, 4, size=(2, n)).astype(np.uint8)  # feature 0: 3 bins and NaN (3); feature 1: 4
    n_bins = np.array([3, 4])
    order = rng.permutation(n)
    ranges = [(0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n)]
    res = np.zeros((2, RESULT_SIZE))
    res[1, [SPLIT_GAIN, SPLIT_FEATURE, SPLIT_BIN, SPLIT_NAN_LEFT]] = (0.5, 1, 1, 0.0)
    table = np.array([[0, 1, nan_left, -1], [-1, -1, -1, 1], [-1, -1, -1, -1]], np.int64)
    out = mem.upload(np.full(9, 5.0))
    prune.plan(mem.upload(order.astype(np.int64)), ranges, table, mem.upload(res), mem.upload(fm), mem.upload(n_bins),
               dropped, out)
    got = mem.read(out).reshape(3, 3)
    want = dropped_leaf_couplings(order, ranges, dropped_c, n)
    np.testing.assert_array_equal(got[:, 0], want)
    for leaf, (f, b, nl) in ((0, (0, 1, nan_left)), (1, (1, 1, 0))):
        s, e = ranges[leaf]
        rows = order[s:e]
        v = fm[f, rows].astype(np.int64)
        left = np.where(v == n_bins[f], bool(nl), v <= b)
        sides = [(s, s + left.sum()), (s + left.sum(), e)]
        part = np.r_[rows[left], rows[~left]]
        child = dropped_leaf_couplings(np.r_[order[:s], part, order[e:]], sides, dropped_c, n)
        np.testing.assert_array_equal(got[leaf, 1:], child)
    assert not got[2, 1:].any() and got[:, 0].any()
    prune.planned()  # the tree ends without a read


def test_bad_epsilon_and_queries_are_refused():
    mem, _, _, qor, n = _pruning(0.1)
    from customobj.ole.cuda.pruning import DevicePruning
    with pytest.raises(ValueError, match="epsilon"):
        DevicePruning(mem, qor, qor.max() + 1, epsilon=1.0, n_rows=n, num_leaves=2)
    with pytest.raises(ValueError, match="query_of_row"):
        DevicePruning(mem, qor, qor.max(), epsilon=0.1, n_rows=n, num_leaves=2)  # a query index too large
    with pytest.raises(ValueError, match="query_of_row"):
        DevicePruning(mem, qor[:-1], qor.max() + 1, epsilon=0.1, n_rows=n, num_leaves=2)
    prune = DevicePruning(mem, qor, qor.max() + 1, epsilon=0.1, n_rows=n, num_leaves=2)
    pairs = tuple(mem.upload(np.zeros(4, t)) for t in (np.int32, np.int32, np.float64))
    with pytest.raises(ValueError, match="too short"):
        prune.prune((pairs, tuple(a[:3] for a in pairs)), mem.upload(np.zeros(2)))
    order = mem.upload(np.arange(n, dtype=np.int64))
    for bad in ([(0, n + 1)], [(3, 2)], [(-1, 4)]):
        with pytest.raises(ValueError, match="leaf ranges"):
            prune.leaf_couplings(order, bad, None, None, None)


@pytest.mark.parametrize("objective, kw", [
    (LambdaRank(), dict(bagging_fraction=0.7, random_state=3)),  # couplings made on the card; a bag
    (2.0 * RankNet(), {}),  # a composite: its couplings made on the card too (fused drivers)
    (LambdaRank(), dict(max_depth=1)),  # trees that end before a search that could be their last
])
def test_ole_fast_trees_are_the_cpus_pairs_and_order_left_on_the_card(objective, kw, monkeypatch):
    from customobj.ole.cuda.memory import DeviceMemory
    sizes, read = [], DeviceMemory.read
    monkeypatch.setattr(DeviceMemory, "read", lambda self, dev: sizes.append(dev.size) or read(self, dev))
    from customobj.ole.cuda.search import DeviceSearch
    tails, search_read = [], DeviceSearch.read  # per read of results: the planned values it brings
    monkeypatch.setattr(DeviceSearch, "read", lambda self, rows, tail_n=0: tails.append(tail_n) or search_read(
        self, rows, tail_n))
    X, y, group = make_rank_data(4, n_queries=3)  # 75 rows
    opts = dict(criterion="ole_fast", num_leaves=4, n_estimators=2, min_data_in_leaf=4, max_bin=8, ole_fast_features=2,
                ole_fast_epsilon=0.3, objective=objective, **kw, **QUIET)
    cpu, gpu = TreeBooster(**opts).fit(X, y, group), TreeBooster(device="cuda", **opts).fit(X, y, group)
    assert tree_dicts(gpu) == tree_dicts(cpu)
    assert sum(len(t.nodes) for t in cpu.trees_) >= (2 if kw.get("max_depth") else 4)
    if "max_depth" in kw:  # the root's split: children never searched, their couplings read at the end
        assert sizes == [RESULT_SIZE, 3 * 2] * 2 and gpu.device_stats_.per_split()["reads"] == 2.0, sizes
    elif gpu.device_gradients_ == "device":  # no row order, no pairs come back: two splits' records do
        # (and with the tree's last search, of one child or two, its 3 leaves' dropped couplings: 3 a
        # leaf, in whole records; each read brings only the rows of the searches it reads). Where the
        # tree's last split is of a leaf searched before that plan (a leaf the plan did not hold), its 4
        # final leaves' couplings are summed at the tree's end instead: one read of 4 x 3 values.
        tail, at_end = -(-3 * 3 // RESULT_SIZE) * RESULT_SIZE, 4 * 3
        assert set(sizes) <= {RESULT_SIZE, 2 * RESULT_SIZE, RESULT_SIZE + tail, 2 * RESULT_SIZE + tail, at_end}, sizes
        assert set(tails) <= {0, 3 * 3}, tails
        assert sum(t > 0 for t in tails) + sizes.count(at_end) == 2, (tails, sizes)  # one a tree, one way or the other
        assert gpu.device_stats_.per_split()["reads"] <= 1.0
    assert gpu.device_stats_.total(first=1).allocations == 0


def test_the_memory_refusal_counts_what_the_pruning_holds(monkeypatch):
    from customobj.ole.cuda import backend
    from customobj.ole.cuda.pruning import DevicePruning
    mem, _, _, qor, n = _pruning(0.1)
    held = mem.current
    kept = DevicePruning(mem, qor, qor.max() + 2, epsilon=0.1, n_rows=n, num_leaves=5)  # noqa: F841 (held)
    assert mem.current - held == DevicePruning.memory_needed(n_rows=n, n_queries=qor.max() + 2, num_leaves=5)
    seen = []
    monkeypatch.setattr(backend, "check_device_memory", lambda need, free=None: seen.append(dict(need)))
    X, y, group = make_rank_data(4, n_queries=2)
    for criterion in ("ole_fast", "ole"):
        TreeBooster(device="cuda", criterion=criterion, num_leaves=3, n_estimators=1, max_bin=8,
                    **QUIET).fit(X, y, group)
        first, seen[:] = seen[0], []
        assert first.get("pair pruning", 0) == (criterion == "ole_fast") * DevicePruning.memory_needed(
            n_rows=X.shape[0], n_queries=len(group), num_leaves=3)
