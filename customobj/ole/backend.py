"""The grower's device seam: a tree begun, its leaves expanded in batches, the tree ended.

:class:`~customobj.ole.grower.TreeGrower` keeps the tree's bookkeeping (leaves, open splits, nodes)
in Python and hands the backend it is given the work, as XGBoost's driver hands its device a batch
of independent nodes and gets their splits back. One backend is created per fit
(:func:`customobj.ole.training.boost`) and serves every tree of it. :class:`CPUBackend` runs the
numba kernels of this package and answers at once; the GPU's
:class:`~customobj.ole.cuda.backend.CUDABackend` keeps its leaf table, histograms and pair counts on
the card and plans its reads itself. Both give the same results: the same splits, ties broken the
same way, the same sums.

The seam, typed by the :class:`TreeBackend` protocol:

- ``begin_tree(order, grad, hess, pairs, feature_mask, searched=)``: a tree on the rows ``order``
  (int64, reordered by the backend as the tree grows) with their gradients, hessians and, for a
  criterion on pairs, the in-bag pairs ``(pi, pj, pc)`` (overwritten); returns the root's sums and,
  when ``searched``, its best split (a :class:`TreeStart`);
- ``expand(batch)``: split the leaves of ``batch`` (each an :class:`Expansion`: the leaf, its split
  and which of its children are searched), in order; each split's left child keeps the leaf's index,
  its right child gets the next one (:mod:`.leaf_table`). Returns per expansion an
  :class:`Expanded`: where the split sends NaN, its gain from the children's exact sums and the
  searched children's best splits (``NO_SPLIT`` for the others);
- ``end_tree(spans=None)``: where the training rows ended up and, for ``ole_fast``, each leaf's
  coupling of the pairs its search left out (a :class:`TreeRows`), per leaf of the table or, with
  ``spans``, per leaf of the tree: ``(first, last)`` of the table, the leaf itself or the first and
  last leaf of what the grower expanded under it ahead and never split in the tree (best-first
  lookahead, ``lookahead`` > 1: a backend whose answers cost a read is handed the leaves best-first
  will probably split next with the one it splits now, :mod:`.grower`);
- per fit: ``device_scores`` (the scores kept on the device, or None: the CPU keeps them on the
  host), ``device_memory_peak`` and ``device_stats`` (None on the CPU), ``data`` (the binned
  training set's description), ``n_rows``, ``gradients_where``.

Sums are exact: each tree's gradients, hessians and couplings are rounded to a power-of-two grid
first (:mod:`.fixed_point`), so every backend adds the same bits.
"""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Protocol

import numpy as np

from .._kernel_status import split_found
from .common import HIST_COUNT, NO_SPLIT, PH_CHANNELS, SPLIT_SIZE, ChildSums, SplitInfo
from .context import BinnedData, GrowContext
from .criterion import SplitScore, WSE
from .fixed_point import grid_step_of, grid_step_of_rows, round_range, round_rows
from .histogram import build_row_hist_fm
from .leaf_table import LeafRows, LeafTable, NodePairs, PairCounts, nan_goes_left, select_features
from .pair_pruning import Dropped, dropped_leaf_couplings, prune_for_tree
from .pair_partition import partition_pairs, sum_couplings
from .pairhist import PAIRS_DIRECT, PAIRS_LEFT_SMALL, build_pair_hist, pair_hist_plan
from .partition import partition_rows
from .splitting import (FeatureBins, SplitRules, feature_gains, find_best_split, find_best_split_parallel,
                        split_gain)

__all__ = ["CPUBackend", "Expanded", "Expansion", "NodePairs", "PairCounts", "PARALLEL_SLOTS", "TreeBackend",
           "TreeRows", "TreeStart", "select_features"]

#: Histogram slots from which the split search runs in parallel: a search over few slots is
#: cheaper than waking the thread team (see partition.PARALLEL_ROWS).
PARALLEL_SLOTS = 32768


def _node(sums: ChildSums, with_c: bool = True) -> ChildSums:
    """A node's sums as the split kernels' record: four floats (one compiled type), ``C`` 0 for WSE."""
    return ChildSums(float(sums.G), float(sums.H), float(sums.N), float(sums.C) if with_c else 0.0)


class TreeStart(NamedTuple):
    """``begin_tree``'s answer: the root's sums ``(G, H, N, C)`` and its best split (``NO_SPLIT`` when
    it is not searched)."""
    sums: ChildSums
    split: SplitInfo


class Expansion(NamedTuple):
    """A leaf to split: its index, the split (its children's sums are the split's) and whether each
    child (left, right) is searched for a split of its own."""
    leaf: int
    split: SplitInfo
    need: tuple


class Expanded(NamedTuple):
    """An expansion's answer: where the split sends NaN, its gain from its children's exact sums
    (under a criterion on pairs; else the search's) and its children's best splits."""
    nan_left: bool
    gain: float
    left: SplitInfo
    right: SplitInfo


class TreeRows(NamedTuple):
    """``end_tree``'s answer: leaf ``l`` holds the rows ``order[starts[l]:ends[l]]`` (``order`` None when
    it stayed on a device: nothing on the host needs it); ``dropped``: each leaf's coupling of the
    pairs ``ole_fast`` left out of its search (None when none were)."""
    order: Optional[np.ndarray]
    starts: np.ndarray
    ends: np.ndarray
    dropped: Optional[np.ndarray]


class TreeBackend(Protocol):
    """The seam between :class:`~customobj.ole.grower.TreeGrower` (and the boosting loop) and the
    kernels: what :class:`CPUBackend` and the GPU's :class:`~customobj.ole.cuda.backend.CUDABackend`
    both provide (the module docstring says what each method promises)."""

    data: BinnedData
    n_rows: int
    gradients_where: Optional[str]
    lookahead: int

    def device_scores(self, obj: Any, prep: Any, scores: np.ndarray, need_pairs: bool, line_search: bool, *,
                      pairs_on_host: Optional[str] = None) -> Any: ...

    def device_memory_peak(self) -> Optional[int]: ...

    def device_stats(self) -> Optional[tuple]: ...

    def begin_tree(self, order: np.ndarray, grad: Any, hess: Any, pairs: Optional[tuple], feature_mask: np.ndarray,
                   *, searched: bool) -> TreeStart: ...

    def expand(self, batch: List[Expansion]) -> List[Expanded]: ...

    def end_tree(self, spans: Optional[list] = None) -> TreeRows: ...


class CPUBackend:
    """The numba kernels behind the grower, for one fit (see the module docstring for the contract).

    Parameters
    ----------
    ctx : GrowContext
        The fit's binned data, scratch arrays and pair buffers.
    params : GrowParams
        The grower's options: the criterion (its :class:`~customobj.ole.criterion.SplitScore`,
        validated here once) and the split constraints ``lambda_l2``, ``min_data_in_leaf``,
        ``min_sum_hessian_in_leaf``.
    """

    #: Where a device fit's gradients ran ("device" or "host: <why>"); None on the CPU.
    gradients_where: Optional[str] = None
    #: Best-first leaves expanded per batch at most (:mod:`.grower`): 1, each answer is at once here.
    lookahead: int = 1

    def __init__(self, ctx: GrowContext, params) -> None:
        self.ctx, self.data = ctx, ctx.data
        self.n_rows = ctx.data.n_rows
        self.criterion = params.criterion
        self.score = int(SplitScore(params.criterion.score))  # the kernels' code, checked at the boundary
        self.lam = float(params.lambda_l2)
        self.min_data = float(params.min_data_in_leaf)
        self.min_hess = float(params.min_sum_hessian_in_leaf)
        self._find = find_best_split_parallel if self.data.n_slots >= PARALLEL_SLOTS else find_best_split
        self.bins_rec = FeatureBins(self.data.n_bins, self.data.offsets)  # the split search's record of the slots
        self._no_pair_hist = np.zeros((1, PH_CHANNELS))
        self._gh_grid: Optional[np.ndarray] = None  # (2, rows): the tree's g and h on their grids (row_sums)
        self._gh_src: Optional[tuple] = None  # the arrays they were rounded from
        self._tree: Optional[_HostTree] = None  # the tree begun and not ended

    @property
    def rules(self) -> SplitRules:
        """The split search's record of the fit's score and constraints (splitting.py)."""
        return SplitRules(self.score, self.lam, self.min_data, self.min_hess)

    def device_scores(self, obj, prep, scores: np.ndarray, need_pairs: bool, line_search: bool, *,
                      pairs_on_host: Optional[str] = None):
        """The fit's scores kept on the device (a GPU backend's
        :class:`~customobj.ole.cuda.scores.DeviceScores`), or None: here they stay on the host."""
        return None

    def device_memory_peak(self) -> Optional[int]:
        """Bytes the fit held on the device at its peak: None on the CPU."""
        return None

    def device_stats(self) -> Optional[tuple]:
        """What the fit asked of the device (:class:`~customobj.ole.cuda.stats.DeviceStats`): None on the CPU."""
        return None

    # --- the seam: a tree begun, expanded, ended -----------------------------------------------------
    def begin_tree(self, order: np.ndarray, grad: np.ndarray, hess: np.ndarray, pairs: Optional[tuple],
                   feature_mask: np.ndarray, *, searched: bool) -> TreeStart:
        """A tree on the rows ``order`` (see the module docstring): its pairs on their grid (and pruned for
        ``ole_fast``), the root's sums and, when ``searched``, its histograms and best split."""
        tree = self._tree = _HostTree(self, order, grad, hess, pairs, feature_mask)
        return tree.start(searched)

    def expand(self, batch: List[Expansion]) -> List[Expanded]:
        """Split each leaf of ``batch`` in order: partition its rows (and pairs), build its searched
        children's histograms (the smaller's, the larger's by subtraction) and search them."""
        tree = self._current()
        return [tree.expand(e) for e in batch]

    def end_tree(self, spans: Optional[list] = None) -> TreeRows:
        """The grown tree's rows per leaf and, for ``ole_fast``, its leaves' dropped couplings
        (``spans``: the tree's leaves in the table's, :meth:`~.leaf_table.LeafTable.spans`)."""
        tree, self._tree = self._current(), None
        ranges = tree.table.spans(spans)
        starts, ends = tree.table.bounds(ranges)
        dropped = None
        if tree.dropped is not None:
            dropped = self.dropped_couplings(tree.order, ranges, tree.dropped)
        return TreeRows(tree.order, starts, ends, dropped)

    def _current(self) -> "_HostTree":
        if self._tree is None:
            raise RuntimeError("expand or end_tree before begin_tree")
        return self._tree

    # --- sums and histograms ------------------------------------------------------------------------
    def row_sums(self, order: np.ndarray, grad: np.ndarray, hess: np.ndarray) -> tuple:
        """``(sum g, sum h)`` over the rows ``order``, of the tree's gradients and hessians rounded to
        their grids (:mod:`.fixed_point`: exact sums, the GPU's bits); the rounded copies are what
        the tree's row histograms add."""
        if self._gh_grid is None or self._gh_grid.shape[1] != grad.shape[0]:
            self._gh_grid = np.zeros((2, grad.shape[0]))
        rg, rh = self._gh_grid
        self._gh_src = (grad, hess)
        G = round_rows(order, grad, grid_step_of_rows(order, grad), rg)
        H = round_rows(order, hess, grid_step_of_rows(order, hess), rh)
        return G, H

    def _on_grid(self, order: np.ndarray, grad: np.ndarray, hess: np.ndarray) -> tuple:
        """The rounded copies of ``grad, hess`` made by :meth:`row_sums` (made now from the rows of
        ``order`` when it saw other arrays: a histogram built without a tree around it)."""
        src = self._gh_src
        if src is None or src[0] is not grad or src[1] is not hess:
            self.row_sums(order, grad, hess)
        assert self._gh_grid is not None  # row_sums made it
        return self._gh_grid[0], self._gh_grid[1]

    def round_pairs(self, pc: np.ndarray) -> None:
        """The tree's couplings onto their grid, in place (:mod:`.fixed_point`: exact pair sums)."""
        round_range(pc, 0, pc.shape[0], grid_step_of(pc, 0, pc.shape[0]))

    def row_hist(self, order: np.ndarray, start: int, end: int, grad: np.ndarray, hess: np.ndarray,
                 root: bool = False) -> np.ndarray:
        """``(slots, 3)`` histogram [g, h, count] of the rows ``order[start:end]``."""
        d, s = self.data, self.ctx.scratch
        full = root and end - start == d.n_rows
        counts = s.root_counts if full else None
        grad, hess = self._on_grid(order[start:end], grad, hess)  # rounded by row_sums: exact sums
        hist = build_row_hist_fm(d.feature_major, order, start, end, grad, hess, d.offsets, d.n_slots, s.gh,
                                 counts=counts)
        if full and counts is None:  # a root over every row has the same counts every round
            s.root_counts = hist[:, HIST_COUNT].copy()
        return hist

    def pair_hist(self, buf: tuple, start: int, end: int, features: Optional[np.ndarray] = None) -> np.ndarray:
        """``(slots, 3)`` pair histogram [hi, nanp, R] of the pairs ``buf[start:end]`` (all features, or
        only ``features``: then valid until the next such call)."""
        pi, pj, pc = buf
        d = self.data
        return build_pair_hist(d.row_major, pi, pj, pc, start, end, d.offsets, d.n_bins, d.n_slots,
                               self.ctx.scratch.pair_hist, features)

    def sum_couplings(self, pc: np.ndarray, start: int, end: int) -> float:
        """The coupling of the pairs ``start:end``, summed in float64 in pair order."""
        return sum_couplings(pc, start, end)

    # --- the tree's pairs ---------------------------------------------------------------------------
    def pair_buffers(self, pairs: tuple) -> tuple:
        """The tree's two pair buffers: ``pairs``, their couplings rounded onto their grid, and the one
        they are partitioned into (pair histograms prepared with the criterion's accumulators)."""
        self.round_pairs(pairs[2])
        second = self.ctx.pair_buffers_for_tree(pairs[0].shape[0], pairs[0].dtype, self.criterion.acc_dtype)
        return pairs, second

    def prune_pairs(self, bufs: tuple) -> tuple:
        """``ole_fast``'s pruned buffers, :class:`~customobj.ole.pair_pruning.Dropped` record and the
        root's pairs ``(kept, 0)`` (:class:`PairCounts`, the kept ones first in the buffer), or
        ``(bufs, None, None)`` when the fit prunes nothing."""
        if not self.criterion.prunes_pairs or self.ctx.queries is None:
            return bufs, None, None
        query_of_row, n_queries = self.ctx.queries
        bufs, dropped = prune_for_tree(bufs, query_of_row, n_queries, self.criterion.ole_fast_epsilon)
        return bufs, dropped, PairCounts(bufs[0][0].shape[0], 0)

    def dropped_couplings(self, order: np.ndarray, ranges: list, dropped: Dropped) -> np.ndarray:
        """Per leaf (rows ``order[s:e]``, ``(s, e)`` in ``ranges``) the coupling of its dropped pairs."""
        return dropped_leaf_couplings(order, ranges, dropped, self.n_rows)

    # --- split search -------------------------------------------------------------------------------
    def find_split(self, hist: np.ndarray, phist: Optional[np.ndarray], mask: np.ndarray,
                   sums: ChildSums) -> SplitInfo:
        """The best split (gain > 0, else gain 0) of a node with histograms ``hist`` and, when the
        tree uses pairs, ``phist``, over the features of ``mask``."""
        res = np.zeros(SPLIT_SIZE)
        use_pairs = phist is not None
        status = self._find(hist, phist if use_pairs else self._no_pair_hist, use_pairs, self.bins_rec, mask,
                            _node(sums), self.rules, res)
        split_found(status, "find_best_split", self.score, SplitScore, "criterion")
        return SplitInfo.from_array(res)

    def fast_splits(self, searches: list, mask: np.ndarray, k: int) -> list:
        """``ole_fast``'s split of each node ``(hist, pairs, sums)`` (row histogram, :class:`NodePairs`,
        sums): the pair histogram of only the ``k`` features of ``mask`` of largest WSE gain
        (:func:`select_features`; valid until the next, so one node at a time), then the OLE search
        over those features."""
        found = []
        for hist, pairs, sums in searches:
            feats = select_features(self.wse_gains(hist, mask, sums, np.zeros(mask.shape[0])), mask, k)
            subset = np.zeros_like(mask)
            subset[feats] = True
            start, end = pairs.range()
            found.append(self.find_split(hist, self.pair_hist(pairs.buf, start, end, feats), subset, sums))
        return found

    def wse_gains(self, hist: np.ndarray, mask: np.ndarray, sums: ChildSums, out: np.ndarray) -> np.ndarray:
        """``out[f]``: feature ``f``'s best WSE gain at the node (0 outside ``mask``)."""
        split_found(feature_gains(hist, self.bins_rec, mask, _node(sums, with_c=False), self.rules._replace(score=WSE),
                                  out), "feature_gains", WSE, SplitScore, "criterion")
        return out

    def split_gain(self, parent: ChildSums, left: ChildSums, right: ChildSums) -> float:
        """``score(left) + score(right) - score(parent)`` under the fit's criterion."""
        status, gain = split_gain(self.rules, _node(parent), _node(left), _node(right))
        split_found(status, "split_gain", self.score, SplitScore, "criterion")
        return float(gain)

    # --- partitions ---------------------------------------------------------------------------------
    def partition_rows(self, order: np.ndarray, start: int, end: int, split: SplitInfo, nan_left: bool) -> int:
        """Reorder ``order[start:end]`` as [left | right] by ``split``, mark ``go_left``; the left count."""
        d, s = self.data, self.ctx.scratch
        f = split.feature
        return partition_rows(d.feature_major[f], order, start, end, split.bin, int(d.n_bins[f]), nan_left,
                              s.go_left, s.tmp_rows)

    def partition_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> tuple:
        """Copy pairs ``src[start:end]`` to ``dst``, ordered [both left | both right | split] by the
        last ``partition_rows``; ``(n_left, n_right)``."""
        pi, pj, pc = src
        oi, oj, oc = dst
        return partition_pairs(pi, pj, pc, start, end, self.ctx.scratch.go_left, oi, oj, oc)

    def child_pair_hists(self, buf: tuple, start: int, end: int, counts: tuple, parent: np.ndarray,
                         rows: tuple, need: tuple) -> tuple:
        """The pair histograms ``(left, right)`` of a split's children, whose pairs ``buf[start:end]``
        :meth:`partition_pairs` ordered (``counts``: its ``(n_left, n_right)``; ``rows``: the left, right
        and parent row counts), for the children with ``need`` (others: None, or the one built anyway):
        built from their own pairs or, as :func:`~customobj.ole.pairhist.pair_hist_plan` chooses, the
        larger's as ``parent - smaller - split pairs`` (``parent`` is then overwritten: it becomes that
        histogram)."""
        nl, nr = counts
        plan = pair_hist_plan(nl, nr, end - start, float(rows[0]), float(rows[1]), float(rows[2]), bool(need[0]),
                              bool(need[1]))
        ranges = ((start, start + nl), (start + nl, start + nl + nr))
        if plan == PAIRS_DIRECT:
            return tuple(self.pair_hist(buf, lo, hi) if nd else None for (lo, hi), nd in zip(ranges, need))
        small = 0 if plan == PAIRS_LEFT_SMALL else 1
        hist = self.pair_hist(buf, *ranges[small])
        parent -= hist
        parent -= self.pair_hist(buf, start + nl + nr, end)
        return (hist, parent) if small == 0 else (parent, hist)


class _HostTree:
    """The tree a :class:`CPUBackend` grows: its rows, pair buffers and leaf table, and the steps of
    its seam (each answered at once)."""

    def __init__(self, backend: CPUBackend, order: np.ndarray, grad: np.ndarray, hess: np.ndarray,
                 pairs: Optional[tuple], feature_mask: np.ndarray) -> None:
        self.backend, self.order, self.grad, self.hess, self.mask = backend, order, grad, hess, feature_mask
        self.fast = backend.criterion.fast
        self.use_pairs = pairs is not None
        self.dropped: Optional[Dropped] = None  # ole_fast: the pairs left out of the split search
        self.kept: Optional[PairCounts] = None  # ole_fast: the root's pairs (kept, 0)
        self.bufs: tuple = ()
        if pairs is not None:  # a leaf's pairs sit in bufs[leaf.pbuf]; its children's in the other buffer
            self.bufs = backend.pair_buffers(pairs)
            if self.fast:  # search on the largest couplings
                self.bufs, self.dropped, self.kept = backend.prune_pairs(self.bufs)
        self.n_pairs = self.bufs[0][0].shape[0] if pairs is not None else 0
        self.table = LeafTable(LeafRows(0, order.shape[0], 0, self.n_pairs, NO_SPLIT.left))

    def start(self, searched: bool) -> TreeStart:
        b, root, order = self.backend, self.table[0], self.order
        G, H = b.row_sums(order, self.grad, self.hess)
        C = b.sum_couplings(self.bufs[0][2], 0, self.n_pairs) if self.use_pairs else 0.0
        root.sums = ChildSums(G, H, float(order.shape[0]), C)
        if not searched:
            return TreeStart(root.sums, NO_SPLIT)
        root.hist = b.row_hist(order, 0, order.shape[0], self.grad, self.hess, root=True)
        if self.use_pairs and not self.fast:
            root.phist = b.pair_hist(self.bufs[0], 0, self.n_pairs)
        self._search([root], self.kept)
        if self.kept is not None:  # the kept pairs, first in the buffer
            root.pend = root.pstart + self.kept.counts[0]
        return TreeStart(root.sums, root.split)

    def expand(self, e: Expansion) -> Expanded:
        b, split = self.backend, e.split
        leaf = self.table[e.leaf]
        nan_left = nan_goes_left(b.data, leaf.hist, split)
        parent, left, right = self.table.split(e.leaf, split)
        got = b.partition_rows(self.order, parent.start, parent.end, split, nan_left)
        if got != left.end - left.start:
            raise RuntimeError(f"a partition sent {got} rows left where its split counted {left.end - left.start}")
        counts, gain = None, float(split.gain)
        if self.use_pairs:
            if any(e.need):  # children never split need no pairs
                counts = b.partition_pairs(self.bufs[parent.pbuf], parent.pstart, parent.pend, self.bufs[left.pbuf])
            # the gain of the children's exact sums (the search's, re-evaluated as the CPU always has)
            gain = b.split_gain(parent.sums, split.left, split.right)
        if any(e.need):
            self._child_histograms(parent, left, right, e.need, counts)
        self._search([c for c, nd in zip((left, right), e.need) if nd], None if counts is None else PairCounts(*counts))
        if counts is not None:
            self.table.pair_ranges(parent, left, right, counts)
        return Expanded(nan_left, gain, left.split, right.split)

    def _child_histograms(self, parent: LeafRows, left: LeafRows, right: LeafRows, need: tuple,
                          counts: Optional[tuple]) -> None:
        """Row histograms: the smaller child's built, the larger's by subtraction from the parent's.
        Pair histograms: each child's from its own pairs or the larger's as parent - smaller - split
        pairs, whichever is cheaper (``pairhist.pair_hist_plan``)."""
        b = self.backend
        small, large = (left, right) if left.sums.N <= right.sums.N else (right, left)
        small.hist = b.row_hist(self.order, small.start, small.end, self.grad, self.hess)
        parent.hist -= small.hist
        large.hist = parent.hist
        if counts is not None and not self.fast:
            left.phist, right.phist = b.child_pair_hists(self.bufs[left.pbuf], parent.pstart, parent.pend, counts,
                                                         parent.phist, (left.sums.N, right.sums.N, parent.sums.N),
                                                         tuple(need))
        for child, nd in zip((left, right), need):
            if not nd:  # never split: no histograms kept
                child.hist = child.phist = None

    def _search(self, nodes: list, counts: Optional[PairCounts]) -> None:
        """The best split of each of ``nodes`` (``counts``: the pair partition that made them, for
        ``ole_fast``'s search of each one's own pairs), kept in its row of the table."""
        b = self.backend
        if self.use_pairs and self.fast:  # pair histograms of each node's top k features by WSE gain
            found = b.fast_splits([(n.hist, n.pairs(self.bufs, counts), n.sums) for n in nodes], self.mask,
                                  b.criterion.ole_fast_features)
        else:
            found = [b.find_split(n.hist, n.phist if self.use_pairs else None, self.mask, n.sums) for n in nodes]
        for node, split in zip(nodes, found):
            node.split = split
            if self.fast:
                node.phist = None  # no subtraction in ole_fast: each node's features differ
