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
from ..backend import CPUBackend, PairCounts
from ..common import HIST_COUNT, NODE_SUMS, PAIR_COUNTS, SPLIT_SIZE, ChildSums, SplitInfo
from ..context import GrowContext
from ..splitting import FeatureBins, SplitRules
from .choice import DeviceFeatureChoice
from .histograms import DeviceHistograms
from .inputs import TreeInputs
from .memory import (DeviceMemory, DeviceMemoryError, check_device_memory, device_memory_needed,
                     free_device_memory)
from .partitions import DevicePairCounts, DevicePartitions
from .pool import DevicePool, hists_per_tree
from .pruning import DevicePruning
from .search import DeviceSearch
from .stats import CountedKernels, DeviceStats

__all__ = ["CUDABackend", "DeviceMemoryError", "device_memory_needed", "check_device_memory", "free_device_memory"]

_WHAT = 'TreeBooster(device="cuda")'


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

    Raises
    ------
    GPUUnavailableError
        No usable GPU (no ``numba-cuda``, driver or device: the message says which).
    DeviceMemoryError
        The binned matrix, gradients and histograms do not fit the device's free memory.
    """

    def __init__(self, ctx: GrowContext, params) -> None:
        cuda = require_gpu(_WHAT)
        from . import (_choice_kernels, _histograms_kernels, _partitions_kernels, _reduce_kernels, _search_kernels,
                       _split_kernels)

        self.host = CPUBackend(ctx, params)
        self.ctx, self.data, self.n_rows = ctx, ctx.data, ctx.data.n_rows
        self.gradients_where: Optional[str] = None
        d = ctx.data
        n_feat = d.feature_major.shape[0]
        shape = dict(n_rows=d.n_rows, n_features=n_feat, bin_itemsize=d.feature_major.dtype.itemsize,
                     n_slots=d.n_slots, index_itemsize=np.dtype(d.index_dtype()).itemsize,
                     n_hists=hists_per_tree(params.num_leaves))
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
        self._bins = mem.upload(d.feature_major)
        bins_rm = mem.upload(np.ascontiguousarray(d.feature_major.T))  # coalesced histogram reads
        offsets = mem.upload(np.asarray(d.offsets, dtype=np.int64))
        self._n_bins = np.ascontiguousarray(d.n_bins, dtype=np.int64)
        self._n_bins_d = mem.upload(self._n_bins)
        self.pool = DevicePool(mem, n_rows=d.n_rows, n_features=n_feat, n_slots=d.n_slots, n_hists=shape["n_hists"])
        # the node histograms, a split's parent -= child and children's completion in one launch
        self.histograms = DeviceHistograms(mem, histogram_kernels, split_kernels, self.pool, bins_rm, d.offsets,
                                           self._n_bins)
        # the split search: a split's two children in one launch, their splits in one read
        self.search = DeviceSearch(mem, split_kernels, search_kernels, self.pool,
                                   FeatureBins(self._n_bins_d, offsets), n_features=n_feat,
                                   has_nan=bool(np.any(d.mapper.has_nan)),
                                   tail=3 * params.num_leaves if params.criterion.prunes_pairs else 0)
        self.choice = DeviceFeatureChoice(mem, CountedKernels(_choice_kernels, counter), self.pool,
                                          n_features=n_feat, n_slots=d.n_slots)
        self.partitions = DevicePartitions(mem, partition_kernels, reduce_kernels, histogram_kernels.zero,
                                           n_rows=d.n_rows)
        self.pruning = DevicePruning.for_fit(mem, ctx, params)  # ole_fast's, or None
        self.inputs = TreeInputs(mem, self.pool, self.histograms, self.partitions, self.search, self.pruning,
                                 reduce_kernels, histogram_kernels.zero, self._bins, self._n_bins_d, shape=shape,
                                 resident=resident)
        self._scores_on_device = False
        self._pairs_pending: Optional[DevicePairCounts] = None  # the last pair partition's counts, on the card

    @property
    def rules(self) -> SplitRules:
        """The split search's record of the fit's score and constraints (the host's)."""
        return self.host.rules

    # --- a tree's gradients, couplings and root sums on the card (inputs) ---------------------------------
    def row_sums(self, order: np.ndarray, grad, hess) -> tuple:
        """``(sum g, sum h)`` over ``order`` (:meth:`TreeInputs.row_sums`)."""
        return self.inputs.row_sums(order, grad, hess)

    def root_sums(self, order: np.ndarray, grad, hess, pc, n_pairs: int, *, searched: bool = False
                  ) -> Optional[tuple]:
        """The tree's root ``(G, H, C)``, or None when the root is ``searched``: they come with its split
        (:meth:`TreeInputs.root_sums`)."""
        return self.inputs.root_sums(order, grad, hess, pc, n_pairs, searched=searched)

    def searched_root_sums(self) -> tuple:
        """The root's ``(G, H, C)``, read with the root's split."""
        return self.inputs.searched_root_sums()

    def round_pairs(self, pc, rows: Optional[tuple] = None, pi: Any = None) -> None:
        """The tree's couplings onto their grid where they are (:meth:`TreeInputs.round_pairs`)."""
        self.inputs.round_pairs(pc, rows, pi)

    def pair_buffers(self, pairs: tuple, rows: Optional[tuple] = None) -> tuple:
        """The tree's two pair buffers on the device, their couplings (and, with ``rows``, the rows) on
        their grids (:meth:`TreeInputs.pair_buffers`)."""
        return self.inputs.pair_buffers(pairs, rows)

    def prune_pairs(self, bufs: tuple) -> tuple:
        """``ole_fast``'s pruning on the card (:meth:`TreeInputs.prune_pairs`); the kept count comes
        back with the root's split."""
        bufs, dropped, kept = self.inputs.prune_pairs(bufs)
        if kept is not None:
            self._pairs_pending = kept
        return bufs, dropped, kept

    def plan_leaf_couplings(self, leaves: list, dropped) -> None:
        """The leaves' dropped couplings summed with the next search (:meth:`TreeInputs.plan_leaf_couplings`)."""
        self.inputs.plan_leaf_couplings(leaves, dropped)

    def dropped_couplings(self, order: np.ndarray, ranges: list, dropped, sources: Optional[list] = None) -> np.ndarray:
        """Per leaf the coupling of its dropped pairs (:meth:`TreeInputs.dropped_couplings`)."""
        return self.inputs.dropped_couplings(order, ranges, dropped, sources)

    # --- histograms on the device: they stay there (DeviceHist), in the pool ----------------------------
    def row_hist(self, order: np.ndarray, start: int, end: int, grad, hess, root: bool = False) -> Any:
        """``(slots, 3)`` histogram [g, h, count] of the rows ``order[start:end]``, built and kept on
        the device from the on-grid gradients :meth:`root_sums` made (``grad``, ``hess`` are their sources)."""
        if self.inputs.grad is None or self.inputs.order is None:
            raise RuntimeError("CUDABackend.row_hist before row_sums: the tree's gradients are not on the device")
        self.partitions.flush()  # the last row partition placed
        # the device order (the host's ``order`` is only read at the end); a child's waits for its pairs'
        rows = self.inputs
        return self.histograms.rows(rows.order[start:end], end - start, rows.gh, rows.row_stats[2:4], root=root,
                                    pairs=rows.root_pairs() if root else None)

    def pair_hist(self, buf: tuple, start: int, end: int, features: Optional[np.ndarray] = None) -> Any:
        """``(slots, 3)`` pair histogram [hi, nanp, R] of the pairs ``buf[start:end]``, built and kept
        on the device (all features, or only ``features``: the other slots are 0)."""
        feats = None if features is None else np.unique(np.asarray(features, dtype=np.int64))
        n_feat = self.histograms.all_features.size
        if feats is not None and feats.size and (feats[0] < 0 or feats[-1] >= n_feat):
            raise ValueError(f"features must be in [0, {n_feat}), got {feats[0]}..{feats[-1]}")
        # the root's (the grower's only one): R from the tree's rows
        return self.histograms.pairs(buf, start, end - start, self.inputs.pair_stats[2:4], self.inputs.root_rows(),
                                     feats)

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
        planned = self.inputs.planned_sums()
        res = self.search.splits(on_device, self.rules, self.inputs.root, self.inputs.root_pending,
                                 None if pending is None else pending.record,
                                 *(planned if planned is not None else (None, 0)))
        if planned is not None:
            self.inputs.planned_got = self.search.tail_values
        if pending is not None:
            pending.arrived(res[0, PAIR_COUNTS], res[0, PAIR_COUNTS + 1])
        if self.inputs.root_pending:  # the root's search: its sums came with its split
            self.inputs.found_root(res[0][NODE_SUMS:NODE_SUMS + 3])
        out = []
        for (hist, _, _, _), r in zip(searches, res):
            split = SplitInfo.from_array(r[:SPLIT_SIZE])
            if split.feature >= 0 and self.data.mapper.has_nan[split.feature]:
                hist.known(self.data.offsets[split.feature] + int(self._n_bins[split.feature]), HIST_COUNT,
                           float(r[SPLIT_SIZE]))
            out.append(split)
        return out

    def split_gain(self, parent: ChildSums, left: ChildSums, right: ChildSums) -> float:
        """``score(left) + score(right) - score(parent)`` from the children's exact sums, on the host."""
        return self.host.split_gain(parent, left, right)

    def wse_gains(self, hist: Any, mask: np.ndarray, sums: ChildSums, out: np.ndarray) -> np.ndarray:
        """``out[f]``: feature ``f``'s best WSE gain at the node (0 outside ``mask``), searched on the device."""
        out[:] = self.search.wse_gains([(hist.array, sums)], mask, self.rules, self.inputs.root,
                                       self.inputs.root_pending)[0]
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
        sub = self.histograms.queue.take([s[0] for s in searches], drop_others=True)
        bound = self.choice.choose(self.search, [(s[0].array, s[2]) for s in searches], mask, k, self.rules,
                                   self.inputs.root, self.inputs.root_pending, sub)
        nodes = [s[1] for s in searches]
        rows = self.partitions.node_rows(self.inputs.order, [p.side for p in nodes], self.inputs.root_rows())
        phists = self.choice.pair_hists(self.histograms, nodes, self.inputs.pair_stats[2:4], bound, rows)
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
                and (self.pruning is None or self.inputs.planned_got is not None)):
            return nl
        self.partitions.rows(self._bins[f], self.inputs.order, start, end - start, split.bin, int(self._n_bins[f]),
                             nan_left, nl)
        return nl

    def row_order(self, order: np.ndarray) -> Optional[np.ndarray]:
        """The finished tree's row order, copied from the device into ``order`` when the host needs it
        (its scores, the joint leaf solve); else None: it stays on the card."""
        self.histograms.queue.flush()  # none is left to a later tree
        self.partitions.flush()
        self.inputs.end_tree()
        if self.pruning is None or not self.pruning.pending:  # else the tree ends with dropped_couplings
            self.memory.counter.end_tree()
        if self._scores_on_device and not self._joint:
            return None
        order[:] = self.memory.read(self.inputs.order)
        return order

    def split_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> PairCounts:
        """Copy the device pairs ``src[start:end]`` to ``dst``, stably ordered [both left | both right |
        split] by the last :meth:`partition_rows`; their counts stay on the card until the children's
        splits bring them back (:meth:`find_splits`; :class:`~customobj.ole.cuda.partitions.DevicePairCounts`)."""
        self._pairs_pending = self.partitions.pairs(src, start, end, dst)
        return self._pairs_pending

    def child_pair_hists(self, buf: tuple, start: int, end: int, pairs: PairCounts, parent: Any, rows: tuple,
                         need: tuple) -> tuple:
        """The children's pair histograms ``(left, right)`` (see the CPU's), planned and built in one launch
        from the counts on the card with the smaller child's waiting row histogram
        (:meth:`~customobj.ole.cuda.histograms.DeviceHistograms.children`), the larger's subtraction queued
        with the split's rows': nothing is read."""
        assert isinstance(pairs, DevicePairCounts)  # split_pairs'
        nodes = self.partitions.node_rows(self.inputs.order, [0, 1], self.inputs.root_rows())
        return self.histograms.children(buf, start, end, pairs.record, parent, rows, need,
                                        self.inputs.pair_stats[2:4], tuple(nodes))

    def partition_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> tuple:
        """:meth:`split_pairs`' counts ``(n_left, n_right)``."""
        return self.split_pairs(src, start, end, dst).counts

    def sum_couplings(self, pc, start: int, end: int) -> float:
        """The coupling of the pairs ``start:end`` (on their grid: exact, the CPU's bits)."""
        if not is_device_array(pc):
            return self.host.sum_couplings(pc, start, end)
        return self.partitions.coupling_sum(pc, start, end)
