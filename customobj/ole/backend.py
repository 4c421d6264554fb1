"""The grower's device seam: one object builds the histograms, searches the splits and partitions.

:class:`~customobj.ole.grower.TreeGrower` keeps the tree's bookkeeping (leaves, open splits, nodes)
in Python and calls every kernel through the backend it is given, as scikit-learn's ``TreeGrower``
holds its ``HistogramBuilder`` and ``Splitter``. One backend is created per fit
(:func:`customobj.ole.training.boost`) and serves every tree of it. :class:`CPUBackend` wraps the
numba kernels of this package unchanged.

What a backend provides, typed by the :class:`TreeBackend` protocol (the GPU's
:class:`~customobj.ole.cuda.backend.CUDABackend` provides the same, with the same results: the same
splits, ties broken the same way, the same sums):

- ``data``: the binned training set's description (``n_bins``, ``offsets``, ``n_slots``,
  ``mapper`` for thresholds); ``n_rows``: its row count;
- ``root_sums`` (a tree's first call; ``searched_root_sums`` when it deferred them to the root's
  search), ``row_sums``, ``row_hist``: the root's sums (its coupling too), a node's gradient and hessian sums and its row histogram
  ``(slots, HIST_CHANNELS)`` (channels in :mod:`.common`); ``pair_hist``: its pair histogram
  ``(slots, PH_CHANNELS)``, all features or a subset; ``sum_couplings``: a pair range's coupling;
- ``pair_buffers``, ``prune_pairs``, ``dropped_couplings``: the tree's two pair buffers, and
  ``ole_fast``'s pruned pairs and the couplings of the dropped ones per leaf;
- ``find_split``, ``find_splits``, ``fast_splits``, ``wse_gains``, ``split_gain``: the split search
  of a node (or of a split's two children at once: a GPU backend reads both back in one copy) under
  the fit's criterion, ``ole_fast``'s (the pair histograms of the node's top features by WSE gain,
  then the search over them; a GPU backend chooses the features on the device), the per-feature
  WSE gains, and a split's gain from its children's exact sums;
- ``partition_rows``, ``split_pairs``: a split's row and pair partitions (rows marked left in
  ``go_left``; the pairs' counts a :class:`PairCounts`, which a GPU backend brings back with the
  children's splits), ``child_pair_hists``: the children's pair histograms (built, or the larger's
  by subtraction: :func:`~customobj.ole.pairhist.pair_hist_plan`); ``row_order``: the finished
  tree's row order (a GPU backend partitions its own copy, and keeps it there when the host needs
  none: None);
- ``device_scores``: the fit's scores kept on the device, or None (the CPU keeps them on the host);
  ``device_stats``: what the fit asked of the device (None on the CPU).

Histograms and pair buffers may live on the device: the grower only passes them back to the
backend, subtracts histograms (``parent -= child``, which the arrays must support) and reads
``row_hist`` counts at a NaN slot. Sums are exact: each tree's gradients, hessians and couplings
are rounded to a power-of-two grid first (:mod:`.fixed_point`), so every backend adds the same bits.
What the grower reads on the host: the sums, the split (a
:class:`~customobj.ole.common.SplitInfo`) and, at the end of the tree, the row order.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Protocol

import numpy as np

from .common import HIST_COUNT, PH_CHANNELS, SPLIT_SIZE, ChildSums, SplitInfo
from .context import BinnedData, GrowContext
from .criterion import SplitScore, WSE
from .fixed_point import grid_step_of, grid_step_of_rows, round_range, round_rows
from .histogram import build_row_hist_fm
from .pair_pruning import Dropped, dropped_leaf_couplings, prune_for_tree
from .pair_partition import partition_pairs, sum_couplings
from .pairhist import PAIRS_DIRECT, PAIRS_LEFT_SMALL, build_pair_hist, pair_hist_plan
from .partition import partition_rows
from .splitting import (FeatureBins, SplitRules, check_status, feature_gains, find_best_split, find_best_split_parallel,
                        split_gain)

__all__ = ["CPUBackend", "NodePairs", "PairCounts", "PARALLEL_SLOTS", "TreeBackend", "select_features"]

#: Histogram slots from which the split search runs in parallel: a search over few slots is
#: cheaper than waking the thread team (see partition.PARALLEL_ROWS).
PARALLEL_SLOTS = 32768


def select_features(gains: np.ndarray, feature_mask: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` features of ``feature_mask`` with the largest ``gains`` (ties: lower index first),
    in increasing index order: the features ``criterion="ole_fast"`` searches at a node (on a GPU:
    :mod:`.cuda._choice_kernels`)."""
    cand = np.flatnonzero(feature_mask)
    top = cand[np.argsort(-gains[cand], kind="stable")[:k]]
    return np.sort(top)


def _node(sums: ChildSums, with_c: bool = True) -> ChildSums:
    """A node's sums as the split kernels' record: four floats (one compiled type), ``C`` 0 for WSE."""
    return ChildSums(float(sums.G), float(sums.H), float(sums.N), float(sums.C) if with_c else 0.0)


class PairCounts:
    """A pair partition's children's pair counts ``(n_left, n_right)`` (:attr:`counts`): here known at
    once; a GPU backend keeps them on the card, where its children's histograms are chosen and built
    from them, until they come back with the children's splits (read on their own only if asked first).
    """

    def __init__(self, n_left: int, n_right: int) -> None:
        self._counts = (int(n_left), int(n_right))

    @property
    def counts(self) -> tuple:
        return self._counts


class NodePairs(NamedTuple):
    """A node's pairs for ``ole_fast``'s search (:meth:`CPUBackend.fast_splits`): ``buf[start:end]``, or,
    with ``counts`` (a pair partition's, maybe still on the card), the left (``side`` 0) or right (1)
    child's part of its parent's range ``start:end``, ``[left | right | split pairs]``."""

    buf: tuple
    start: int
    end: int
    counts: Optional[PairCounts] = None
    side: int = 0

    def range(self) -> tuple[int, int]:
        """``(start, end)`` of the node's own pairs (a GPU backend's counts are read if not known yet)."""
        if self.counts is None:
            return self.start, self.end
        n_left, n_right = self.counts.counts
        return (self.start, self.start + n_left) if self.side == 0 else (self.start + n_left,
                                                                          self.start + n_left + n_right)



class TreeBackend(Protocol):
    """The seam between :class:`~customobj.ole.grower.TreeGrower` (and the boosting loop) and the
    kernels: what :class:`CPUBackend` and the GPU's :class:`~customobj.ole.cuda.backend.CUDABackend`
    both provide (the module docstring says what each method promises). Histograms, pair buffers and
    counts may live on the device: the grower passes them back, subtracts histograms and reads a
    histogram's count at a NaN slot; it reads on the host the sums, the splits and the row order."""

    data: BinnedData
    n_rows: int
    gradients_where: Optional[str]

    def device_scores(self, obj: Any, prep: Any, scores: np.ndarray, need_pairs: bool, line_search: bool, *,
                      pairs_on_host: Optional[str] = None) -> Any: ...

    def device_memory_peak(self) -> Optional[int]: ...

    def device_stats(self) -> Optional[tuple]: ...

    def root_sums(self, order: np.ndarray, grad: Any, hess: Any, pc: Any, n_pairs: int, *,
                  searched: bool = False) -> Optional[tuple]: ...

    def searched_root_sums(self) -> tuple: ...

    def row_hist(self, order: np.ndarray, start: int, end: int, grad: Any, hess: Any, root: bool = False) -> Any: ...

    def pair_hist(self, buf: tuple, start: int, end: int, features: Optional[np.ndarray] = None) -> Any: ...

    def pair_buffers(self, pairs: tuple, rows: Optional[tuple] = None) -> tuple: ...

    def prune_pairs(self, bufs: tuple) -> tuple: ...

    def plan_leaf_couplings(self, leaves: list, dropped: Any) -> None: ...

    def dropped_couplings(self, order: np.ndarray, ranges: list, dropped: Any,
                          sources: Optional[list] = None) -> np.ndarray: ...

    def find_splits(self, searches: list) -> list: ...

    def fast_splits(self, searches: list, mask: np.ndarray, k: int) -> list: ...

    def split_gain(self, parent: ChildSums, left: ChildSums, right: ChildSums) -> float: ...

    def partition_rows(self, order: np.ndarray, start: int, end: int, split: SplitInfo, nan_left: bool, *,
                       children_searched: bool = True) -> int: ...

    def row_order(self, order: np.ndarray) -> Optional[np.ndarray]: ...

    def split_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> PairCounts: ...

    def child_pair_hists(self, buf: tuple, start: int, end: int, pairs: PairCounts, parent: Any, rows: tuple,
                         need: tuple) -> tuple: ...


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
        self._root_sums: tuple = (0.0, 0.0, 0.0)  # the tree's root G, H, C (root_sums)
        self._gh_src: Optional[tuple] = None  # the arrays they were rounded from

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

    def root_sums(self, order: np.ndarray, grad: np.ndarray, hess: np.ndarray, pc: Optional[np.ndarray],
                  n_pairs: int, *, searched: bool = False) -> Optional[tuple]:
        """The tree's root ``(G, H, C)``: :meth:`row_sums` and, with pairs, :meth:`sum_couplings` of
        ``pc[:n_pairs]`` (else ``C = 0``); a tree's first call. ``searched``: the root is searched
        next; a backend may then return None and the sums with the root's split
        (:meth:`searched_root_sums`: the GPU's, so the root costs no read of its own)."""
        G, H = self.row_sums(order, grad, hess)
        self._root_sums = (G, H, 0.0 if pc is None else self.sum_couplings(pc, 0, n_pairs))
        return self._root_sums

    def searched_root_sums(self) -> tuple:
        """The root's ``(G, H, C)`` of the tree's :meth:`root_sums`, once the root's split is found."""
        return self._root_sums

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
    def pair_buffers(self, pairs: tuple, rows: Optional[tuple] = None) -> tuple:
        """The tree's two pair buffers: ``pairs`` and the one they are partitioned into (pair
        histograms prepared with the criterion's accumulators). ``rows``: the tree's ``(order, grad,
        hess)``, for a backend that puts them on their grid with the couplings (a GPU's: one set of
        launches); here each is rounded where it is used."""
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

    def plan_leaf_couplings(self, leaves: list, dropped: Optional[Dropped]) -> None:
        """The next split search may be the tree's last, one split at most after it: ``leaves`` (each
        ``(start, end, split)``: its rows' range, and its split: a :class:`SplitInfo`, the index of
        its node among that search's, or None) and their dropped pairs. A GPU backend sums the
        leaves' dropped couplings then, with the search; here they are summed at the end."""

    def dropped_couplings(self, order: np.ndarray, ranges: list, dropped: Dropped,
                          sources: Optional[list] = None) -> np.ndarray:
        """Per leaf (rows ``order[s:e]``, ``(s, e)`` in ``ranges``) the coupling of its dropped pairs
        (``sources``: each leaf's place in the last :meth:`plan_leaf_couplings`, for a GPU backend)."""
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
        check_status(status, self.score, "find_best_split")
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

    def find_splits(self, searches: list) -> list:
        """:meth:`find_split` of each ``(hist, phist, mask, sums)`` in ``searches``, in order."""
        return [self.find_split(*search) for search in searches]

    def wse_gains(self, hist: np.ndarray, mask: np.ndarray, sums: ChildSums, out: np.ndarray) -> np.ndarray:
        """``out[f]``: feature ``f``'s best WSE gain at the node (0 outside ``mask``)."""
        check_status(feature_gains(hist, self.bins_rec, mask, _node(sums, with_c=False), self.rules._replace(score=WSE),
                                   out), WSE, "feature_gains")
        return out

    def split_gain(self, parent: ChildSums, left: ChildSums, right: ChildSums) -> float:
        """``score(left) + score(right) - score(parent)`` under the fit's criterion."""
        status, gain = split_gain(self.score, *parent, *left, *right, self.lam)
        check_status(status, self.score, "split_gain")
        return float(gain)

    # --- partitions ---------------------------------------------------------------------------------
    def partition_rows(self, order: np.ndarray, start: int, end: int, split: SplitInfo, nan_left: bool, *,
                       children_searched: bool = True) -> int:
        """Reorder ``order[start:end]`` as [left | right] by ``split``, mark ``go_left``; the left count
        (``children_searched``: whether the children are searched; here the order is always made)."""
        d, s = self.data, self.ctx.scratch
        f = split.feature
        return partition_rows(d.feature_major[f], order, start, end, split.bin, int(d.n_bins[f]), nan_left,
                              s.go_left, s.tmp_rows)

    def row_order(self, order: np.ndarray) -> Optional[np.ndarray]:
        """The finished tree's row order: ``order`` itself, which :meth:`partition_rows` reordered."""
        return order

    def partition_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> tuple:
        """Copy pairs ``src[start:end]`` to ``dst``, ordered [both left | both right | split] by the
        last ``partition_rows``; ``(n_left, n_right)``."""
        pi, pj, pc = src
        oi, oj, oc = dst
        return partition_pairs(pi, pj, pc, start, end, self.ctx.scratch.go_left, oi, oj, oc)

    def split_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> PairCounts:
        """:meth:`partition_pairs`, its counts as a :class:`PairCounts`."""
        return PairCounts(*self.partition_pairs(src, start, end, dst))

    def child_pair_hists(self, buf: tuple, start: int, end: int, pairs: PairCounts, parent: np.ndarray,
                         rows: tuple, need: tuple) -> tuple:
        """The pair histograms ``(left, right)`` of a split's children, whose pairs ``buf[start:end]``
        :meth:`split_pairs` ordered (counts ``pairs``; ``rows``: the left, right and parent row counts),
        for the children with ``need`` (others: None, or the one built anyway): built from their own
        pairs or, as :func:`~customobj.ole.pairhist.pair_hist_plan` chooses, the larger's as
        ``parent - smaller - split pairs`` (``parent`` is then overwritten: it becomes that histogram)."""
        nl, nr = pairs.counts
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
