"""customobj/ole/cuda/level_place.py and customobj/ole/cuda/_level_place_kernels.py (issue 42, item 3): a
breadth-first level places every searched split's pairs (``ole_fast``: and builds its smaller child's row
histogram) in one launch (``place_sides_row_hist_level``), where it was one launch a split (that a level's placings are
one launch, with the CPU's trees, ``ole`` and ``ole_fast``: tests/test_ole_cuda_stats.py's level test); a
level whose histograms are not all the pool's falls back to a launch a split with the same trees.
Under numba's CUDA simulator: small data, the kernels' Python source."""
import numpy as np
import pytest

from customobj.ole import TreeBooster

from _cuda_cases import needs_gpu
from _ole_cases import QUIET, make_rank_data, tree_dicts

KW = dict(criterion="ole_fast", num_leaves=8, n_estimators=2, min_data_in_leaf=4, max_bin=16,
          growth="breadth_first", ole_fast_features=2, **QUIET)


def _spied(monkeypatch):
    from customobj.ole.cuda import _level_place_kernels, _partitions_kernels
    log = []
    for module, name in ((_partitions_kernels, "place_sides_row_hist"),
                         (_level_place_kernels, "place_sides_row_hist_level")):
        kernel = getattr(module, name)

        class Spy:
            def __getitem__(self, config, kernel=kernel, name=name):
                log.append((name, config))
                return kernel[config]
        monkeypatch.setattr(module, name, Spy())
    return log


@needs_gpu
def test_histograms_beyond_the_pool_fall_back_to_a_launch_a_split_with_the_same_trees(monkeypatch):
    from customobj.ole.cuda.pool import DevicePool
    log = _spied(monkeypatch)
    X, y, group = make_rank_data(5, n_queries=8)
    want = tree_dicts(TreeBooster(**KW).fit(X, y, group))
    monkeypatch.setattr(DevicePool, "index_of", lambda self, array: -1)  # as if every one were made beyond it
    gpu = TreeBooster(device="cuda", **KW).fit(X, y, group)
    assert tree_dicts(gpu) == want
    names = [name for name, _ in log]
    assert "place_sides_row_hist_level" not in names and names.count("place_sides_row_hist") >= 4


@needs_gpu
def test_a_split_without_counted_pairs_is_refused_when_collected():
    from customobj.ole.cuda.level_place import LevelPlacing
    from customobj.ole.cuda.memory import DeviceMemory, SubtractQueue
    from customobj.ole.cuda.partitions import DevicePartitions
    from customobj.ole.cuda import _level_place_kernels, _partitions_kernels, _reduce_kernels
    from customobj.ole.cuda import _histograms_kernels
    from customobj._cuda_runtime import cuda_module
    mem = DeviceMemory(cuda_module())
    parts = DevicePartitions(mem, _partitions_kernels, _reduce_kernels, _histograms_kernels.zero, n_rows=8, splits=2)

    class Hists:  # what LevelPlacing reads of DeviceHistograms: its pool and queue
        pool, queue = None, SubtractQueue(None)

    placing = LevelPlacing(mem, _level_place_kernels, parts, Hists(), splits=2)
    with pytest.raises(ValueError, match="no pairs counted"):
        placing.add(0, 0, 1, None, mem.upload(np.arange(8)), ())
    placing.launch()  # nothing collected: nothing launched
    assert mem.counter.stats().outside.launches == 0


@needs_gpu
def test_a_queue_flush_mid_level_launches_what_was_collected_first_with_the_same_trees(monkeypatch):
    # as when the pool runs short of a histogram mid-level: every zeroed histogram flushes the subtraction
    # queue first, which must launch the level's collected placings and row histograms before it applies
    # anything that reads them (SubtractQueue.pending_builds); each launch of a level takes its own rows of
    # the build table (a queued copy from page-locked memory is not overwritten before it runs)
    from customobj.ole.cuda.histograms import DeviceHistograms
    log = _spied(monkeypatch)
    X, y, group = make_rank_data(5, n_queries=8)
    want = tree_dicts(TreeBooster(**KW).fit(X, y, group))
    zeroed = DeviceHistograms.zeroed

    def flushing(self):
        self.queue.flush()
        return zeroed(self)
    monkeypatch.setattr(DeviceHistograms, "zeroed", flushing)
    gpu = TreeBooster(device="cuda", **KW).fit(X, y, group)
    assert tree_dicts(gpu) == want
    level = [config for name, config in log if name == "place_sides_row_hist_level"]
    assert level and min(config[0][2] for config in level) == 2  # one split a launch: flushed before the next
