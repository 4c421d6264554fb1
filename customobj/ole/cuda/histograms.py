"""The OLE GPU backend's node histograms (:mod:`.backend`): built on the card into the pool's
buffers and kept there (:class:`~customobj.ole.cuda.memory.DeviceHist`), a split's children's in
one launch from pair counts that never leave the card.

:class:`DeviceHistograms` holds what every node histogram reuses (the pool, the feature groups of a
full histogram, the histograms cleared ahead: by the tree's first launch, else six at a time by one
``zero6``, the queue of subtractions) and
launches, through the fit's counted kernels (:mod:`.stats`):

- a root's (or ``ole_fast``'s) histograms: ``row_hist_shared``, ``pair_hist_shared`` (1 launch each);
  ``ole_fast``'s children's pair histograms over features chosen on the card, from counts that stay
  there: ``chosen_child_pairs`` (1 launch, :class:`ChosenPairs`);
- a split's children's: the smaller child's row histogram waits (:class:`RowBuild`) and is built in
  the launch of the children's pair histograms (``child_hists``, :class:`ChildPlan`: the plan of
  :func:`~customobj.ole.pairhist.pair_hist_plan` made on the card from the partition's counts), or
  alone when something needs it first (``se``/``wse``: at the children's search); the larger
  children's ``parent - smaller`` (rows) and ``parent - smaller - split pairs`` (pairs, by the
  plan) in one launch, queued (:class:`~customobj.ole.cuda.memory.SubtractQueue`, ``subtract3`` or
  ``subtract_children``). Per split: 1 or 2 histogram launches, 1 subtraction, nothing read.

Examples
--------
>>> import numpy as np
>>> from customobj.ole.cuda import _histograms_kernels, _split_kernels
>>> from customobj.ole.cuda.memory import DeviceMemory
>>> from customobj.ole.cuda.pool import DevicePool
>>> mem = DeviceMemory()
>>> bins = np.array([[0, 1, 1, 0]], dtype=np.uint8)  # one feature (2 bins, slot 2: NaN), 4 rows
>>> hists = DeviceHistograms(mem, _histograms_kernels, _split_kernels, DevicePool(mem, n_rows=4,
...     n_features=1, n_slots=3, n_hists=4), mem.upload(bins.T.copy()), np.array([0]), np.array([2]))
>>> gh = mem.upload(np.array([[1.0, 2.0, 4.0, 8.0], [1.0, 1.0, 1.0, 1.0]]))
>>> h = hists.rows(mem.upload(np.arange(4)), 4, gh, mem.upload(np.array([1.0, 1.0])), root=False)
>>> h.copy_to_host()[:2].tolist()  # the waiting build runs when the histogram is used
[[9.0, 2.0, 2.0], [6.0, 2.0, 2.0]]
"""
from __future__ import annotations

import weakref
from typing import Any, NamedTuple, Optional

import numpy as np

from ._launch import grid_launch
from .memory import DeviceHist, DeviceMemory, SubtractQueue

__all__ = ["DeviceHistograms", "RowBuild", "ChildPlan", "ChosenPairs"]


class RowBuild(NamedTuple):
    """A row histogram's build (``row_hist_shared``' arguments, as ``child_hists``' record): the rows
    ``rows[0:n]``, their on-grid ``g``, ``h`` and grid ``steps``, the zeroed histogram ``out``."""

    rows: Any
    n: int
    g: Any
    h: Any
    steps: Any
    out: Any


class ChildPlan(NamedTuple):
    """A split's children's pair histograms (``child_hists``' record): the pair partition's ``record``
    (``partitions.DevicePairCounts``; the plan is written to it), the parent's pairs
    ``start:start+n`` in ``pi, pj, pc`` (couplings on the grid of step ``steps[0]``), the children's
    and the parent's row counts, which children are split later, and the zeroed ``left``, ``right``."""

    record: Any
    start: int
    n: int
    rows_left: float
    rows_right: float
    rows_parent: float
    need_left: bool
    need_right: bool
    pi: Any
    pj: Any
    pc: Any
    steps: Any
    left: Any
    right: Any


class ChosenPairs(NamedTuple):
    """``ole_fast``'s children's pair histograms (``chosen_child_pairs``' record): the partition's
    ``record`` (their counts, on the card), the parent's pairs from ``start`` in ``pi, pj, pc`` (on the
    grid of step ``steps[0]``), and which side (0 left, 1 right) node 0 and node 1 are (-1: no node 1)."""

    record: Any
    start: int
    side_a: int
    side_b: int
    pi: Any
    pj: Any
    pc: Any
    steps: Any


class DeviceHistograms:
    """A fit's node histograms on the card (see the module docstring).

    Parameters
    ----------
    memory, kernels, split_kernels
        The fit's allocator, :mod:`._histograms_kernels` and :mod:`._split_kernels`, as every
        component's (:mod:`customobj.ole.cuda`).
    pool : DevicePool
        Where the histograms come from and go back to.
    bins_rm : device array
        The binned matrix, row-major (``(rows, features)``).
    offsets, n_bins : numpy.ndarray
        Each feature's first histogram slot and its bin count (its NaN slot after them).
    """

    def __init__(self, memory: DeviceMemory, kernels: Any, split_kernels: Any, pool: Any, bins_rm: Any,
                 offsets: np.ndarray, n_bins: np.ndarray) -> None:
        self.memory, self._kernels, self.pool, self._bins_rm = memory, kernels, pool, bins_rm
        self._offsets, self._n_bins = np.asarray(offsets, dtype=np.int64), np.asarray(n_bins, dtype=np.int64)
        self.all_features = np.arange(self._n_bins.size, dtype=np.int64)
        groups = kernels.feature_groups(self._offsets, self._n_bins, self.all_features)
        self._all_groups = groups[0], tuple(memory.upload(a) for a in groups)  # every full histogram's groups
        self.queue = SubtractQueue(split_kernels.subtract3, split_kernels.subtract_children, before=self.launch_waiting)
        self._zeroed_stash: list = []  # pool histograms cleared ahead (zeroed)
        self._waiting: Optional[RowBuild] = None  # a child's row histogram, built with its pair histograms

    def zeroed(self) -> Any:
        """A pool histogram set to 0 (the blocks of a histogram kernel add into it): one the tree's
        first launch cleared, else up to six are cleared in one launch and kept zeroed until asked
        for (a split needs one to three)."""
        if not self._zeroed_stash:
            clean = self.pool.clean_hist()  # cleared by the tree's first launch (DevicePool.clear_all)
            if clean is not None:
                return clean
            if not self.pool.n_free:  # queued subtractions hold histograms the grower may have dropped
                self.queue.flush()
            hists = [self.pool.hist() for _ in range(max(1, min(6, self.pool.n_free)))]
            flat = [h.reshape(h.size) for h in hists]
            self._kernels.zero6[grid_launch(flat[0].size)](*(flat[min(k, len(flat) - 1)] for k in range(6)))
            self._zeroed_stash = hists
        return self._zeroed_stash.pop()

    def clear_all(self) -> Any:
        """Every pool histogram flat for the tree's first launch to clear (:meth:`DevicePool.clear_all`:
        empty when one is in use), the ones cleared ahead given back first."""
        stash, self._zeroed_stash = self._zeroed_stash, []
        for h in stash:
            self.pool.give_back(h)
        return self.pool.clear_all()

    @property
    def bins_rm(self) -> Any:
        """The binned matrix on the card, row-major (the histogram kernels' coalesced reads)."""
        return self._bins_rm

    @property
    def row_tables(self) -> tuple:
        """``(bins_rm, (groups, members, slot_map))``: the row histograms' binned matrix and every
        feature's shared-memory groups on the card (a kernel's arguments where it builds none)."""
        return self._bins_rm, self._all_groups[1]

    def kept(self, out: Any) -> DeviceHist:
        """``out`` (a pool histogram, from :meth:`zeroed`) as a node's, back to the pool when dropped."""
        return self._hist(out)

    def _hist(self, out: Any) -> DeviceHist:
        hist = DeviceHist(out, self.queue, self.memory)
        weakref.finalize(hist, self.pool.give_back, out)  # back to the pool when the grower drops it
        return hist

    def launch_waiting(self, pairs: Any = None) -> None:
        """Build the waiting row histogram now (before anything uses it: the queue's first step); with
        ``pairs`` (:class:`._histograms_kernels.RootPairs`) their couplings go to their rows' sums in
        the same launch."""
        build, self._waiting = self._waiting, None
        if build is not None:
            groups, dev = self._all_groups
            (chunks, n_groups), threads = self._kernels.launch_for(build.n, groups)
            # no pairs: blocks of depth 0 only (the rows stand in for the kernel's types)
            grid: tuple = (chunks, n_groups) if pairs is None else (chunks, n_groups, 2)
            pairs = self._no_pairs(build) if pairs is None else pairs
            self._kernels.row_hist_shared[grid, threads](self._bins_rm, build.rows, build.n, build.g, build.h,
                                                         build.steps, *dev, build.out, pairs)

    def take_waiting(self) -> Optional[tuple]:
        """The waiting row histogram's build handed to another launch (``partitions.DevicePartitions.place_sides``):
        ``(bins_rm, (groups, members, slot_map), build, launch shape)``, or None when none waits."""
        build, self._waiting = self._waiting, None
        if build is None:
            return None
        groups, dev = self._all_groups
        return self._bins_rm, dev, build, self._kernels.launch_for(build.n, groups)

    @staticmethod
    def _no_pairs(build: RowBuild) -> Any:
        from ._histograms_kernels import RootPairs
        return RootPairs(build.rows, build.rows, build.g, 0, 0, build.rows, False, build.g)

    def rows(self, rows: Any, n: int, gh: Any, steps: Any, *, root: bool, pairs: Any = None) -> DeviceHist:
        """The ``(slots, 3)`` histogram [g, h, count] of the device rows ``rows[0:n]`` (on-grid ``gh[0]``,
        ``gh[1]``, grid ``steps``): built now (``root``; with the tree's ``pairs``' couplings added to
        their rows' sums, :class:`._histograms_kernels.RootPairs`) or with the next :meth:`children`."""
        self.launch_waiting()
        out = self.zeroed()
        if n > 0 and self._all_groups[0].shape[0]:
            self._waiting = RowBuild(rows, int(n), gh[0], gh[1], steps, out)
            if root:
                self.launch_waiting(pairs)
        return self._hist(out)

    def pairs(self, buf: tuple, start: int, n: int, steps: Any, node: Any,
              features: Optional[np.ndarray] = None) -> DeviceHist:
        """The ``(slots, 3)`` pair histogram [hi, nanp, R] of the device pairs ``buf[start:start+n]`` of the
        node whose rows are ``node`` (:class:`._histograms_kernels.NodeRows`: ``R`` from their coupling
        sums), all features or only ``features`` (sorted, unique: the other slots are 0)."""
        if n <= 0 or (features is not None and not features.size):
            return self._hist(self.zeroed())
        if features is None:
            groups, dev = self._all_groups
        else:  # the subset's groups, copied into the pool's buffers
            groups, *tables = self._kernels.feature_groups(self._offsets, self._n_bins, features)
            dev = self.pool.feature_groups(groups, *tables)
        return self.pairs_with(buf, start, n, steps, self._kernels.launch_for(max(n, node.n), groups), dev, node)

    def pairs_with(self, buf: tuple, start: int, n: int, steps: Any, shape: tuple, tables: tuple,
                   node: Any) -> DeviceHist:
        """:meth:`pairs` of the features of the device group ``tables`` (``(groups, members, slot_map)``,
        :func:`._histograms_kernels.feature_groups`'), launched as ``shape`` (covering the pairs and the
        node's rows): ``ole_fast``'s features, chosen and grouped on the device (:mod:`.choice`; the
        shape from a bound on their number). Blocks of depth 0 add the pairs, of depth 1 the rows' ``R``."""
        out = self.zeroed()
        if n > 0:
            (chunks, n_groups), threads = shape
            self._kernels.pair_hist_shared[(chunks, n_groups, 2), threads](self._bins_rm, *buf, start, n, steps,
                                                                           *tables, out, node)
        return self._hist(out)

    def chosen_children(self, nodes: list, steps: Any, bound: int, choice: Any, rows: list) -> list:
        """``ole_fast``: the pair histograms of one or two children of a split (``nodes``: their
        :class:`~customobj.ole.backend.NodePairs`, counts on the card; ``rows``: their
        :class:`._histograms_kernels.NodeRows`) over the features chosen for each on the card (``choice``,
        at most ``bound`` each), in one launch (``chosen_child_pairs``)."""
        first = nodes[0]
        outs = [self.zeroed() for _ in nodes]
        n = first.end - first.start  # the parent's pairs: a bound on each child's
        if n > 0 and bound:
            (chunks, n_groups), threads = self._kernels.launch_shape(max([n] + [r.n for r in rows]), bound, bound)
            pi, pj, pc = first.buf
            side_b = int(nodes[1].side) if len(nodes) > 1 else -1  # -1: no node 1
            rec = ChosenPairs(first.counts.record, int(first.start), int(first.side), side_b, pi, pj, pc, steps)
            # depth: node 0's and 1's pairs, then node 0's and 1's rows (R)
            self._kernels.chosen_child_pairs[(chunks, n_groups, 4), threads](self._bins_rm, rec, choice, outs[0], outs[-1], rows[0],
                                                            rows[-1] if len(nodes) > 1 else rows[0]._replace(n=0))
        return [self._hist(out) for out in outs]

    def children(self, buf: tuple, start: int, end: int, record: Any, parent: DeviceHist, rows: tuple, need: tuple,
                 steps: Any, nodes: tuple) -> tuple:
        """A split's children's pair histograms ``(left, right)`` from their parent's pairs ``buf[start:end]``
        (ordered by the partition whose ``record`` has their counts; ``rows``: the left, right and
        parent row counts; ``need``: which are split later; ``nodes``: their
        :class:`._histograms_kernels.NodeRows`, for ``R``), built with the waiting row histogram in
        one launch (``child_hists``), completed after the split's row subtraction in one more
        (:meth:`~customobj.ole.cuda.memory.SubtractQueue.children`): nothing is read."""
        left, right = self.zeroed(), self.zeroed()
        build, self._waiting = self._waiting, None
        groups, dev = self._all_groups
        n_rows = 0 if build is None else build.n
        if (end > start or n_rows) and groups.shape[0]:
            most = max(end - start, n_rows, nodes[0].n, nodes[1].n)
            (chunks, n_groups), threads = self._kernels.launch_for(most, groups)
            plan = ChildPlan(record, int(start), int(end - start), float(rows[0]), float(rows[1]), float(rows[2]),
                             bool(need[0]), bool(need[1]), buf[0], buf[1], buf[2], steps, left, right)
            if build is None:  # no rows (the record stands in for the kernel's types): those blocks return
                build = RowBuild(record, 0, steps, steps, steps, left)
            # depth: left pairs, right pairs, the smaller child's rows, the left's and the right's R
            self._kernels.child_hists[(chunks, n_groups, 5), threads](self._bins_rm, *dev, plan, build, *nodes)
        hists = self._hist(left), self._hist(right)
        self.queue.children(parent, *hists, record)
        return hists
