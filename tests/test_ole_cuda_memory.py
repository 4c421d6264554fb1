"""customobj.ole.cuda.memory: the device-memory count follows the arrays' lives (peak kept after a
free), and a device histogram subtracts like numpy and reads one entry (a level's subtractions held
for its choice kernel, or applied when read first); a fit on the device reports
its peak. Without a GPU they run on numba's CUDA simulator (tests/conftest.py)."""
import gc

import numpy as np
import pytest

from customobj.ole.cuda.memory import DeviceHist, DeviceMemory, SubtractQueue

from _cuda_cases import needs_gpu

pytestmark = needs_gpu


def _mem():
    from customobj._cuda_runtime import cuda_module
    return DeviceMemory(cuda_module())


def test_the_count_follows_each_arrays_life_and_keeps_the_peak():
    mem = _mem()
    a = mem.array((10, 3), np.float64)
    b = mem.upload(np.arange(7, dtype=np.int32))
    assert (mem.current, mem.peak) == (240 + 28, 240 + 28)
    np.testing.assert_array_equal(b.copy_to_host(), np.arange(7))
    del a
    gc.collect()
    assert (mem.current, mem.peak) == (28, 268)
    mem.hold(1000)
    assert mem.peak == 1028
    mem.hold(-1000)
    del b
    gc.collect()
    assert (mem.current, mem.peak) == (0, 1028)
    mem.sample()  # the simulator has no card: nothing recorded; a real card: its used memory
    assert mem.card_peak is None or mem.card_peak > 0


def test_a_device_histogram_subtracts_like_numpy_and_reads_one_entry():
    from customobj.ole.cuda import _split_kernels as K
    from customobj.ole.cuda.stats import CountedKernels
    mem = _mem()
    queue = SubtractQueue(CountedKernels(K, mem.counter).subtract3)
    rng = np.random.default_rng(0)
    a, b, c, x = rng.normal(size=(4, 6, 3))
    ha, hb, hc, hx = (DeviceHist(mem.upload(v), queue) for v in (a, b, c, x))
    same = ha
    ha -= hb
    hc -= hx
    ha -= hx  # three queued: one launch, in order
    assert ha is same and ha.shape == (6, 3) and mem.counter.stats().outside.launches == 1
    np.testing.assert_array_equal(ha.copy_to_host(), a - b - x)
    np.testing.assert_array_equal(hc.copy_to_host(), c - x)
    hc -= hb  # queued until the histogram is used
    assert mem.counter.stats().outside.launches == 1
    assert hc[4, 2] == (c - x - b)[4, 2] and isinstance(hc[np.int64(4), 2], float)
    assert mem.counter.stats().outside.launches == 2
    with pytest.raises(ValueError, match="shape"):
        ha -= DeviceHist(mem.upload(np.zeros((5, 3))), queue)
    with pytest.raises(ValueError, match="shape"):
        ha -= np.zeros((6, 3))


def test_a_splits_children_are_completed_with_its_row_subtraction_in_one_launch():
    from customobj.ole.cuda import _split_kernels as K
    from customobj.ole.common import PART_PLAN, PART_RECORD, PH_R
    from customobj.ole.cuda.stats import CountedKernels
    from customobj.ole.pairhist import PAIRS_LEFT_SMALL
    mem = _mem()
    ran = []
    k = CountedKernels(K, mem.counter)
    queue = SubtractQueue(k.subtract3, k.subtract_children, before=lambda: ran.append(True))
    rng = np.random.default_rng(1)
    rp, rs, pp, pl, pr = rng.normal(size=(5, 6, 3))
    hrp, hrs, hpp, hpl, hpr = (DeviceHist(mem.upload(v), queue) for v in (rp, rs, pp, pl, pr))
    record = np.zeros(PART_RECORD, np.int64)
    record[PART_PLAN] = PAIRS_LEFT_SMALL  # as child_hists leaves it: right holds the split pairs'
    hrp -= hrs
    queue.children(hpp, hpl, hpr, mem.upload(record))
    assert mem.counter.stats().outside.launches == 0 and not ran
    want = (pp - pl) - pr
    want[:, PH_R] = pr[:, PH_R]  # R: the child's own, from its rows (child_hists), not subtracted
    np.testing.assert_array_equal(hpr.copy_to_host(), want)  # used: the queue runs, its hook first
    assert mem.counter.stats().outside.launches == 1 and ran == [True]
    np.testing.assert_array_equal(hrp.copy_to_host(), rp - rs)
    np.testing.assert_array_equal(hpl.copy_to_host(), pl)
    hrp -= hrs
    hrp -= hrs
    queue.children(hpp, hpl, hpr, mem.upload(record))  # two subtractions before: they run first
    assert mem.counter.stats().outside.launches == 2
    queue.flush()
    assert mem.counter.stats().outside.launches == 3
    np.testing.assert_array_equal(hrp.copy_to_host(), rp - rs - rs - rs)


def test_a_levels_subtractions_are_held_for_its_choice_or_applied_when_read_first():
    # SubtractQueue.hold: each split's one queued ``a -= b`` leaves the queue (the next split's queues
    # alone: nothing runs mid-level) and is held for the level's choice kernel when ``a`` is searched
    # (take_held), dropped when not; one read first applies the held ones (in order, before the queue's);
    # restore holds taken ones again (the level's fall-back)
    from customobj.ole.cuda import _split_kernels as K
    from customobj.ole.cuda.stats import CountedKernels
    mem = _mem()
    queue = SubtractQueue(CountedKernels(K, mem.counter).subtract3)
    launches = lambda: mem.counter.stats().outside.launches
    rng = np.random.default_rng(2)
    vals = rng.normal(size=(8, 6, 3))
    h = [DeviceHist(mem.upload(v), queue) for v in vals]
    for k in range(4):  # four splits: a = h[2k], b = h[2k + 1]; split 2's larger child is not searched
        h[2 * k] -= h[2 * k + 1]
        queue.hold([h[2 * k]] if k != 2 else [h[7]])
    queue.hold([h[0]])  # nothing queued: nothing taken
    assert launches() == 0
    held = queue.take_held()
    assert [(a is h[2 * k], b is h[2 * k + 1]) for (a, b), k in zip(held, (0, 1, 3))] == [(True, True)] * 3
    assert queue.take_held() == [] and launches() == 0
    queue.restore(held[1:])  # held again: read first, applied
    h[6] -= h[0]  # a queued one after them
    np.testing.assert_array_equal(h[6].copy_to_host(), vals[6] - vals[7] - vals[0])  # one flush: held, then queued
    np.testing.assert_array_equal(h[2].copy_to_host(), vals[2] - vals[3])
    np.testing.assert_array_equal(h[4].copy_to_host(), vals[4])  # dropped: never applied
    np.testing.assert_array_equal(h[0].copy_to_host(), vals[0])  # taken by the kernel, not the queue
    assert launches() == 1 and queue.take_held() == []


def test_a_levels_collected_builds_run_before_the_queue_applies_or_hands_out_anything():
    # SubtractQueue.pending_builds (ole_fast's level placing, level_place.LevelPlacing): a hold leaves
    # them collected (its kernel comes after the level's launch); a flush or a take runs them first, once
    from customobj.ole.cuda import _split_kernels as K
    from customobj.ole.cuda.stats import CountedKernels
    mem = _mem()
    order: list = []
    queue = SubtractQueue(CountedKernels(K, mem.counter).subtract3, before=lambda: order.append("before"))
    vals = np.random.default_rng(3).normal(size=(4, 6, 3))
    h = [DeviceHist(mem.upload(v), queue) for v in vals]
    queue.pending_builds = lambda: order.append("builds")
    h[0] -= h[1]
    queue.hold([h[0]])
    assert order == ["before"] and queue.pending_builds is not None  # held: still collected
    h[2] -= h[3]
    queue.flush()
    assert order == ["before", "builds", "before"] and queue.pending_builds is None  # run once, first
    np.testing.assert_array_equal(h[2].copy_to_host(), vals[2] - vals[3])
    queue.pending_builds = lambda: order.append("builds")
    h[2] -= h[3]
    assert queue.take([h[2]]) is not None and order[-2:] == ["builds", "before"]
    assert queue.pending_builds is None


def test_a_device_fit_reports_its_peak_and_a_cpu_fit_none():
    from customobj.ole import TreeBooster
    from _ole_cases import QUIET, make_rank_data
    X, y, group = make_rank_data(1, n_queries=4)
    kw = dict(num_leaves=4, n_estimators=1, min_data_in_leaf=4, max_bin=8, **QUIET)
    gpu = TreeBooster(criterion="ole", device="cuda", **kw).fit(X, y, group)
    bins = X.size  # uint8 bins, feature-major: at least the binned matrix was held
    assert gpu.device_memory_peak_ >= bins
    assert TreeBooster(criterion="ole", **kw).fit(X, y, group).device_memory_peak_ is None
