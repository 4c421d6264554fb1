"""customobj.ole.cuda.histograms: a split's children's histograms on the card equal the CPU's (the row
histogram of the smaller child, histogram.build_row_hist_fm; each child's pair histogram,
pairhist.build_pair_hist) bit for bit, whichever plan the card makes from the pair counts it keeps
(pairhist.pair_hist_plan: direct, or the larger child by subtraction, either side), in two launches
(child_hists with the waiting row build, subtract_children) and no read; a child's row histogram
waits for its pairs, or is built when something uses it first. Small data, numba's CUDA simulator."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.common import PART_N_LEFT, PART_N_RIGHT, PART_PLAN, PART_RECORD
from customobj.ole.fixed_point import grid_step_of, grid_step_of_rows, round_range, round_rows
from customobj.ole.histogram import build_row_hist_fm
from customobj.ole.pair_partition import partition_pairs
from customobj.ole.pairhist import PAIRS_DIRECT, PAIRS_LEFT_SMALL, PAIRS_RIGHT_SMALL, build_pair_hist, pair_hist_plan

from _cuda_cases import needs_gpu
from _ole_cases import make_X

pytestmark = needs_gpu


def _setup(left_share):
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.cuda import _histograms_kernels, _split_kernels
    from customobj.ole.cuda.histograms import DeviceHistograms
    from customobj.ole.cuda.memory import DeviceMemory
    from customobj.ole.cuda.pool import DevicePool
    from customobj.ole.cuda.stats import CountedKernels
    n = 60
    X = make_X(2, n=n, n_features=3, nan_frac=0.15)
    mapper = BinMapper.fit(X, 8)
    fm = mapper.bins_feature_major(X)
    rng = np.random.default_rng(3)
    pi, pj = (rng.integers(0, n, 150).astype(np.int32) for _ in range(2))
    pc = rng.uniform(0.0, 2.0, 150)
    round_range(pc, 0, 150, grid_step_of(pc, 0, 150))
    go_left = rng.uniform(size=n) < left_share
    buf = tuple(np.zeros_like(a) for a in (pi, pj, pc))
    counts = partition_pairs(pi, pj, pc, 0, 150, go_left, *buf)
    mem = DeviceMemory(cuda_module())
    kh, ks = (CountedKernels(m, mem.counter) for m in (_histograms_kernels, _split_kernels))
    hists = DeviceHistograms(mem, kh, ks, DevicePool(mem, n_rows=n, n_features=3, n_slots=mapper.n_slots, n_hists=6),
                             mem.upload(np.ascontiguousarray(fm.T)), mapper.offsets, mapper.n_bins)
    return mapper, fm, mem, hists, buf, counts, go_left


def _node(mem, buf, lo, hi, rows, n=60):
    """A node's rows (``rows``) for its pair histogram's R, with each row's coupling sum over the pairs
    ``buf[lo:hi]`` (on the card: made by the root's row histogram launch, kept by the pair partitions)."""
    from customobj.ole.cuda._histograms_kernels import NodeRows
    rho = np.zeros(n)
    np.add.at(rho, buf[0][lo:hi], buf[2][lo:hi])
    np.add.at(rho, buf[1][lo:hi], buf[2][lo:hi])
    return NodeRows(mem.upload(rho), mem.upload(np.asarray(rows, np.int64)), len(rows))


@pytest.mark.parametrize("left_share,rows,need,plan", [
    (0.3, (8.0, 50.0, 20.0), (True, True), PAIRS_LEFT_SMALL),
    (0.7, (50.0, 8.0, 20.0), (True, True), PAIRS_RIGHT_SMALL),
    (0.7, (50.0, 8.0, 60.0), (False, True), PAIRS_DIRECT),
    (0.5, (30.0, 30.0, 600.0), (True, True), PAIRS_DIRECT)])
def test_the_childrens_histograms_are_the_cpus_in_two_launches_whichever_the_plan(left_share, rows, need, plan):
    mapper, fm, mem, hists, buf, (nl, nr), go_left = _setup(left_share)
    assert pair_hist_plan(nl, nr, 150, *rows, *need) == plan and 0 < nl and 0 < nr
    d_buf = tuple(mem.upload(a) for a in buf)
    steps = mem.upload(np.array([grid_step_of(buf[2], 0, 150)] * 2))
    parent = hists.pairs(d_buf, 0, 150, steps, _node(mem, buf, 0, 150, np.arange(60)))
    small = np.flatnonzero(go_left if nl <= nr else ~go_left).astype(np.int64)  # the smaller child's rows
    rng = np.random.default_rng(4)
    g, h, grad, hess = np.zeros(60), np.zeros(60), rng.normal(size=60), rng.uniform(0.5, 1.0, 60)
    rsteps = np.array([grid_step_of_rows(small, grad), grid_step_of_rows(small, hess)])
    round_rows(small, grad, rsteps[0], g)
    round_rows(small, hess, rsteps[1], h)
    record = np.zeros(PART_RECORD, np.int64)
    record[PART_N_LEFT], record[PART_N_RIGHT] = nl, nr
    d_record = mem.upload(record)
    gh, d_small, d_rsteps = mem.upload(np.stack([g, h])), mem.upload(small), mem.upload(rsteps)
    before = mem.counter.stats().outside
    row = hists.rows(d_small, small.size, gh, d_rsteps, root=False)
    nodes = (_node(mem, buf, 0, nl, np.flatnonzero(go_left)), _node(mem, buf, nl, nl + nr, np.flatnonzero(~go_left)))
    left, right = hists.children(d_buf, 0, 150, d_record, parent, rows, need, steps, nodes)
    assert mem.counter.stats().outside.reads == before.reads  # the counts never came to the host
    got = [left.copy_to_host(), right.copy_to_host(), row.copy_to_host()]  # the queue runs first
    # child_hists with the rows, subtract_children (zero6 cleared these with the parent's)
    assert mem.counter.stats().outside.launches - before.launches == 2
    assert mem.read(d_record)[PART_PLAN] == plan
    args = (mapper.offsets, mapper.n_bins, mapper.n_slots)
    want = [build_pair_hist(fm.T.copy(), *buf, lo, hi, *args) for lo, hi in ((0, nl), (nl, nl + nr))]
    for k in range(2):
        if need[k] or plan != PAIRS_DIRECT:
            np.testing.assert_array_equal(got[k], want[k])
        else:
            assert not got[k].any()  # never split: nothing built
    np.testing.assert_array_equal(got[2], build_row_hist_fm(fm, small, 0, small.size, g, h, mapper.offsets,
                                                            mapper.n_slots))


def test_a_childs_row_histogram_is_built_when_used_first():
    mapper, fm, mem, hists, *_ = _setup(0.5)
    rows = np.arange(0, 60, 3, dtype=np.int64)
    g, h = np.ones(60), np.full(60, 0.5)
    row = hists.rows(mem.upload(rows), rows.size, mem.upload(np.stack([g, h])), mem.upload(np.array([1.0, 0.5])),
                     root=False)
    launches = mem.counter.stats().outside.launches
    np.testing.assert_array_equal(row.copy_to_host(), build_row_hist_fm(fm, rows, 0, rows.size, g, h, mapper.offsets,
                                                                        mapper.n_slots))
    assert mem.counter.stats().outside.launches == launches + 1  # row_hist_shared, alone


@pytest.mark.parametrize("sides", [(0, 1), (1,), (0,)])
def test_ole_fasts_children_over_features_chosen_on_the_card_are_the_cpus_in_one_launch(sides):
    """chosen_child_pairs: each child its own pairs (its side of the parent's range, from counts that
    stay on the card) over its own features (the device tables of _choice_kernels' choice)."""
    from customobj.ole.cuda._histograms_kernels import feature_groups
    from customobj.ole.cuda._choice_kernels import FeatureChoice
    from customobj.ole.backend import NodePairs
    from customobj.ole.cuda.partitions import DevicePairCounts
    mapper, fm, mem, hists, buf, (nl, nr), go_left = _setup(0.4)
    d_buf = tuple(mem.upload(a) for a in buf)
    steps = mem.upload(np.array([grid_step_of(buf[2], 0, 150)] * 2))
    record = np.zeros(PART_RECORD, np.int64)
    record[PART_N_LEFT], record[PART_N_RIGHT] = nl, nr
    counts = DevicePairCounts(mem, mem.upload(record))
    feats = [np.array([0, 2]), np.array([1])]  # node 0's and node 1's chosen features
    tables = [feature_groups(mapper.offsets, mapper.n_bins, f) for f in feats]
    pad = [np.zeros((2, 3, 5), np.int64), np.zeros((2, 3, 4), np.int64), np.zeros((2, mapper.n_slots), np.int64)]
    for z, t in enumerate(tables):
        for k in range(3):
            pad[k][z, :len(t[k])] = t[k]
    choice = FeatureChoice(mem.upload(np.ones(3, np.bool_)), mem.upload(np.zeros((2, 3), np.bool_)),
                           *(mem.upload(a) for a in pad))
    nodes = [NodePairs(d_buf, 0, 150, counts, side) for side in sides]
    before = mem.counter.stats().outside
    rows = [_node(mem, buf, 0, nl, np.flatnonzero(go_left)) if side == 0 else
            _node(mem, buf, nl, nl + nr, np.flatnonzero(~go_left)) for side in sides]
    got = [h.copy_to_host() for h in hists.chosen_children(nodes, steps, 2, choice, rows)]
    after = mem.counter.stats().outside
    assert after.reads == before.reads  # the counts stayed on the card
    assert after.launches - before.launches == 2  # zero6 and chosen_child_pairs
    for z, side in enumerate(sides):
        lo, hi = (0, nl) if side == 0 else (nl, nl + nr)
        want = build_pair_hist(fm.T.copy(), *buf, lo, hi, mapper.offsets, mapper.n_bins, mapper.n_slots)
        slots = np.concatenate([np.arange(mapper.offsets[f], mapper.offsets[f] + mapper.n_bins[f] + 1)
                                for f in feats[z]])
        np.testing.assert_array_equal(got[z][slots], want[slots])
        others = np.setdiff1d(np.arange(mapper.n_slots), slots)
        assert not got[z][others].any()  # the features not chosen stay 0
