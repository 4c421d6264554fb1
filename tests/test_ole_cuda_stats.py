"""customobj.ole.cuda_stats and customobj/ole/cuda_pool.py (no tree allocates: the pool):
``TreeBooster(device="cuda").device_stats_`` counts what the fit asks of the card (launches, blocking
reads, allocations, bytes each way), checked by hand on a stump, and the launch budget of issue 32
(``cuda_stats.BUDGET``) as far as today's kernels meet it.

Under numba's CUDA simulator (tests/conftest.py) the counts are those of a real card: they are Python
counters at the backend's calls, not measurements."""
import numpy as np
import pytest

from customobj.ole import TreeBooster
from customobj.ole.cuda_stats import BUDGET, FIELDS, DeviceCounter, DeviceCounts, DeviceStats

from _cuda_cases import needs_gpu
from _ole_cases import QUIET, make_rank_data

#: What the merged kernels (shared-memory histograms, block reductions and scans: gpuole; the pool,
#: batched reads, counted launches, a split's children picked in one launch and its histograms
#: cleared in one: gpubudget) cost per split on the data below, measured (launches, reads: wse 9.7,
#: 1.2; ole 16.7, 2.2; ole_fast 17.0, 3.8, its pairs' reads to the host counted in their tree): the
#: ceilings the tests hold the backend to while it is above ``BUDGET``. A regression above these fails.
NOW = {"wse": {"launches": 10.0, "reads": 1.2}, "ole": {"launches": 17.0, "reads": 2.2},
       "ole_fast": {"launches": 17.5, "reads": 3.8}}  # ole_fast: + each split's WSE ranking, its pairs to the host


def _stump_data(seed=0):
    X, y, group = make_rank_data(seed, n_queries=4, nan_frac=0.0)  # no NaN: no NaN-slot read
    return X, y, group


def test_the_counter_keeps_trees_apart_from_the_rest():
    c = DeviceCounter()
    c.allocation(100)
    c.begin_tree()
    c.launch(), c.launch(), c.read(8), c.to_device(16), c.split()
    c.end_tree()
    c.launch()
    s = c.stats()
    assert s.trees == (DeviceCounts(2, 1, 0, 16, 8, 1),) and s.outside == DeviceCounts(1, 0, 1, 100, 0, 0)
    assert s.per_split() == {"launches": 2.0, "reads": 1.0, "allocations": 0.0}
    assert s.total(first=1) == DeviceCounts(0, 0, 0, 0, 0, 0)
    d = s.as_dict()
    assert d["n_trees"] == 1 and d["trees"][0]["reads"] == 1 and set(d["total"]) == set(FIELDS)
    assert isinstance(s, DeviceStats) and DeviceStats((), DeviceCounts(*[0] * 6)).per_split()["reads"] == 0.0


@needs_gpu
def test_a_stump_is_counted_by_hand():
    X, y, group = _stump_data()
    model = TreeBooster(device="cuda", criterion="wse", num_leaves=2, n_estimators=3, min_data_in_leaf=4,
                        max_bin=16, **QUIET).fit(X, y, group)
    assert model.device_gradients_ == "device"
    st = model.device_stats_
    assert st.n_trees == 3 and all(len(t.nodes) == 1 for t in model.trees_)
    # a later tree: the gradients' grid and root sums (reset, grid_max, grid_units, grid_round; 1 read
    # of G, H and C), root histogram (row_hist_shared into one of the three histograms the first tree's
    # zero3 cleared), root search (feature_bests, pick_splits;
    # 1 read of the split, 12 float64, and its NaN count), the partition (mark, scan, place, copy;
    # nothing read: the split has the left count); the children are never searched (2 leaves), the
    # row order stays on the card, the rows and the mask are there already
    later = DeviceCounts(launches=4 + 1 + 2 + 4, reads=2, allocations=0, bytes_to_device=0,
                         bytes_to_host=3 * 8 + (12 + 1) * 8, splits=1)
    assert st.trees[1] == st.trees[2] == later
    n, n_feat = X.shape
    # the first tree also uploads its starting rows (int64) and the feature mask (a byte a feature)
    assert st.trees[0] == later._replace(launches=later.launches + 1, bytes_to_device=n * 8 + n_feat)  # + zero3
    # outside: the data, the pool and the scores (allocations), one add_tree_bins launch per tree
    assert st.outside.launches == 3 and st.outside.allocations > 10 and st.outside.reads == 0
    assert TreeBooster(criterion="wse", num_leaves=2, n_estimators=1, **QUIET).fit(X, y, group).device_stats_ is None


@needs_gpu
@pytest.mark.parametrize("criterion", ["wse", "ole", "ole_fast"])
def test_no_tree_allocates_and_the_current_costs_hold(criterion):
    X, y, group = make_rank_data(3)  # 300 rows, NaN, ties
    model = TreeBooster(device="cuda", criterion=criterion, num_leaves=6, n_estimators=3, min_data_in_leaf=4,
                        max_bin=16, ole_fast_features=2, **QUIET).fit(X, y, group)
    st = model.device_stats_
    assert st.total().splits == sum(len(t.nodes) for t in model.trees_) >= 3 * 3
    # item 3: the pool is made before the first tree; only the tree's pair buffers are sized in it
    assert st.total(first=1).allocations == BUDGET["allocations"]
    if criterion == "wse":
        assert st.total().allocations == 0
    per = st.per_split()
    assert per["launches"] <= NOW[criterion]["launches"] and per["reads"] <= NOW[criterion]["reads"], per


@needs_gpu
@pytest.mark.xfail(strict=True, reason="not met after the gpuole merge (ole: 16.7 launches, 2.2 reads per split): "
                                       "needs the node sums kept on the card (the root's read), the pair "
                                       "partition's counts used there, fused partitions and two-node searches")
def test_the_launch_budget_of_issue_32():
    X, y, group = make_rank_data(3, nan_frac=0.0)
    model = TreeBooster(device="cuda", criterion="ole", num_leaves=6, n_estimators=3, min_data_in_leaf=4,
                        max_bin=16, **QUIET).fit(X, y, group)
    per = model.device_stats_.per_split()
    assert per["launches"] <= BUDGET["launches"] and per["reads"] <= BUDGET["reads"], per
