"""customobj/ole/cuda/choice.py: ``DeviceFeatureChoice``, ole_fast's feature choice on the device. The
chosen masks land in the pool's two slots (and the pool copies a host mask again afterwards), the
tables are the CPU's groups, the fit's mask is copied only when it changes, and a mask of the wrong
shape is refused naming it; a level's nodes are chosen for in one launch into their result rows. The kernel itself: tests/test_ole_cuda_choice_kernels.py; the trees:
tests/test_ole_cuda_backend.py (ole_fast equal to the CPU's), the reads: tests/test_ole_cuda_stats.py."""
import numpy as np
import pytest

from customobj.ole.backend import select_features
from customobj.ole.common import ChildSums
from customobj.ole.criterion import SE, WSE
from customobj.ole.splitting import FeatureBins, SplitRules, feature_gains

from _cuda_cases import needs_gpu

pytestmark = needs_gpu


def _setup():
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.cuda import _search_kernels, _choice_kernels, _split_kernels
    from customobj.ole.cuda.choice import DeviceFeatureChoice
    from customobj.ole.cuda.memory import DeviceMemory
    from customobj.ole.cuda.pool import DevicePool
    from customobj.ole.cuda.search import DeviceSearch
    mem = DeviceMemory(cuda_module())
    n_bins, offsets = np.array([2, 3, 2, 2]), np.array([0, 3, 7, 10])
    pool = DevicePool(mem, n_rows=8, n_features=4, n_slots=13, n_hists=1)
    bins = FeatureBins(mem.upload(n_bins), mem.upload(offsets))
    search = DeviceSearch(mem, _split_kernels, _search_kernels, pool, bins, n_features=4, has_nan=False)
    choice = DeviceFeatureChoice(mem, _choice_kernels, pool, n_features=4, n_slots=13)
    rng = np.random.default_rng(0)
    hists = []
    for _ in range(2):
        h = np.zeros((13, 3))
        for f in range(4):
            for b in range(n_bins[f]):
                h[offsets[f] + b] = (rng.normal() * (f + 1), 1.0, 2.0)
        hists.append(h)
    sums = [ChildSums(float(h[0:3, 0].sum()), float(h[0:3, 1].sum()), 4.0, 0.0) for h in hists]
    return mem, pool, search, choice, FeatureBins(n_bins, offsets), hists, sums


def test_two_nodes_choices_land_in_the_pools_mask_slots_and_the_cpus_groups():
    from customobj.ole.cuda._histograms_kernels import feature_groups
    mem, pool, search, choice, bins, hists, sums = _setup()
    rules, mask = SplitRules(SE, 0.0, 1.0, 0.0), np.array([True, True, False, True])
    pool.feature_mask(np.ones(4, np.bool_), 0)  # the pool knows slot 0 holds all features
    nodes, root = [(mem.upload(h), s) for h, s in zip(hists, sums)], mem.upload(np.zeros(4))
    copies = mem.counter.stats().outside.bytes_to_device
    bound = choice.choose(search, nodes, mask, 2, rules, root, False)
    assert bound == 2 and mem.counter.stats().outside.reads == 0
    assert mem.counter.stats().outside.bytes_to_device == copies + 4  # the fit's mask, a byte a feature
    masks = mem.read(pool.mask)
    for node in range(2):
        gains = np.zeros(4)
        feature_gains(hists[node], bins, mask, sums[node], rules._replace(score=WSE), gains)
        feats = select_features(gains, mask, 2)
        np.testing.assert_array_equal(np.flatnonzero(masks[node]), feats)
        g, m, smap = feature_groups(bins.offsets, bins.n_bins, feats)
        groups, members, slot_map = (mem.read(a) for a in choice.tables(node))
        np.testing.assert_array_equal(groups[:len(g)], g)
        np.testing.assert_array_equal(members[:len(feats)], m)
        np.testing.assert_array_equal(slot_map[:len(smap)], smap)
    # the pool's slots were overwritten: a host mask goes to the device again, even the one it had
    pool.feature_mask(np.ones(4, np.bool_), 0)
    assert mem.read(pool.mask)[0].all()
    # the same fit mask again: not copied again
    copies = mem.counter.stats().outside.bytes_to_device
    choice.choose(search, nodes[:1], mask, 1, rules, root, False)
    assert mem.counter.stats().outside.bytes_to_device == copies


def test_a_mask_of_the_wrong_shape_is_refused():
    mem, pool, search, choice, bins, hists, sums = _setup()
    with pytest.raises(ValueError, match="mask must have one entry per feature"):
        choice.choose(search, [(mem.upload(hists[0]), sums[0])], np.ones(3, np.bool_), 1,
                      SplitRules(SE, 0.0, 1.0, 0.0), mem.upload(np.zeros(4)), False)


def test_a_levels_choice_lands_in_its_nodes_result_rows_in_one_launch():
    # choose_level: a breadth-first level's searched nodes (pool histograms) in one launch, each node's
    # choice in its result row of the tables made once per fit (level_tables: a split's two rows as
    # chosen_child_pairs reads them, views), nothing read, the table in one copy; bad rows and a fit
    # without level tables are refused
    from customobj.ole.cuda import _choice_kernels
    from customobj.ole.cuda._histograms_kernels import feature_groups
    from customobj.ole.cuda.choice import DeviceFeatureChoice
    from customobj.ole.cuda.memory import DeviceMemory
    from customobj.ole.cuda.pool import DevicePool
    from customobj.ole.cuda.stats import CountedKernels
    mem, _, _, plain, bins, hists, sums = _setup()
    hists = [np.round(h * 64) / 64 for h in hists]  # on a grid: (a + b) - b is a, as on the fit's
    pool = DevicePool(mem, n_rows=8, n_features=4, n_slots=13, n_hists=3)
    for i, h in enumerate((hists[0], hists[0] + hists[1], hists[1][::-1].copy())):  # 1: completed by -= 0
        pool.hists[i].copy_to_device(np.ascontiguousarray(h))
    dbins = FeatureBins(mem.upload(bins.n_bins), mem.upload(bins.offsets))
    choice = DeviceFeatureChoice(mem, CountedKernels(_choice_kernels, mem.counter), pool, n_features=4, n_slots=13,
                                 rows=6, level_slots=2 * 4, bins=dbins)
    rules, mask = SplitRules(SE, 0.0, 1.0, 0.0), np.array([True, True, False, True])
    before = mem.counter.stats().outside
    nodes = [(0, 2, -1, sums[0]), (1, 3, 0, sums[1]), (2, 5, -1, sums[1])]
    assert choice.choose_level(pool.hists, nodes, mask, 2, rules) == 2
    after = mem.counter.stats().outside
    assert (after.launches - before.launches, after.reads - before.reads, after.allocations - before.allocations) == (1, 0, 0)
    np.testing.assert_array_equal(mem.read(pool.hists[1]), hists[1])  # completed in the launch
    for (_, row, _, s), h in zip(nodes, (hists[0], hists[1], hists[1][::-1])):
        gains = np.zeros(4)
        feature_gains(h, bins, mask, s, rules._replace(score=WSE), gains)
        feats = select_features(gains, mask, 2)
        np.testing.assert_array_equal(np.flatnonzero(mem.read(choice.masks)[row]), feats)
        g, m, smap = feature_groups(bins.offsets, bins.n_bins, feats)
        tables = choice.level_tables(row)
        groups, members, slot_map = (mem.read(a)[0] for a in tables[2:])
        np.testing.assert_array_equal(groups[:len(g)], g)
        np.testing.assert_array_equal(members[:len(feats)], m)
        np.testing.assert_array_equal(slot_map[:len(smap)], smap)
    assert mem.counter.stats().outside.allocations == after.allocations  # the views made nothing
    with pytest.raises(ValueError, match="distinct"):
        choice.choose_level(pool.hists, [(0, 2, -1, sums[0]), (1, 2, -1, sums[1])], mask, 2, rules)
    with pytest.raises(ValueError, match="distinct"):
        choice.choose_level(pool.hists, [(0, 6, -1, sums[0])], mask, 2, rules)
    with pytest.raises(ValueError, match="1 to 6 nodes"):
        choice.choose_level(pool.hists, [], mask, 2, rules)
    with pytest.raises(ValueError, match="mask must have one entry per feature"):
        choice.choose_level(pool.hists, nodes, np.ones(3, np.bool_), 2, rules)
    with pytest.raises(RuntimeError, match="no level tables"):
        plain.choose_level(pool.hists, nodes, mask, 2, rules)
