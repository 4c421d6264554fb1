"""The grower's GPU backend (``TreeBooster(device="cuda")``): a tree grown in numba.cuda.

:class:`CUDABackend` provides the contract of :mod:`customobj.ole.backend`. **On the device**: the
binned matrix (uploaded once per fit, feature-major for partitions and row-major for histograms);
the gradients, hessians and pair couplings when the objective has GPU kernels
(:mod:`.scores`: the scores stay there, each finished tree is added there); per tree, their
grids, the root's sums, the row and pair histograms (they stay there:
:class:`~customobj.ole.cuda.memory.DeviceHist`, ``parent -= child`` is a kernel), the split search
of every criterion, ``ole_fast``'s feature choice, pair pruning and dropped couplings, the row and pair
partitions and the coupling sums. **On the host**: gradients and couplings the objective cannot make
on the card (composites, ``line_search``, ``leaf_solver="joint"``: ``TreeBooster.device_gradients_``
says why; copied into the pool once per tree), the joint leaf solve and the tree's bookkeeping.

**Why the trees are the CPU's.** Each tree's gradients, hessians and couplings are first rounded
to a power-of-two grid (:mod:`.fixed_point`, XGBoost's deterministic histograms; the CPU backend
rounds them the same way, the bound is stated there). On the grid every partial sum is exact, so
no sum depends on the order of its terms: atomics, block and thread counts and the card change no
bit, and the histograms, node sums and couplings are the CPU's. The split search is the CPU's own
source compiled as a device function, ties broken the CPU's way (lower feature, then bin). Under
the simulator the trees equal the CPU's (tests/test_ole_cuda_backend.py, exact-tie fits included).

**Kernels** (per update: one feature of one row or pair):

- :mod:`._reduce_kernels` through :mod:`.inputs`: ``grid_max``, ``grid_units``,
  ``grid_round`` (a tree's grids, its rows' and its device couplings' in the same 3 launches, into
  the tree's row of an accumulator ring made zeroed and cleared once per 64 trees: grid-stride
  loops, a tree reduction in shared memory, one atomic per block; the first also clears the pool's
  histograms, the last makes ``ole_fast``'s per-query tops); ``coupling_sums``; ``best_feature``
  (the best feature, a block reduction).
- :mod:`._histograms_kernels` through :mod:`.histograms`: ``row_hist_shared`` / ``pair_hist_shared``
  (a root's; into pool histograms the tree's first launch cleared, or, once those are used, six at
  a time by ``zero6``) and ``child_hists`` (a split's
  children's, one launch: the smaller child's rows and both children's pairs, planned on the card
  from the pair counts the partition left there, :func:`~customobj.ole.pairhist.pair_hist_plan`):
  blocks of (chunk of items, group of features) keep the group's histogram in shared memory as
  int64 grid units (``SHARED_SLOTS``: eight 255-bin features); neighbouring lanes take
  neighbouring features of one item, so a warp reads one run of the row-major bins (coalesced).
  Per update: 1 bin byte (rows) or 2 (pairs) and 3 shared int64 atomics; the item's index and
  values (16-24 bytes) are read once per item for the group's lanes; per block, once, one global
  float64 atomic per non-zero slot and channel (no per-block partials in global memory).
- The split search (:mod:`.search`): :mod:`._search_kernels` ``search_nodes``, one launch
  for a split's two children: one thread per feature and node runs the CPU's ``_best_in_feature``
  (:mod:`._split_kernels` ``node_bests``, records ``NodeHists``, ``FeatureBins``,
  ``ChildSums``, ``SplitRules``), then the last block to finish (a ticket after a memory fence)
  picks each node's split by a fixed-order block reduction, with its NaN count, a root's sums and
  the split's pair counts; for ``ole_fast`` first :mod:`._choice_kernels` ``wse_choose`` (the WSE
  gains, then each node's top features and their groups by the last block, :mod:`.choice`; the
  larger child's ``parent -= smaller`` rows first, by the thread that searches each feature) and
  ``chosen_child_pairs`` (the children's pair histograms over them, one launch; a root's from the
  kept count on the card). ``subtract3`` / ``subtract_children``: a split's ``parent -= child``
  (rows) and its larger child's pair histogram ``parent - smaller - split pairs`` (as the card's
  plan says) queued and run in one launch (:class:`~customobj.ole.cuda.memory.SubtractQueue`).
- :mod:`._partitions_kernels` through :mod:`.partitions`: stable row and pair partitions,
  the CPU's per-block code, many short blocks, 2 launches each (count, place: each CUDA block scans
  its blocks' offsets itself; the pairs' totals summed with the counts, kept on the card)
  and 3 for both (the rows' placing and the pairs' counting in one: ``place_rows_count_sides``);
  none for a split whose children are never searched, when nothing reads the order.
- :mod:`.pruning` (:mod:`._pruning_kernels`): ``ole_fast``'s pruning, per tree 3 launches
  after the grids (``query_masses``; a stable kept | dropped partition that makes each query's cut
  as it counts and places its pairs), nothing read, and its dropped couplings per leaf and per side
  of each leaf's split (``leaf_map``, ``dropped_leaf_sums``, 2 launches) with the search after which
  at most one split is left: read with it.

**Orchestration and instrumentation** (issue 32, items 3-4):

- One pool per fit (:class:`~customobj.ole.cuda.pool.DevicePool`), made before the first tree and
  counted by the memory refusal: node histograms, row order, group tables, masks; the pair buffers
  grow only in a tree with more pairs than every earlier one. The row order stays on the card
  between trees and comes back only when the host needs it (host gradients, the joint solve).
- Blocking reads: a split's two children's splits, at once (:meth:`CUDABackend.find_splits`),
  with a root's sums (:meth:`CUDABackend.searched_root_sums`) or the split's pair counts (the
  children's pair ranges; the pair partition reads nothing, :meth:`CUDABackend.split_pairs`, and a
  split whose children are never split partitions no pairs). ``ole_fast`` chooses each node's
  features on the device (:mod:`.choice`, :meth:`CUDABackend.fast_splits`: no read of the WSE
  gains) and builds its children's pair histograms from counts that stay there (``chosen_child_pairs``);
  its pruning's kept count comes back with the root's split, its leaves' dropped couplings with
  the tree's last search (:mod:`.inputs`; a tree that stops before it reads them once).
  A row partition reads nothing (the split has its left count). The children's couplings ``C``
  are the split's (exact on the grid: :mod:`.grower`): nothing sums or reads them.
- Every launch (:class:`~customobj.ole.cuda.stats.CountedKernels`), read, allocation and copy is
  counted (:class:`~customobj.ole.cuda.stats.DeviceCounter`): ``TreeBooster.device_stats_``, per
  tree and per split, the same under the simulator and on a card. Per split, 6-leaf trees on 300
  rows (tests/test_ole_cuda_stats.py), against issue 32's budget
  (:data:`~customobj.ole.cuda.stats.BUDGET`: 8 launches, 1 read): ``se`` and ``wse`` 5.0
  launches and 1.0 read (partition 1.6, search 1, histogram 1, subtraction 0.8, the tree's grid
  0.6); ``ole`` 6.0 and 1.0 (partition 2.4, search 1, histograms 1.2: the children's 0.8, the
  root's 0.4, subtraction 0.8, grids 0.6); ``ole_fast`` 7.93 and 1.0 (partition 2.4, feature
  choice 1, row histogram 1, pair histograms 0.93, search 1, grids 0.6, pruning 0.6, dropped
  couplings 0.4). No tree after the first allocates.

Before a fit uses the device, :func:`~customobj.ole.cuda.memory.check_device_memory` compares what it
needs (:func:`~customobj.ole.cuda.memory.device_memory_needed`) with the card's free memory and refuses
with the numbers (:class:`~customobj.ole.cuda.memory.DeviceMemoryError`); the pairs are checked again
each tree. ``TreeBooster.device_memory_peak_`` is the peak of what the fit held.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..._cuda_runtime import is_device_array, require_gpu
from ._reduce_kernels import QueryTops
from ..backend import PairCounts
from ..common import HIST_COUNT, NODE_SUMS, PAIR_COUNTS, SPLIT_SIZE, ChildSums, SplitInfo
from ..context import GrowContext
from .memory import (DeviceMemory, DeviceMemoryError, check_device_memory, device_memory_needed,
                          free_device_memory)
from .histograms import DeviceHistograms
from .partitions import DevicePairCounts, DevicePartitions
from .pool import DevicePool, hists_per_tree
from .choice import DeviceFeatureChoice
from .pruning import DevicePruning
from .search import DeviceSearch
from .stats import CountedKernels, DeviceStats
from .inputs import CUDATreeInputs
from ..splitting import FeatureBins

__all__ = ["CUDABackend", "DeviceMemoryError", "device_memory_needed", "check_device_memory", "free_device_memory"]

_WHAT = 'TreeBooster(device="cuda")'


class CUDABackend(CUDATreeInputs):
    """The grower's kernels on the GPU (see the module docstring for what is where).

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

    Raises
    ------
    GPUUnavailableError
        No usable GPU (no ``numba-cuda``, driver or device: the message says which).
    DeviceMemoryError
        The binned matrix, gradients and histograms do not fit the device's free memory.
    """

    def __init__(self, ctx: GrowContext, params) -> None:
        self._cuda = require_gpu(_WHAT)
        super().__init__(ctx, params)
        from . import (_histograms_kernels, _search_kernels, _partitions_kernels, _reduce_kernels,
                       _choice_kernels, _split_kernels)

        d = ctx.data
        n_feat = d.feature_major.shape[0]
        self._shape = dict(n_rows=d.n_rows, n_features=n_feat, bin_itemsize=d.feature_major.dtype.itemsize,
                           n_slots=d.n_slots, index_itemsize=np.dtype(d.index_dtype()).itemsize,
                           n_hists=hists_per_tree(params.num_leaves))
        need = {**device_memory_needed(**self._shape), **DevicePruning.memory_for_fit(ctx, params)}
        check_device_memory(need, free=free_device_memory())
        # what this fit keeps on the device from here on: later checks count it as theirs, not as taken
        self._resident = need["bins"] + need["histograms"] + need.get("pair pruning", 0)
        mem = self.memory = DeviceMemory(self._cuda)
        counter = mem.counter  # every launch, allocation and read of the fit (stats)
        self._k, self._ks, self._kp, self._kn, self._kr = (CountedKernels(m, counter) for m in (
            _histograms_kernels, _split_kernels, _partitions_kernels, _search_kernels,
            _reduce_kernels))
        self._joint = bool(params.joint_leaves)
        self._bins = mem.upload(d.feature_major)
        self._bins_rm = mem.upload(np.ascontiguousarray(d.feature_major.T))  # coalesced histogram reads
        self._offsets = mem.upload(np.asarray(d.offsets, dtype=np.int64))
        self._n_bins = np.ascontiguousarray(d.n_bins, dtype=np.int64)
        self._n_bins_d = mem.upload(self._n_bins)
        self._bins_d = FeatureBins(self._n_bins_d, self._offsets)  # the split kernels' record, on the device
        self.pool = DevicePool(mem, n_rows=d.n_rows, n_features=n_feat, n_slots=d.n_slots,
                               n_hists=self._shape["n_hists"])
        # the node histograms (histograms), a split's parent -= child and children's completion in one launch
        self._hists = DeviceHistograms(mem, self._k, self._ks, self.pool, self._bins_rm, d.offsets, self._n_bins)
        # the split search: a split's two children in one launch, their splits in one read (search)
        self._search = DeviceSearch(mem, self._ks, self._kn, self.pool, self._bins_d, n_features=n_feat,
                                    has_nan=bool(np.any(d.mapper.has_nan)),
                                    tail=3 * params.num_leaves if params.criterion.prunes_pairs else 0)
        self._choice = DeviceFeatureChoice(mem, CountedKernels(_choice_kernels, counter), self.pool,
                                           n_features=n_feat, n_slots=d.n_slots)
        # the grids (fixed_point) of a tree's rows and pairs: stats [max|a|, max|b|, step a, step b] and
        # int64 unit sums; the root's G, H (the rows' exact sums) and C (the pairs'): _begin_tree
        # a searched root's sums stay on the device until its split is read (root_sums): C when known here
        self._root_pending, self._root_c = False, None  # type: bool, Optional[float]
        self._gh = mem.array((2, max(d.n_rows, 1)), np.float64)  # the tree's g and h on their grids
        self._pc_sum: Optional[tuple] = None  # (the tree's device couplings, their sum or None: in _root[2])
        self._parts = DevicePartitions(mem, self._kp, self._kr, self._k.zero, n_rows=d.n_rows)
        self._no_idx = mem.array((1,), np.int64)
        self._clear_pool = False
        self._rows_gridded = False
        i32, i64, f64 = (mem.array((1,), t) for t in (np.int32, np.int64, np.float64))
        self._no_tops = QueryTops(i32, i64, i32, i64, f64, False)  # grid_round's when no pruning rides along
        self._grad: Any = None
        self._hess: Any = None
        self._order: Any = None  # the tree's row order on the device (the pool's)
        self._scores_on_device = False
        self._in_tree = False
        self._pairs_pending: Optional[DevicePairCounts] = None  # the last pair partition's counts, on the card
        self._pruning = DevicePruning.for_fit(mem, ctx, params)  # ole_fast's, or None
        # ole_fast's dropped couplings summed with the tree's last search: planned, launched, read
        self._plan: Optional[tuple] = None
        self._planned_got: Optional[np.ndarray] = None

    # --- histograms on the device: they stay there (DeviceHist), in the pool ----------------------------
    def row_hist(self, order: np.ndarray, start: int, end: int, grad, hess, root: bool = False) -> Any:
        """``(slots, 3)`` histogram [g, h, count] of the rows ``order[start:end]``, built and kept on
        the device from the on-grid gradients :meth:`root_sums` made (``grad``, ``hess`` are their sources)."""
        if self._grad is None or self._order is None:
            raise RuntimeError("CUDABackend.row_hist before row_sums: the tree's gradients are not on the device")
        self._parts.flush()  # the last row partition placed
        # the device order (the host's ``order`` is only read at the end); a child's waits for its pairs'
        return self._hists.rows(self._order[start:end], end - start, self._gh, self._rstats[2:4], root=root)

    def pair_hist(self, buf: tuple, start: int, end: int, features: Optional[np.ndarray] = None) -> Any:
        """``(slots, 3)`` pair histogram [hi, nanp, R] of the pairs ``buf[start:end]``, built and kept
        on the device (all features, or only ``features``: the other slots are 0)."""
        feats = None if features is None else np.unique(np.asarray(features, dtype=np.int64))
        n_feat = self._hists.all_features.size
        if feats is not None and feats.size and (feats[0] < 0 or feats[-1] >= n_feat):
            raise ValueError(f"features must be in [0, {n_feat}), got {feats[0]}..{feats[-1]}")
        return self._hists.pairs(buf, start, end - start, self._pstats[2:4], feats)

    # --- split search on the device: only the chosen splits come back -------------------------------------
    def find_split(self, hist: Any, phist: Any, mask: np.ndarray, sums: ChildSums) -> SplitInfo:
        """The best split of a node from its device histograms (see :meth:`find_splits`)."""
        return self.find_splits([(hist, phist, mask, sums)])[0]

    def find_splits(self, searches: list) -> list:
        """The best splits of up to two nodes (a split's children), each ``(hist, phist, mask, sums)``:
        one launch and one read (:class:`~customobj.ole.cuda.search.DeviceSearch`); each split's NaN
        count goes to its node's histogram, a searched root's sums to :meth:`searched_root_sums`."""
        if not searches:
            return []
        if len(searches) > 2 or len({s[1] is None for s in searches}) > 1:
            return self.find_splits(searches[:1]) + self.find_splits(searches[1:])
        on_device = [(h.array, None if ph is None else ph.array, mask, sums) for h, ph, mask, sums in searches]
        pending, self._pairs_pending = self._pairs_pending, None  # the children's pair counts come with them
        if pending is not None and pending.known:
            pending = None
        planned = self._planned_sums()
        res = self._search.splits(on_device, self.rules, self._root, self._root_pending,
                                  None if pending is None else pending.record,
                                  *(planned if planned is not None else (None, 0)))
        if planned is not None:
            self._planned_got = self._search.tail_values
        if pending is not None:
            pending.arrived(res[0, PAIR_COUNTS], res[0, PAIR_COUNTS + 1])
        if self._root_pending:  # the root's search: its sums came with its split
            G, H, C = (float(v) for v in res[0][NODE_SUMS:NODE_SUMS + 3])
            self._root_sums = (G, H, C if self._root_c is None else float(self._root_c))
            self._root_pending = False
        out = []
        for (hist, _, _, _), r in zip(searches, res):
            split = SplitInfo.from_array(r[:SPLIT_SIZE])
            if split.feature >= 0 and self.data.mapper.has_nan[split.feature]:
                hist.known(self.data.offsets[split.feature] + int(self._n_bins[split.feature]), HIST_COUNT,
                           float(r[SPLIT_SIZE]))
            out.append(split)
        return out

    def wse_gains(self, hist: Any, mask: np.ndarray, sums: ChildSums, out: np.ndarray) -> np.ndarray:
        """``out[f]``: feature ``f``'s best WSE gain at the node (0 outside ``mask``), searched on the device."""
        out[:] = self._search.wse_gains([(hist.array, sums)], mask, self.rules, self._root, self._root_pending)[0]
        return out

    def fast_splits(self, searches: list, mask: np.ndarray, k: int) -> list:
        """``ole_fast``'s splits of up to two nodes (``(hist, NodePairs, sums)`` each), chosen on the
        device (:mod:`.choice`: WSE gains, top ``k`` features and their groups, pair histograms
        from counts that stay there, the OLE search): one read, the splits (and the counts)."""
        if len(searches) > 2:
            return self.fast_splits(searches[:2], mask, k) + self.fast_splits(searches[2:], mask, k)
        if not searches:
            return []
        # the larger child's parent - smaller runs in the choice's launch (a leaf never split: dropped)
        sub = self._hists.queue.take([s[0] for s in searches], drop_others=True)
        bound = self._choice.choose(self._search, [(s[0].array, s[2]) for s in searches], mask, k, self.rules,
                                    self._root, self._root_pending, sub)
        phists = self._choice.pair_hists(self._hists, [s[1] for s in searches], self._pstats[2:4], bound)
        return self.find_splits([(s[0], ph, None, s[2]) for s, ph in zip(searches, phists)])  # masks: the pool's

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
        return DeviceScores(self.memory, self._bins, self._n_bins_d, obj, prep, scores, index)

    def device_memory_peak(self) -> Optional[int]:
        """Bytes the fit held on the device at its peak (:class:`DeviceMemory`)."""
        self.memory.sample()
        return self.memory.peak

    def device_stats(self) -> Optional[DeviceStats]:
        """What the fit asked of the card, per tree (:mod:`.stats`)."""
        return self.memory.counter.stats()

    # --- partitions and coupling sums on the device (partitions) --------------------------------------
    def partition_rows(self, order: np.ndarray, start: int, end: int, split: SplitInfo, nan_left: bool, *,
                       children_searched: bool = True) -> int:
        """Reorder the device order's ``[start:end]`` as [left | right] by ``split`` (stable: the CPU's
        order), mark each row's side there; the left count, which is the split's (its histogram
        counts are exact), so nothing is read back. ``order`` (host) is brought up to date by
        :meth:`row_order` when the host needs it. Nothing is launched for a split whose children are
        never searched when nothing else reads the order (the scores on the card, no joint solve,
        ``ole_fast``'s leaf couplings summed already)."""
        f = split.feature
        self.memory.counter.split()
        nl = int(split.left.N)
        if (not children_searched and self._scores_on_device and not self._joint
                and (self._pruning is None or self._planned_got is not None)):
            return nl
        self._parts.rows(self._bins[f], self._order, start, end - start, split.bin, int(self._n_bins[f]), nan_left, nl)
        return nl

    def row_order(self, order: np.ndarray) -> Optional[np.ndarray]:
        """The finished tree's row order, copied from the device into ``order`` when the host needs it
        (its scores, the joint leaf solve); else None: it stays on the card."""
        self._hists.queue.flush()  # none is left to a later tree
        self._parts.flush()
        self._in_tree = False
        if self._pruning is None or not self._pruning.pending:  # else the tree ends with dropped_couplings
            self.memory.counter.end_tree()
        if self._scores_on_device and not self._joint:
            return None
        order[:] = self.memory.read(self._order)
        return order

    def split_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> PairCounts:
        """Copy the device pairs ``src[start:end]`` to ``dst``, stably ordered [both left | both right |
        split] by the last :meth:`partition_rows`; their counts stay on the card until the children's
        splits bring them back (:meth:`find_splits`; :class:`~customobj.ole.cuda.partitions.DevicePairCounts`)."""
        self._pairs_pending = self._parts.pairs(src, start, end, dst)
        return self._pairs_pending

    def child_pair_hists(self, buf: tuple, start: int, end: int, pairs: PairCounts, parent: Any, rows: tuple,
                         need: tuple) -> tuple:
        """The children's pair histograms ``(left, right)`` (see the CPU's), planned and built in one launch
        from the counts on the card with the smaller child's waiting row histogram
        (:meth:`~customobj.ole.cuda.histograms.DeviceHistograms.children`), the larger's subtraction queued
        with the split's rows': nothing is read."""
        assert isinstance(pairs, DevicePairCounts)  # split_pairs'
        return self._hists.children(buf, start, end, pairs.record, parent, rows, need, self._pstats[2:4])

    def partition_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> tuple:
        """:meth:`split_pairs`' counts ``(n_left, n_right)``."""
        return self.split_pairs(src, start, end, dst).counts

    def sum_couplings(self, pc, start: int, end: int) -> float:
        """The coupling of the pairs ``start:end`` (on their grid: exact, the CPU's bits)."""
        if not is_device_array(pc):
            return super().sum_couplings(pc, start, end)
        return self._parts.coupling_sum(pc, start, end)
