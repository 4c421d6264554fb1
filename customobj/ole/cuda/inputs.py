"""A tree's inputs on the card, a component of the OLE GPU backend (:mod:`.backend`): its gradients,
hessians and couplings on their grids (:mod:`..fixed_point`), its root's sums, ``ole_fast``'s pair
pruning (:mod:`.pruning`) and the leaves' dropped couplings, summed with the tree's last search.

:class:`TreeInputs` holds a tree's state on the card from its first call to its end. Per tree:

- the grids: ``grid_max``, ``grid_units``, ``grid_round`` (3 launches for the rows and the device
  couplings together, :mod:`._reduce_kernels`: the grower gives :meth:`TreeInputs.pair_buffers` the
  rows); the tree's first ``grid_max`` also clears the pool's histograms
  (:meth:`~customobj.ole.cuda.pool.DevicePool.clear_all`), and the couplings' rounding makes
  ``ole_fast``'s per-query tops (``QueryTops``);
- the root's sums: read with its split when it is searched (:meth:`TreeInputs.root_sums`);
- ``ole_fast``: the pruning (3 more launches, nothing read: the kept count comes back with the root's
  split, the kept coupling is the root's ``C`` on the card) and, when a search may be the tree's
  last (:meth:`TreeInputs.plan_dropped_sums`), the leaves' dropped couplings summed before its
  results are read, read with them (:meth:`TreeInputs.dropped_couplings`; a tree that ends earlier
  reads them once).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..._cuda_runtime import is_device_array
from ..fixed_point import grid_step_of, round_range
from ..pair_partition import sum_couplings
from ._launch import grid_launch
from ._histograms_kernels import NodeRows, RootPairs
from ._reduce_kernels import GridItems, QueryTops
from .memory import DeviceMemory, check_device_memory, device_memory_needed, free_device_memory

__all__ = ["TreeInputs"]


class TreeInputs:
    """A tree's gradients, couplings, grids, root sums and pair pruning on the device (module docstring).

    Parameters
    ----------
    memory : DeviceMemory
        The fit's allocator and counter.
    pool : DevicePool
        The fit's buffers: the tree's accumulators, row order and pair buffers come from it.
    histograms : DeviceHistograms
        Cleared by the tree's first grid launch.
    partitions : DevicePartitions
        Its waiting row partition is placed before the planned leaf sums read the order.
    search : DeviceSearch
        The planned leaf sums ride on its results and its read.
    pruning : DevicePruning or None
        ``ole_fast``'s pruning (None: the fit prunes nothing).
    reduce_kernels : module or CountedKernels
        :mod:`._reduce_kernels` (the grids and coupling sums).
    zero : numba.cuda kernel
        ``zero(flat)`` (:mod:`._histograms_kernels`): clears the tree's accumulators when their ring wraps.
    bins, n_bins : device arrays
        The binned matrix (feature-major) and the features' bin counts: the leaves' sides.
    shape : dict
        :func:`~customobj.ole.cuda.memory.device_memory_needed`'s arguments of the fit (the pairs
        are checked against the free memory each tree).
    resident : int
        Bytes the fit keeps on the device from its start (counted as its own, not as taken).

    Attributes
    ----------
    order, grad, hess : device arrays
        The tree's row order (partitioned on the device) and its gradients and hessians.
    gh : device array
        ``(2, rows)``: the tree's gradients and hessians on their grids (the row histograms add them).
    row_stats, pair_stats, root : device arrays
        The tree's accumulators: the rows' and couplings' ``[max|a|, max|b|, step a, step b]`` and the
        root's ``G, H, C`` (:meth:`~customobj.ole.cuda.pool.DevicePool.tree_accumulators`).
    root_pending : bool
        The root's sums come back with its split (:meth:`found_root`).
    planned_got : numpy.ndarray or None
        The planned leaves' dropped couplings, back with the search that summed them.
    """

    def __init__(self, memory: DeviceMemory, pool: Any, histograms: Any, partitions: Any, search: Any,
                 pruning: Any, reduce_kernels: Any, zero: Any, bins: Any, n_bins: Any, *, shape: dict,
                 resident: int) -> None:
        self.memory, self.pool, self._histograms, self._partitions = memory, pool, histograms, partitions
        self._search, self._pruning, self._reduce_kernels, self._zero = search, pruning, reduce_kernels, zero
        self._bins, self._n_bins = bins, n_bins
        self._shape, self._resident = shape, resident
        n_rows = max(int(shape["n_rows"]), 1)
        self.gh = memory.array((2, n_rows), np.float64)  # the tree's g and h on their grids
        self._no_idx = memory.array((1,), np.int64)
        i32, i64, f64 = (memory.array((1,), t) for t in (np.int32, np.int64, np.float64))
        self._no_tops = QueryTops(i32, i64, i32, i64, f64, False)  # grid_round's when no pruning rides along
        self.order: Any = None
        self.grad: Any = None
        self.hess: Any = None
        self.row_stats: Any = None
        self.pair_stats: Any = None
        self.root: Any = None
        self._row_units: Any = None
        self._pair_units: Any = None
        self.in_tree = False
        self._clear_pool = False
        self._rows_gridded = False
        # a searched root's sums stay on the device until its split is read (found_root): C when known here
        self.root_pending = False
        self._root_c: Optional[float] = None
        self._root_sums: tuple = (0.0, 0.0, 0.0)
        self._pc_sum: Optional[tuple] = None  # (the tree's device couplings, their sum or None: in root[2])
        # ole_fast's dropped couplings summed with the tree's last search: planned, launched, read
        self._plan: Optional[tuple] = None
        self.planned_got: Optional[np.ndarray] = None
        self._root_pairs: Optional[tuple] = None  # the tree's (pairs, count, kept record or None): rho's

    def begin_tree(self) -> None:
        """Counts go to a new tree from the tree's first call (its pairs, or its root sums) on; the
        tree's grids and root sums accumulate in zeroed device memory (the pool's ring)."""
        if not self.in_tree:
            self.in_tree = True
            self.memory.counter.begin_tree()
            self.memory.sample()  # the card's use as a tree starts (a real card only)
            acc = self.pool.tree_accumulators(self._zero)
            self.row_stats, self.pair_stats, self.root, self._row_units, self._pair_units = acc
            self._clear_pool = True  # by the tree's first grid launch (_grids)
            self._plan = self.planned_got = None
            self._rows_gridded = False  # the rows' grid: with the couplings' (pair_buffers) or root_sums
            self._root_pairs = None
            self._partitions.children_rows = None  # no split yet: the nodes searched are the root

    def end_tree(self) -> None:
        """The tree is grown: the next call starts another (:meth:`begin_tree`)."""
        self.in_tree = False

    # --- the tree's gradients, couplings and root sums on their grids ---------------------------------
    def row_sums(self, order: np.ndarray, grad, hess) -> tuple:
        """``(sum g, sum h)`` over ``order``: :meth:`root_sums` without pairs."""
        sums = self.root_sums(order, grad, hess, None, 0)
        assert sums is not None  # not searched: read here
        return sums[:2]

    def root_sums(self, order: np.ndarray, grad, hess, pc, n_pairs: int, *, searched: bool = False
                  ) -> Optional[tuple]:
        """The tree's root ``(G, H, C)``. The gradients and hessians (host ones copied into the pool
        first) are rounded to their grids on the device (the CPU's grids, exact sums), with the
        couplings' when :meth:`pair_buffers` was given the rows: the row histograms add the rounded
        copies. ``C``: the coupling of ``pc[:n_pairs]``, summed when :meth:`pair_buffers` rounded or
        copied them (else here). The sums come back in one read or, when the root is ``searched``,
        with its split (None here: :meth:`found_root`)."""
        self.begin_tree()
        if not self._rows_gridded:
            self._grids(self._tree_rows(order, grad, hess), None)
        C = 0.0 if pc is None else self._root_coupling(pc, n_pairs)
        if searched:
            if C is not None:  # known here (0 without pairs): where the search reads it
                self.memory.copy_in(self.root[2:3], np.array([C]))
            self.root_pending, self._root_c = True, C
            return None
        got = self.memory.read(self.root[:3])
        self._root_sums = (float(got[0]), float(got[1]), float(got[2]) if C is None else float(C))
        return self._root_sums

    def found_root(self, sums: np.ndarray) -> tuple:
        """The searched root's ``(G, H, C)`` from what its split's read brought (``C``: this tree's when
        known here)."""
        G, H, C = (float(v) for v in sums[:3])
        self._root_sums = (G, H, C if self._root_c is None else float(self._root_c))
        self.root_pending = False
        return self._root_sums

    def _root_coupling(self, pc, n_pairs: int) -> Optional[float]:
        """The root's coupling: known already (a float), or summed on the device into ``root[2]`` (None)."""
        known = self._pc_sum
        if known is not None and known[0] is pc and n_pairs == pc.shape[0]:
            return known[1]
        if not is_device_array(pc):
            return sum_couplings(pc, 0, n_pairs)
        acc = self.root[2:4]  # the tree's: zeroed (begin_tree)
        self._reduce_kernels.coupling_sums[grid_launch(n_pairs)](pc, 0, n_pairs, acc)
        return None

    def _tree_rows(self, order: np.ndarray, grad, hess) -> GridItems:
        """The tree's rows (the device order starts from them) and gradients on the device: their grid's
        items (rounded into ``gh``, summed into the root's ``G, H``)."""
        self.order = self.pool.start_rows(order)  # partitioned there from now on
        if not is_device_array(grad):
            gh = self.pool.buffers("gradients", int(grad.shape[0]), (np.float64, np.float64))
            grad, hess = (self.memory.copy_in(b, a) for b, a in zip(gh, (grad, hess)))
        self.grad, self.hess = grad, hess
        self._rows_gridded = True
        return GridItems(grad, hess, self.order, True, int(order.shape[0]), self.row_stats, self._row_units, self.gh[0],
                         self.gh[1], self.root[0:2])

    def _grids(self, rows: Optional[GridItems], pairs: Optional[GridItems], tops: Optional[QueryTops] = None) -> None:
        """The rows' and the couplings' grids (either may be None) in one set of launches: max, unit
        sums, round (the accumulators: the tree's, zeroed); ``tops``: the couplings' per-query tops."""
        x = rows if rows is not None else pairs
        assert x is not None
        y = pairs if pairs is not None and rows is not None else x._replace(n=0)
        launch = grid_launch(max(x.n, y.n))
        clear, self._clear_pool = (self._histograms.clear_all() if self._clear_pool else self.pool.no_clear), False
        kr = self._reduce_kernels
        kr.grid_max[launch](x, y, clear, self._partitions.rho)  # the tree's first clears the histograms
        kr.grid_units[launch](x, y)
        kr.grid_round[launch](x, y, self._no_tops if tops is None else tops)

    def round_pairs(self, pc, rows: Optional[tuple] = None, pi: Any = None) -> None:
        """The tree's couplings onto their grid (:mod:`..fixed_point`) where they are: device ones by
        the reductions (their sum, the root's ``C``, into ``root[2]``; with ``rows``, ``(order, grad,
        hess)``, the rows' grid in the same launches; with ``pi`` and pruning, its per-query tops),
        host ones as the CPU does (the joint solve keeps that copy; their step then goes to the
        device, and they follow: _device_pairs)."""
        if not is_device_array(pc):
            round_range(pc, 0, pc.shape[0], grid_step_of(pc, 0, pc.shape[0]))  # as the CPU backend does
            step = grid_step_of(pc, 0, pc.shape[0])
            self.memory.copy_in(self.pair_stats, np.array([0.0, 0.0, step, step]))
            return
        items = GridItems(pc, pc, self._no_idx, False, int(pc.shape[0]), self.pair_stats, self._pair_units, pc, pc,
                          self.root[2:4])
        tops = None if self._pruning is None or pi is None else self._pruning.query_tops(pi, pc)
        self._grids(None if rows is None else self._tree_rows(*rows), items, tops)
        self._pc_sum = (pc, None)

    def pair_buffers(self, pairs: tuple, rows: Optional[tuple] = None) -> tuple:
        """The tree's two pair buffers on the device (host pairs copied into the pool once per tree),
        their couplings on their grid (before :meth:`prune_pairs`; with ``rows``, ``(order, grad, hess)``,
        the rows' grid in the same launches), after checking that they fit next to the rest."""
        self.begin_tree()
        need = device_memory_needed(**self._shape, n_pairs=pairs[0].shape[0])
        # device pairs (the objective's couplings, scores) already hold the first of the two buffers
        held = (need["pairs"] // 2 if is_device_array(pairs[0]) else 0) + self.pool.buffer_bytes
        check_device_memory(need, free=free_device_memory() + self._resident + held)
        self._pc_sum = None
        self.round_pairs(pairs[2], rows, pairs[0])
        bufs = self._device_pairs(pairs)
        self._root_pairs = (bufs[0], int(pairs[0].shape[0]), None)
        return bufs

    def prune_pairs(self, bufs: tuple) -> tuple:
        """``ole_fast``'s pruning on the card (:mod:`.pruning`): the kept pairs first, the dropped
        ones and the kept count (on the card: it comes back with the root's split, as the root's pair
        counts, its coupling is the root's ``C`` there)."""
        if self._pruning is None:
            return bufs, None, None
        bufs, kept, dropped = self._pruning.prune(bufs, self.root[2:4])
        self._pc_sum = (bufs[0][2], None)  # the root's C: on the device
        self._root_pairs = (bufs[0], 0, kept.record)  # the kept pairs (their count on the card)
        return bufs, dropped, kept

    def root_pairs(self) -> Any:
        """The tree's pairs (``ole_fast``: the kept ones) as the root's row histogram launch adds them to
        their rows' coupling sums (:class:`._histograms_kernels.RootPairs`), or None without pairs."""
        if self._root_pairs is None:
            return None
        (pi, pj, pc), n, kept = self._root_pairs
        count = self._no_idx if kept is None else kept
        return RootPairs(pi, pj, pc, 0, n, count, kept is not None, self._partitions.rho)

    def root_rows(self) -> Any:
        """The root's rows (the tree's device order) and their coupling sums: its pair histogram's ``R``."""
        return NodeRows(self._partitions.rho, self.order, int(self.order.shape[0]))

    def plan_dropped_sums(self, leaves: list, dropped) -> None:
        """The next search may be the tree's last (one split at most after it): its leaves' dropped
        couplings, and each side's of each one's split, are summed on the card before its results
        are read, and come back with them. ``leaves``: ``(start, end, split)`` each, its rows' range
        and its split: a :class:`~customobj.ole.common.SplitInfo`, the result row of its node among the
        searches that read brings (:attr:`.search.DeviceSearch.results`), or None."""
        if self._pruning is None or dropped is None:
            return
        table = np.full((max(len(leaves), 1), 4), -1, np.int64)
        for row, (_, _, split) in zip(table, leaves):
            if isinstance(split, (int, np.integer)):  # the split the search finds for its node ``split``
                if not 0 <= split < self._search.result_rows:
                    raise ValueError(f"a leaf's split in a plan is a search's result row, 0 to "
                                     f"{self._search.result_rows - 1}, got {split}")
                row[3] = split
            elif split is not None and split.gain > 0:
                row[:3] = (split.feature, split.bin, int(split.nan_left))
        self._plan = ([(s, e) for s, e, _ in leaves], table, dropped)

    def planned_sums(self) -> Optional[tuple]:
        """The plan's sums launched (``before_read`` of the search): ``(callable, tail length)``."""
        plan, self._plan = self._plan, None
        if plan is None:
            return None
        ranges, table, dropped = plan

        def launch() -> None:
            self._partitions.flush()  # the order's last partition placed
            self._pruning.plan(self.order, ranges, table, self._search.results, self._bins, self._n_bins,
                               dropped, self._search.tail(3 * len(ranges)))
        return launch, 3 * len(ranges)

    def dropped_couplings(self, ranges: list, dropped, sources: Optional[list] = None) -> np.ndarray:
        """Per leaf the coupling of its dropped pairs: from the sums that came with the tree's last search
        (``sources``: each leaf's ``(planned leaf, part)``, part 0 all of it, 1 / 2 its split's left /
        right), else summed from the device row order in the tree's last read."""
        got, self.planned_got = self.planned_got, None
        if sources is not None and got is not None and len(sources) == len(ranges):
            if any(not (0 <= leaf < got.shape[0] // 3 and part in (0, 1, 2)) for leaf, part in sources):
                raise ValueError(f"sources must name planned leaves (< {got.shape[0] // 3}) and parts 0-2: {sources}")
            self._pruning.planned()
            return np.array([got[3 * leaf + part] for leaf, part in sources])
        return self._pruning.leaf_couplings(self.order, ranges, dropped, self._bins, self._n_bins)

    def _device_pairs(self, pairs: tuple) -> tuple:
        m, dtypes = int(pairs[0].shape[0]), tuple(a.dtype for a in pairs)
        first = pairs
        if not all(is_device_array(a) for a in pairs):  # device couplings stay put
            first = tuple(self.memory.copy_in(b, a) for b, a in zip(self.pool.buffers("pairs", m, dtypes), pairs))
            # on their grid already: the host's in-order sum is exact, the device's bits
            self._pc_sum = (first[2], sum_couplings(pairs[2], 0, m))
        return first, self.pool.buffers("pair scratch", m, dtypes)
