"""customobj/ole/cuda/tree.py: the tree a GPU backend grows. Under ``ole_fast`` the leaves' dropped
couplings are planned with the search that may be the tree's last (the grower plans nothing), and
each final leaf finds its part of that plan; a split whose children are never searched partitions
no rows when nothing reads the order; a level's feature choice and pair histograms fall back to each
split's where a check fails. Tiny data under numba's CUDA simulator; whole fits against the CPU:
tests/test_ole_cuda_backend.py."""
import numpy as np
import pytest

from customobj import RankNet
from customobj.ole import TreeBooster
from customobj.ole.backend import CPUBackend
from customobj.ole.binning import BinMapper
from customobj.ole.context import GrowContext

from _cuda_cases import needs_gpu
from _ole_cases import backend_case, make_X

pytestmark = needs_gpu


@pytest.mark.parametrize("lookahead", [1, 4])
@pytest.mark.parametrize("num_leaves, max_depth", [(7, 0), (2, 0), (7, 2), (40, 0)])
def test_the_leaves_dropped_couplings_are_planned_with_the_trees_last_search(num_leaves, max_depth, lookahead):
    # when at most one split follows a search, the device tree sums the leaves' dropped couplings
    # with it; at the end each leaf's source in that plan is itself or a side of the one split made
    # after it. A tree that stops before (max_depth, few rows) has no plan and sums them at its end.
    # Best-first lookahead (the backend's, 4): a plan at num_leaves - 1 and num_leaves leaves of the
    # table, and a tree whose leaves are not the last plan's (a leaf expanded ahead and never split)
    # sums them from its rows at its end; the leaf values (from them) are the CPU's either way.
    from customobj.ole.cuda.backend import CUDABackend
    from customobj.ole.grower import TreeGrower
    ctx, params, grad, hess, pairs = backend_case(6, 8, 4, 0.1, criterion="ole_fast", num_leaves=num_leaves,
                                                  max_depth=max_depth, min_data_in_leaf=3,
                                                  ole_fast_epsilon=0.3)
    gpu = CUDABackend(ctx(), params)
    gpu.lookahead = lookahead  # the grower and the device tree read it (the pool holds 4's leaves)
    seen = {"plans": [], "sources": None}
    plan, couplings = gpu.inputs.plan_dropped_sums, gpu.inputs.dropped_couplings

    def planned(leaves, dropped):
        seen["plans"].append(list(leaves))
        return plan(leaves, dropped)

    def summed(ranges, dropped, sources=None):
        seen["sources"] = sources
        return couplings(ranges, dropped, sources)

    gpu.inputs.plan_dropped_sums, gpu.inputs.dropped_couplings = planned, summed
    grown = [TreeGrower(b, grad, hess, np.arange(96, dtype=np.int64), b.ctx.pairs.load(tuple(a.copy() for a in pairs),
                                                                                       None),
                        np.ones(4, np.bool_), params).grow() for b in (gpu, CPUBackend(ctx(), params))]
    (tree, _, starts, ends), (want, _, cpu_starts, cpu_ends) = grown
    assert tree.nodes.tobytes() == want.nodes.tobytes() and tree.leaves.tobytes() == want.leaves.tobytes()
    np.testing.assert_array_equal(starts, cpu_starts)
    n_leaves = tree["num_leaves"]
    if not seen["plans"]:
        assert seen["sources"] is None and (max_depth or num_leaves == 40)
        return
    # the table may reach num_leaves - 1 and num_leaves leaves ahead, a plan each (DeviceTree._plans)
    assert len(seen["plans"]) == 1 or (lookahead > 1 and len(seen["plans"]) == 2)
    assert all(len(p) <= num_leaves for p in seen["plans"])
    leaves, sources = seen["plans"][-1], seen["sources"]  # the last one's sums are the ones read
    assert len(leaves) >= num_leaves - 1 or n_leaves < num_leaves
    if sources is None:  # the tree stopped early, or (ahead) its leaves are not the plan's
        assert n_leaves < num_leaves or lookahead > 1
        return
    assert len(sources) == n_leaves
    for (s, e), (p, part) in zip(zip(starts, ends), sources):
        ps, pe, split = leaves[p]
        if part == 0:
            assert (s, e) == (ps, pe)
        else:  # a side of the planned leaf, split by the split the plan named
            assert (s == ps) if part == 1 else (e == pe)
            assert split is not None


def test_a_split_whose_children_are_never_searched_partitions_nothing_when_the_order_stays():
    # scores on the card, no joint solve, no pruning: the last split's rows are never read
    from customobj.ole.cuda.backend import CUDABackend
    from customobj.ole.grower import TreeGrower
    X = make_X(2, n=60, n_features=3, nan_frac=0.0)
    grad = np.random.default_rng(2).normal(size=60)
    hess = np.ones(60)
    params = TreeBooster(RankNet(), criterion="wse", num_leaves=3, min_data_in_leaf=2, verbose=False)._grow_params()
    mapper = BinMapper.fit(X, 8)
    gpu = CUDABackend(GrowContext(mapper.bins_feature_major(X), mapper), params)
    gpu._scores_on_device = True  # as DeviceScores leaves it
    rows = []
    place = gpu.partitions.rows
    gpu.partitions.rows = lambda *a: rows.append(a[2:4]) or place(*a)
    grown = TreeGrower(gpu, grad, hess, np.arange(60, dtype=np.int64), None, np.ones(3, np.bool_), params).grow()
    assert grown.tree["num_leaves"] == 3 and grown.order is None
    assert len(rows) == 1 and rows[0] == (0, 60)  # the root's only: the second split's children are leaves


def test_a_breadth_first_batch_plans_the_dropped_couplings_at_its_searches_result_rows():
    # a level's splits are searched before one read: the plan made at the search that may be the
    # tree's last points at the rows of the batch's earlier searches too (not read yet), and the trees,
    # leaf values (the dropped couplings) included, are the CPU's
    from customobj.ole.cuda.backend import CUDABackend
    from customobj.ole.grower import TreeGrower
    ctx, params, grad, hess, pairs = backend_case(6, 8, 4, 0.1, criterion="ole_fast", num_leaves=7,
                                                  growth="breadth_first", min_data_in_leaf=3, ole_fast_epsilon=0.3)
    gpu = CUDABackend(ctx(), params)
    rows = []
    plan = gpu.inputs.plan_dropped_sums
    gpu.inputs.plan_dropped_sums = lambda leaves, dropped: rows.extend(
        s for _, _, s in leaves if isinstance(s, int)) or plan(leaves, dropped)
    (tree, _, starts, _), (want, _, cpu_starts, _) = [
        TreeGrower(b, grad, hess, np.arange(96, dtype=np.int64), b.ctx.pairs.load(tuple(a.copy() for a in pairs), None),
                   np.ones(4, np.bool_), params).grow() for b in (gpu, CPUBackend(ctx(), params))]
    assert tree.nodes.tobytes() == want.nodes.tobytes() and tree.leaves.tobytes() == want.leaves.tobytes()
    np.testing.assert_array_equal(starts, cpu_starts)
    # the plan names every child searched in its batch so far by its result row: the earlier splits' too
    assert tree["num_leaves"] == 7 and len(rows) > 2 and sorted(rows) == list(range(len(rows)))


@pytest.mark.parametrize("fails", ["pool", "defer", "pairs"])
def test_a_levels_choice_falls_back_to_each_splits_where_a_check_fails(fails, monkeypatch):
    # ole_fast's level of several splits chooses every searched child's features in one launch
    # (DeviceTree._expand_level); where a histogram is not the pool's, each split chooses its own
    # (wse_choose, its held subtraction applied first); where the level's pair histograms cannot be
    # one launch, each split's are built on its rows of the level's tables (chosen_child_pairs); and
    # where a split's search cannot join the level's, it is launched alone with its choice copied to the
    # pool's mask slots: the trees are the CPU's either way
    from customobj.ole.cuda.backend import CUDABackend
    from customobj.ole.cuda.tree import DeviceTree
    from customobj.ole.grower import TreeGrower
    ctx, params, grad, hess, pairs = backend_case(6, 8, 4, 0.1, criterion="ole_fast", num_leaves=7,
                                                  growth="breadth_first", min_data_in_leaf=3, ole_fast_epsilon=0.3)
    gpu = CUDABackend(ctx(), params)
    calls = []
    for name in ("choose", "choose_level"):
        run = getattr(gpu.choice, name)
        monkeypatch.setattr(gpu.choice, name, lambda *a, _run=run, _name=name, **k: calls.append(_name) or _run(*a, **k))
    if fails == "pool":
        monkeypatch.setattr(gpu.pool, "index_of", lambda array: -1)
    elif fails == "pairs":
        monkeypatch.setattr(gpu.choice, "level_pair_hists", lambda *a, **k: calls.append("pairs") and None)
    else:
        monkeypatch.setattr(DeviceTree, "_defer", lambda self, searches, counts, row: False)
    (tree, _, starts, _), (want, _, cpu_starts, _) = [
        TreeGrower(b, grad, hess, np.arange(96, dtype=np.int64), b.ctx.pairs.load(tuple(a.copy() for a in pairs), None),
                   np.ones(4, np.bool_), params).grow() for b in (gpu, CPUBackend(ctx(), params))]
    assert tree.nodes.tobytes() == want.nodes.tobytes() and tree.leaves.tobytes() == want.leaves.tobytes()
    np.testing.assert_array_equal(starts, cpu_starts)
    assert ("choose_level" in calls) == (fails != "pool") and calls.count("choose") >= 2
    assert ("pairs" in calls) == (fails == "pairs")
