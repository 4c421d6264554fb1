"""The tree's inputs on the card for the OLE GPU backend (:mod:`.backend`): its gradients,
hessians and couplings on their grids (:mod:`.fixed_point`), its root's sums, ``ole_fast``'s pair
pruning (:mod:`.pruning`) and the leaves' dropped couplings, summed with the tree's last search.

:class:`CUDATreeInputs` is the part of :class:`~customobj.ole.cuda.backend.CUDABackend` that starts a
tree (the backend's constructor makes the state it reads: the declarations below). Per tree:

- the grids: ``grid_max``, ``grid_units``, ``grid_round`` (3 launches for the rows and the device
  couplings together, :mod:`._reduce_kernels`: the grower gives :meth:`pair_buffers` the
  rows); the tree's first ``grid_max`` also clears the pool's histograms
  (:meth:`~customobj.ole.cuda.pool.DevicePool.clear_all`), and the couplings' rounding makes
  ``ole_fast``'s per-query tops (``QueryTops``);
- the root's sums: read with its split when it is searched (:meth:`root_sums`);
- ``ole_fast``: the pruning (3 more launches, nothing read: the kept count comes back with the root's
  split, the kept coupling is the root's ``C`` on the card) and, when a search may be the tree's
  last (:meth:`plan_leaf_couplings`), the leaves' dropped couplings summed before its results are
  read, read with them (:meth:`dropped_couplings`; a tree that ends earlier reads them once).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..._cuda_runtime import is_device_array
from ._launch import grid_launch
from ._reduce_kernels import GridItems, QueryTops
from ..backend import CPUBackend
from .memory import check_device_memory, device_memory_needed, free_device_memory
from ..fixed_point import grid_step_of

__all__ = ["CUDATreeInputs"]


class CUDATreeInputs(CPUBackend):
    """A tree's gradients, couplings, grids, root sums and pair pruning on the device (module docstring)."""

    # made by CUDABackend.__init__
    memory: Any
    pool: Any
    _k: Any
    _kr: Any
    _hists: Any
    _parts: Any
    _search: Any
    _pruning: Any
    _bins: Any
    _n_bins_d: Any
    _shape: dict
    _resident: int
    _gh: Any
    _no_idx: Any
    _no_tops: Any
    _rows_gridded: bool
    _clear_pool: bool
    _in_tree: bool
    _root_pending: bool
    _root_c: Optional[float]
    _pc_sum: Optional[tuple]
    _pairs_pending: Any
    _plan: Optional[tuple]
    _planned_got: Optional[np.ndarray]
    _grad: Any
    _hess: Any
    _order: Any

    def _begin_tree(self) -> None:
        """Counts go to a new tree from the tree's first call (its pairs, or its root sums) on; the
        tree's grids and root sums accumulate in zeroed device memory (the pool's ring)."""
        if not self._in_tree:
            self._in_tree = True
            self.memory.counter.begin_tree()
            self.memory.sample()  # the card's use as a tree starts (a real card only)
            acc = self.pool.tree_accumulators(self._k.zero)
            self._rstats, self._pstats, self._root, self._runits, self._punits = acc
            self._clear_pool = True  # by the tree's first grid launch (_grids)
            self._plan = self._planned_got = None
            self._rows_gridded = False  # the rows' grid: with the couplings' (pair_buffers) or root_sums

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
        with its split (None here: :meth:`searched_root_sums`)."""
        self._begin_tree()
        if not self._rows_gridded:
            self._grids(self._tree_rows(order, grad, hess), None)
        C = 0.0 if pc is None else self._root_coupling(pc, n_pairs)
        if searched:
            if C is not None:  # known here (0 without pairs): where the search reads it
                self.memory.copy_in(self._root[2:3], np.array([C]))
            self._root_pending, self._root_c = True, C
            return None
        got = self.memory.read(self._root[:3])
        self._root_sums = (float(got[0]), float(got[1]), float(got[2]) if C is None else float(C))
        return self._root_sums

    def _root_coupling(self, pc, n_pairs: int) -> Optional[float]:
        """The root's coupling: known already (a float), or summed on the device into ``_root[2]`` (None)."""
        known = self._pc_sum
        if known is not None and known[0] is pc and n_pairs == pc.shape[0]:
            return known[1]
        if not is_device_array(pc):
            return super().sum_couplings(pc, 0, n_pairs)
        acc = self._root[2:4]  # the tree's: zeroed (_begin_tree)
        self._kr.coupling_sums[grid_launch(n_pairs)](pc, 0, n_pairs, acc)
        return None

    def _tree_rows(self, order: np.ndarray, grad, hess) -> GridItems:
        """The tree's rows (the device order starts from them) and gradients on the device: their grid's
        items (rounded into ``_gh``, summed into the root's ``G, H``)."""
        self._order = self.pool.start_rows(order)  # partitioned there from now on
        if not is_device_array(grad):
            gh = self.pool.buffers("gradients", int(grad.shape[0]), (np.float64, np.float64))
            grad, hess = (self.memory.copy_in(b, a) for b, a in zip(gh, (grad, hess)))
        self._grad, self._hess = grad, hess
        self._rows_gridded = True
        return GridItems(grad, hess, self._order, True, int(order.shape[0]), self._rstats, self._runits, self._gh[0],
                         self._gh[1], self._root[0:2])

    def _grids(self, rows: Optional[GridItems], pairs: Optional[GridItems], tops: Optional[QueryTops] = None) -> None:
        """The rows' and the couplings' grids (either may be None) in one set of launches: max, unit
        sums, round (the accumulators: the tree's, zeroed); ``tops``: the couplings' per-query tops."""
        x = rows if rows is not None else pairs
        assert x is not None
        y = pairs if pairs is not None and rows is not None else x._replace(n=0)
        launch = grid_launch(max(x.n, y.n))
        clear, self._clear_pool = (self._hists.clear_all() if self._clear_pool else self.pool.no_clear), False
        kr = self._kr
        kr.grid_max[launch](x, y, clear)  # the tree's first clears the histograms
        kr.grid_units[launch](x, y)
        kr.grid_round[launch](x, y, self._no_tops if tops is None else tops)

    def round_pairs(self, pc, rows: Optional[tuple] = None, pi: Any = None) -> None:
        """The tree's couplings onto their grid (:mod:`.fixed_point`) where they are: device ones by
        the reductions (their sum, the root's ``C``, into ``_root[2]``; with ``rows``, ``(order, grad,
        hess)``, the rows' grid in the same launches; with ``pi`` and pruning, its per-query tops),
        host ones as the CPU does (the joint solve keeps that copy; their step then goes to the
        device, and they follow: _device_pairs)."""
        if not is_device_array(pc):
            super().round_pairs(pc)
            step = grid_step_of(pc, 0, pc.shape[0])
            self.memory.copy_in(self._pstats, np.array([0.0, 0.0, step, step]))
            return
        items = GridItems(pc, pc, self._no_idx, False, int(pc.shape[0]), self._pstats, self._punits, pc, pc,
                          self._root[2:4])
        tops = None if self._pruning is None or pi is None else self._pruning.query_tops(pi, pc)
        self._grids(None if rows is None else self._tree_rows(*rows), items, tops)
        self._pc_sum = (pc, None)

    def pair_buffers(self, pairs: tuple, rows: Optional[tuple] = None) -> tuple:
        """The tree's two pair buffers on the device (host pairs copied into the pool once per tree),
        their couplings on their grid (before :meth:`prune_pairs`; with ``rows``, ``(order, grad, hess)``,
        the rows' grid in the same launches), after checking that they fit next to the rest."""
        self._begin_tree()
        need = device_memory_needed(**self._shape, n_pairs=pairs[0].shape[0])
        # device pairs (the objective's couplings, scores) already hold the first of the two buffers
        held = (need["pairs"] // 2 if is_device_array(pairs[0]) else 0) + self.pool.buffer_bytes
        check_device_memory(need, free=free_device_memory() + self._resident + held)
        self._pc_sum = None
        self.round_pairs(pairs[2], rows, pairs[0])
        return self._device_pairs(pairs)

    def prune_pairs(self, bufs: tuple) -> tuple:
        """``ole_fast``'s pruning on the card (:mod:`.pruning`): the kept pairs first, the dropped
        ones and the kept count (on the card: it comes back with the root's split, its coupling is the
        root's ``C`` there)."""
        if self._pruning is None:
            return bufs, None, None
        bufs, kept, dropped = self._pruning.prune(bufs, self._root[2:4])
        self._pc_sum = (bufs[0][2], None)  # the root's C: on the device
        self._pairs_pending = kept  # the root's pair range comes back with its split
        return bufs, dropped, kept

    def plan_leaf_couplings(self, leaves: list, dropped) -> None:
        """The next search may be the tree's last (one split at most after it): its leaves' dropped
        couplings, and each side's of each one's split, are summed on the card before its results
        are read, and come back with them (``leaves``: ``(start, end, split)``, see the CPU's)."""
        if self._pruning is None or dropped is None:
            return
        table = np.full((max(len(leaves), 1), 4), -1, np.int64)
        for row, (_, _, split) in zip(table, leaves):
            if isinstance(split, (int, np.integer)):  # the split the search finds for its node ``split``
                if not 0 <= split < 2:
                    raise ValueError(f"a leaf's split in a plan is a search's node 0 or 1, got {split}")
                row[3] = split
            elif split is not None and split.gain > 0:
                row[:3] = (split.feature, split.bin, int(split.nan_left))
        self._plan = ([(s, e) for s, e, _ in leaves], table, dropped)

    def _planned_sums(self) -> Optional[tuple]:
        """The plan's sums launched (``before_read`` of the search): ``(callable, tail length)``."""
        plan, self._plan = self._plan, None
        if plan is None:
            return None
        ranges, table, dropped = plan

        def launch() -> None:
            self._parts.flush()  # the order's last partition placed
            self._pruning.plan(self._order, ranges, table, self._search.results, self._bins, self._n_bins_d,
                               dropped, self._search.tail(3 * len(ranges)))
        return launch, 3 * len(ranges)

    def dropped_couplings(self, order: np.ndarray, ranges: list, dropped, sources: Optional[list] = None) -> np.ndarray:
        """Per leaf the coupling of its dropped pairs: from the sums that came with the tree's last search
        (``sources``: each leaf's ``(planned leaf, part)``, part 0 all of it, 1 / 2 its split's left /
        right), else summed from the device row order in the tree's last read."""
        got, self._planned_got = self._planned_got, None
        if sources is not None and got is not None and len(sources) == len(ranges):
            if any(not (0 <= leaf < got.shape[0] // 3 and part in (0, 1, 2)) for leaf, part in sources):
                raise ValueError(f"sources must name planned leaves (< {got.shape[0] // 3}) and parts 0-2: {sources}")
            self._pruning.planned()
            return np.array([got[3 * leaf + part] for leaf, part in sources])
        return self._pruning.leaf_couplings(self._order, ranges, dropped, self._bins, self._n_bins_d)

    def _device_pairs(self, pairs: tuple) -> tuple:
        m, dtypes = int(pairs[0].shape[0]), tuple(a.dtype for a in pairs)
        first = pairs
        if not all(is_device_array(a) for a in pairs):  # device couplings stay put
            first = tuple(self.memory.copy_in(b, a) for b, a in zip(self.pool.buffers("pairs", m, dtypes), pairs))
            # on their grid already: the host's in-order sum is exact, the device's bits
            self._pc_sum = (first[2], CPUBackend.sum_couplings(self, pairs[2], 0, m))
        return first, self.pool.buffers("pair scratch", m, dtypes)
