"""customobj.ole.cuda_pruning: ``ole_fast``'s pruning on the card keeps the CPU's pairs in the CPU's
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
    from customobj.ole.cuda_memory import DeviceMemory
    from customobj.ole.cuda_pruning import DevicePruning
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
    for tree in range(2):
        bufs = (tuple(mem.upload(a) for a in pairs), tuple(mem.upload(np.full(m, -1, a.dtype)) for a in pairs))
        order = rng.permutation(n)[: n - 2 * tree]  # the second tree's bag leaves two rows out
        order_d = mem.upload(order.astype(np.int64))
        before = mem.counter.stats().outside.allocations
        (kept, other), c_kept, dropped = prune.prune(bufs)
        k = kept_c[0].size
        assert other[2].shape[0] == k and c_kept == kept_c[2].sum()  # on the grid: exact in any order
        for a, b in zip(kept, kept_c):
            np.testing.assert_array_equal(mem.read(a), b)
        gone = set(zip(*(mem.read(a).tolist() for a in dropped.pairs)))
        want = {p for p in zip(*(a.tolist() for a in pairs)) if p not in set(zip(*(a.tolist() for a in kept_c)))}
        assert gone == want and len(gone) == m - k
        cuts = np.sort(rng.choice(np.arange(1, order.size), 2, replace=False))
        ranges = list(zip(np.r_[0, cuts].tolist(), np.r_[cuts, order.size].tolist()))
        got = prune.leaf_couplings(order_d, ranges, dropped)
        np.testing.assert_array_equal(got, dropped_leaf_couplings(order, ranges, dropped_c, n))
        if tree:  # the tables, counts and leaf buffers of the first tree serve the second
            assert mem.counter.stats().outside.allocations == before
    assert eps == 0.0 or got.any()


def test_bad_epsilon_and_queries_are_refused():
    mem, _, _, qor, n = _pruning(0.1)
    from customobj.ole.cuda_pruning import DevicePruning
    with pytest.raises(ValueError, match="epsilon"):
        DevicePruning(mem, qor, qor.max() + 1, epsilon=1.0, n_rows=n, num_leaves=2)
    with pytest.raises(ValueError, match="query_of_row"):
        DevicePruning(mem, qor, qor.max(), epsilon=0.1, n_rows=n, num_leaves=2)  # a query index too large
    with pytest.raises(ValueError, match="query_of_row"):
        DevicePruning(mem, qor[:-1], qor.max() + 1, epsilon=0.1, n_rows=n, num_leaves=2)
    prune = DevicePruning(mem, qor, qor.max() + 1, epsilon=0.1, n_rows=n, num_leaves=2)
    pairs = tuple(mem.upload(np.zeros(4, t)) for t in (np.int32, np.int32, np.float64))
    with pytest.raises(ValueError, match="too short"):
        prune.prune((pairs, tuple(a[:3] for a in pairs)))
    order = mem.upload(np.arange(n, dtype=np.int64))
    for bad in ([(0, n + 1)], [(3, 2)], [(-1, 4)]):
        with pytest.raises(ValueError, match="leaf ranges"):
            prune.leaf_couplings(order, bad, None)


@pytest.mark.parametrize("objective, kw", [
    (LambdaRank(), dict(bagging_fraction=0.7, random_state=3)),  # couplings made on the card; a bag
    (2.0 * RankNet(), {}),  # couplings from the host, pruned on the card
])
def test_ole_fast_trees_are_the_cpus_pairs_and_order_left_on_the_card(objective, kw, monkeypatch):
    from customobj.ole.cuda_memory import DeviceMemory
    sizes, read = [], DeviceMemory.read
    monkeypatch.setattr(DeviceMemory, "read", lambda self, dev: sizes.append(dev.size) or read(self, dev))
    X, y, group = make_rank_data(4, n_queries=3)  # 75 rows
    opts = dict(criterion="ole_fast", num_leaves=4, n_estimators=2, min_data_in_leaf=4, max_bin=8, ole_fast_features=2,
                ole_fast_epsilon=0.3, objective=objective, **kw, **QUIET)
    cpu, gpu = TreeBooster(**opts).fit(X, y, group), TreeBooster(device="cuda", **opts).fit(X, y, group)
    assert tree_dicts(gpu) == tree_dicts(cpu) and sum(len(t.nodes) for t in cpu.trees_) >= 4
    if gpu.device_gradients_ == "device":  # no row order, no pairs come back: two splits' records do
        assert 0 < max(sizes) <= 2 * RESULT_SIZE < 0.7 * X.shape[0], sizes
    assert gpu.device_stats_.total(first=1).allocations == 0


def test_the_memory_refusal_counts_what_the_pruning_holds(monkeypatch):
    from customobj.ole import cuda_backend
    from customobj.ole.cuda_pruning import DevicePruning
    mem, _, _, qor, n = _pruning(0.1)
    held = mem.current
    kept = DevicePruning(mem, qor, qor.max() + 2, epsilon=0.1, n_rows=n, num_leaves=5)  # noqa: F841 (held)
    assert mem.current - held == DevicePruning.memory_needed(n_rows=n, n_queries=qor.max() + 2, num_leaves=5)
    seen = []
    monkeypatch.setattr(cuda_backend, "check_device_memory", lambda need, free=None: seen.append(dict(need)))
    X, y, group = make_rank_data(4, n_queries=2)
    for criterion in ("ole_fast", "ole"):
        TreeBooster(device="cuda", criterion=criterion, num_leaves=3, n_estimators=1, max_bin=8,
                    **QUIET).fit(X, y, group)
        first, seen[:] = seen[0], []
        assert first.get("pair pruning", 0) == (criterion == "ole_fast") * DevicePruning.memory_needed(
            n_rows=X.shape[0], n_queries=len(group), num_leaves=3)
