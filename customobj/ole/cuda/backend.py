"""The grower's GPU backend (``TreeBooster(device="cuda")``): a tree grown in numba.cuda.

:class:`CUDABackend` provides the seam of :mod:`customobj.ole.backend` (``begin_tree``, ``expand``,
``end_tree``): the grower hands it a batch of leaves to split and gets their children's splits
back; the tree's leaf table, histograms and pair counts stay on the card, and the reads are planned
here (:class:`~customobj.ole.cuda.tree.DeviceTree`). **On the device**: the binned matrix (uploaded
once per fit); the gradients, hessians and pair couplings when the objective has GPU kernels
(:mod:`.scores`: the scores stay there); per tree, their grids, the root's sums, the row and pair
histograms (:class:`~customobj.ole.cuda.memory.DeviceHist`), the split search of every criterion,
``ole_fast``'s feature choice, pair pruning and dropped couplings, the partitions. **On the host**:
gradients and couplings the objective cannot make on the card (``TreeBooster.device_gradients_``
says why), the joint leaf solve and the tree's bookkeeping.

**Why the trees are the CPU's.** Each tree's gradients, hessians and couplings are first rounded
to a power-of-two grid (:mod:`..fixed_point`, as the CPU backend rounds them): every partial sum is
exact, so no sum depends on the order of its terms, and the histograms, node sums and couplings are
the CPU's. The split search is the CPU's own source compiled as a device function, ties broken the
CPU's way. Under the simulator the trees equal the CPU's (tests/test_ole_cuda_backend.py).

**Components** (each a host module beside its kernel module): :mod:`.inputs` (a tree's grids, root
sums, pruning and dropped couplings), :mod:`.histograms`, :mod:`.search`, :mod:`.choice`
(``ole_fast``'s features chosen on the card), :mod:`.partitions`, :mod:`.pruning`, :mod:`.pool`
(the buffers every node reuses), :mod:`.memory` (allocation, the memory refusal),
:mod:`.stats` (every launch, read, allocation and copy counted: ``TreeBooster.device_stats_``,
held to :data:`~customobj.ole.cuda.stats.BUDGET` per split by tests/test_ole_cuda_stats.py).
What each kernel does per update, the orchestration and the measured counts per split are in
docs/gpu-design.md.

Before a fit uses the device, :func:`~customobj.ole.cuda.memory.check_device_memory` compares what it
needs (:func:`~customobj.ole.cuda.memory.device_memory_needed`) with the card's free memory and refuses
with the numbers (:class:`~customobj.ole.cuda.memory.DeviceMemoryError`); the pairs are checked again
each tree. ``TreeBooster.device_memory_peak_`` is the peak of what the fit held.
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ..._cuda_runtime import require_gpu
from ..backend import CPUBackend, Expanded, Expansion, TreeRows, TreeStart
from ..context import GrowContext
from ..grower import leaves_held
from ..splitting import FeatureBins, SplitRules
from .choice import DeviceFeatureChoice
from .histograms import DeviceHistograms
from .inputs import TreeInputs
from .level_place import LevelPlacing
from .memory import (DeviceMemory, DeviceMemoryError, check_device_memory, device_memory_needed,
                     free_device_memory)
from .partitions import DevicePartitions
from .pool import DevicePool, hists_per_tree
from .pruning import DevicePruning
from .search import DeviceSearch
from .stats import CountedKernels, DeviceStats
from .tree import DeviceTree

__all__ = ["BEST_FIRST_LOOKAHEAD", "CUDABackend", "DeviceMemoryError", "device_memory_needed", "check_device_memory", "free_device_memory"]

_WHAT = 'TreeBooster(device="cuda")'

#: Best-first growth: leaves expanded per batch at most, the best one and the next by gain
#: (:meth:`customobj.ole.grower.TreeGrower._best_first_batch`): one read a batch instead of one a
#: split, at the price of expansions the tree never uses. 4 on MQ2008 Fold 1, 31 leaves: 30 -> 10.6
#: reads a tree for 11% more rows expanded (docs/gpu-design.md, "Best-first, a few leaves ahead").
BEST_FIRST_LOOKAHEAD = 4


class CUDABackend:
    """The grower's kernels on the GPU (see the module docstring for what is where): the seam of
    :class:`~customobj.ole.backend.TreeBackend`, each concern a component it owns.

    Parameters
    ----------
    ctx, params
        As for :class:`~customobj.ole.backend.CPUBackend`.

    Attributes
    ----------
    memory : DeviceMemory
        What the fit holds on the device, now and at its peak (bytes), and its
        :class:`~customobj.ole.cuda.stats.DeviceCounter` (``memory.counter``).
    pool : DevicePool
        The buffers every node reuses (:mod:`.pool`).
    inputs : TreeInputs
        A tree's gradients, couplings, grids and root sums on the card (:mod:`.inputs`).
    histograms, search, choice, partitions : DeviceHistograms, DeviceSearch, DeviceFeatureChoice, DevicePartitions
        The node histograms, the split search, ``ole_fast``'s feature choice and the partitions.
    pruning : DevicePruning or None
        ``ole_fast``'s pair pruning (None: the fit prunes nothing).
    host : CPUBackend
        What stays on the host: a split's gain from its children's exact sums, host couplings' sums.
    bins, n_bins : device array, numpy.ndarray
        The binned matrix on the card (feature-major) and each feature's bin count.
    num_leaves : int
        The fit's leaves per tree (a search after which at most one split is left is planned with).
    lookahead : int
        Best-first leaves expanded per batch at most (:data:`BEST_FIRST_LOOKAHEAD`; 1 breadth-first,
        whose batches are levels).

    Raises
    ------
    GPUUnavailableError
        No usable GPU (no ``numba-cuda``, driver or device: the message says which).
    DeviceMemoryError
        The binned matrix, gradients and histograms do not fit the device's free memory.
    """

    def __init__(self, ctx: GrowContext, params) -> None:
        cuda = require_gpu(_WHAT)
        # best-first: the next leaves by gain expanded with the best one, a read a batch (..grower)
        self.lookahead = lookahead = BEST_FIRST_LOOKAHEAD if params.best_first else 1
        from . import (_choice_kernels, _histograms_kernels, _level_place_kernels, _partitions_kernels, _reduce_kernels,
                       _search_kernels, _split_kernels)

        self.host = CPUBackend(ctx, params)
        self.ctx, self.data, self.n_rows = ctx, ctx.data, ctx.data.n_rows
        self.gradients_where: Optional[str] = None
        d = ctx.data
        n_feat = d.feature_major.shape[0]
        shape = dict(n_rows=d.n_rows, n_features=n_feat, bin_itemsize=d.feature_major.dtype.itemsize,
                     n_slots=d.n_slots, index_itemsize=np.dtype(d.index_dtype()).itemsize,
                     n_hists=hists_per_tree(leaves_held(params.num_leaves, lookahead)))
        need = {**device_memory_needed(**shape), **DevicePruning.memory_for_fit(ctx, params)}
        check_device_memory(need, free=free_device_memory())
        # what this fit keeps on the device from here on: later checks count it as theirs, not as taken
        resident = need["bins"] + need["histograms"] + need.get("pair pruning", 0)
        mem = self.memory = DeviceMemory(cuda)
        counter = mem.counter  # every launch, allocation and read of the fit (stats)
        histogram_kernels, split_kernels, partition_kernels, search_kernels, reduce_kernels = (
            CountedKernels(m, counter) for m in (_histograms_kernels, _split_kernels, _partitions_kernels,
                                                 _search_kernels, _reduce_kernels))
        self._joint = bool(params.joint_leaves)
        self.bins = mem.upload(d.feature_major)  # feature-major: partitions, the scores' trees
        bins_rm = mem.upload(np.ascontiguousarray(d.feature_major.T))  # coalesced histogram reads
        offsets = mem.upload(np.asarray(d.offsets, dtype=np.int64))
        self.n_bins = np.ascontiguousarray(d.n_bins, dtype=np.int64)
        self._n_bins_d = mem.upload(self.n_bins)
        self.pool = DevicePool(mem, n_rows=d.n_rows, n_features=n_feat, n_slots=d.n_slots, n_hists=shape["n_hists"])
        # the node histograms, a split's parent -= child and children's completion in one launch
        self.histograms = DeviceHistograms(mem, histogram_kernels, split_kernels, self.pool, bins_rm, d.offsets,
                                           self.n_bins)
        # the split search: a split's two children in one launch, their splits in one read
        feature_bins = FeatureBins(self._n_bins_d, offsets)
        self.search = DeviceSearch(mem, split_kernels, search_kernels, self.pool, feature_bins, n_features=n_feat,
                                   has_nan=bool(np.any(d.mapper.has_nan)),
                                   tail=3 * params.num_leaves if params.criterion.prunes_pairs else 0,
                                   nodes=2 * params.num_leaves)  # a batch's children, read at once
        # ole_fast: a level's choices kept by result row, a node's slot map at most k (max bins + 1) slots
        fast = params.criterion.fast
        level_slots = params.criterion.ole_fast_features * (int(self.n_bins.max(initial=0)) + 1) if fast else 0
        self.choice = DeviceFeatureChoice(mem, CountedKernels(_choice_kernels, counter), self.pool,
                                          n_features=n_feat, n_slots=d.n_slots, rows=self.search.result_rows,
                                          level_slots=level_slots, bins=feature_bins)
        self.partitions = DevicePartitions(mem, partition_kernels, reduce_kernels, histogram_kernels.zero,
                                           n_rows=d.n_rows, splits=params.num_leaves)  # a level's, in one table
        # a breadth-first level's pair placings (ole_fast: with the smaller children's row histograms) in one launch
        self.level_place = (LevelPlacing(mem, CountedKernels(_level_place_kernels, counter), self.partitions,
                                         self.histograms, splits=params.num_leaves)
                            if params.criterion.uses_pairs else None)
        self.pruning = DevicePruning.for_fit(mem, ctx, params)  # ole_fast's, or None
        self.inputs = TreeInputs(mem, self.pool, self.histograms, self.partitions, self.search, self.pruning,
                                 reduce_kernels, histogram_kernels.zero, self.bins, self._n_bins_d, shape=shape,
                                 resident=resident)
        self.num_leaves = int(params.num_leaves)
        self._scores_on_device = False
        self._tree: Optional[DeviceTree] = None  # the tree begun and not ended

    @property
    def rules(self) -> SplitRules:
        """The split search's record of the fit's score and constraints (the host's)."""
        return self.host.rules

    # --- the seam: a tree begun, expanded, ended (DeviceTree) -------------------------------------------
    def begin_tree(self, order: np.ndarray, grad: Any, hess: Any, pairs: Optional[tuple], feature_mask: np.ndarray,
                   *, searched: bool) -> TreeStart:
        """A tree on the card (see :mod:`customobj.ole.backend`): the rows' and couplings' grids, the
        pruning, the root's sums and, when ``searched``, its split, read together."""
        self._tree = DeviceTree(self, order, grad, hess, pairs, feature_mask)
        return self._tree.start(searched)

    def expand(self, batch: List[Expansion]) -> List[Expanded]:
        """Split each leaf of ``batch`` in order on the card; the children's splits of the whole batch
        come back in one read (with the pair counts that set their ranges)."""
        return self._current().expand(batch)

    def end_tree(self, spans: Optional[list] = None) -> TreeRows:
        """The tree's rows per leaf (its row order read only when the host needs it) and, for
        ``ole_fast``, its leaves' dropped couplings (``spans``: :mod:`customobj.ole.backend`)."""
        tree, self._tree = self._current(), None
        return tree.end(spans)

    def _current(self) -> DeviceTree:
        if self._tree is None:
            raise RuntimeError("expand or end_tree before begin_tree")
        return self._tree

    def order_on_host(self) -> bool:
        """Whether the host needs each tree's row order (its scores, the joint leaf solve)."""
        return not self._scores_on_device or self._joint

    # --- where the scores live, and what the fit held and did -------------------------------------------------
    def device_scores(self, obj, prep, scores: np.ndarray, need_pairs: bool, line_search: bool, *,
                      pairs_on_host: Optional[str] = None):
        """The scores on the device with each round's gradients (and, with ``need_pairs``, pair
        couplings) computed there (:class:`~customobj.ole.cuda.scores.DeviceScores`), or None with the
        reason in ``gradients_where``."""
        from .scores import DeviceScores, host_gradients_reason

        why = host_gradients_reason(obj, need_pairs, line_search, pairs_on_host)
        if why is not None:
            self.gradients_where = f"host: {why}"
            return None
        self.gradients_where = "device"
        self._scores_on_device = True
        index = self.data.index_dtype() if need_pairs else None  # the host path's pair index dtype
        return DeviceScores(self.memory, self.bins, self._n_bins_d, obj, prep, scores, index)

    def device_memory_peak(self) -> Optional[int]:
        """Bytes the fit held on the device at its peak (:class:`DeviceMemory`)."""
        self.memory.sample()
        return self.memory.peak

    def device_stats(self) -> Optional[DeviceStats]:
        """What the fit asked of the card, per tree (:mod:`.stats`)."""
        return self.memory.counter.stats()
