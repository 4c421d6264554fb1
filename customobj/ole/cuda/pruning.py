r"""``criterion="ole_fast"``'s pair pruning and its dropped couplings per leaf on the card, for the
GPU backend (:mod:`.backend`): the pairs never leave the device, and nothing here reads more
than the tree's searches already do.

:class:`DevicePruning` holds, for one fit, the rows' query indices (uploaded once), the per-query
tables (each query's top key, mass and bucket masses, ``N_BUCKETS`` float64 a query, zero between
trees: the kernel that reads them last clears them), the partition's block counts and the kept
pairs' record, each row's leaf and the leaves' ranges, splits and sums; it allocates nothing per
tree (a tree with more leaves than the fit's ``num_leaves`` would grow the leaf buffers, counted);
the backend's memory refusal counts its bytes (:meth:`DevicePruning.memory_needed`, the item
``"pair pruning"``). Per tree, through the fit's counted kernels (:mod:`._pruning_kernels`):

- :meth:`DevicePruning.prune`: ``query_tops`` (or, device couplings, in the launch that rounds them:
  :meth:`DevicePruning.query_tops`), ``query_masses``, ``count_kept_blocks``, ``place_kept_blocks``
  (3 or 4 launches, each query's cut made where its pairs are counted and placed),
  nothing read: the kept count comes back with the root's split, as a split's pair counts do, and
  the kept coupling is the root's ``C`` on the card;
- :meth:`DevicePruning.plan`, with a search after which at most one split is left: the leaves'
  ranges and splits copied in (56 bytes a leaf), ``leaf_map`` and ``dropped_leaf_sums`` (2
  launches): every leaf's dropped coupling and each side's of its split, read with the search;
- :meth:`DevicePruning.leaf_couplings`, only for a tree that ends before such a search: the same
  launches without splits and one read (24 bytes a leaf).

Why the result is the CPU's bit for bit (:func:`customobj.ole.pair_pruning.prune_for_tree` and
:func:`~customobj.ole.pair_pruning.dropped_leaf_couplings`): the couplings are on the tree's grid
(:mod:`.fixed_point`) before they are pruned (the backend's ``pair_buffers`` rounds them first),
so each query's mass, bucket masses and dropped mass, the kept coupling and the leaves' dropped
couplings are exact sums, equal in any order; keys and cuts are integers; the budget
``eps * M_q`` is one float64 product on both. The kept pairs are placed stably (the CPU's order);
the dropped ones behind them, in their order (their set is the CPU's). A leaf's split sends a row
where the row partition does (``partition._mark_rows``' rule). (A non-finite coupling leaves the
tree's grid step at 0: its sums are then exact neither here nor on the CPU.)

Examples
--------
>>> import numpy as np
>>> from customobj.ole.cuda.memory import DeviceMemory
>>> mem = DeviceMemory()
>>> prune = DevicePruning(mem, np.array([0, 0, 0, 1, 1, 1], np.int32), 2, epsilon=0.1, n_rows=6, num_leaves=2)
>>> pairs = (np.array([0, 0, 1, 3, 3], np.int32), np.array([1, 2, 2, 4, 5], np.int32),
...          np.array([1.0, 0.0625, 0.5, 2.0, 2.0]))   # on a grid: exact sums
>>> src, dst = tuple(mem.upload(a) for a in pairs), tuple(mem.upload(np.zeros_like(a)) for a in pairs)
>>> c = mem.upload(np.zeros(2))
>>> (kept, other), counts, dropped = prune.prune((src, dst), c)
>>> counts.counts, mem.read(kept[2]).tolist(), float(mem.read(c)[0])   # 0.0625 <= 0.1 * 1.5625 is dropped
((4, 0), [1.0, 0.5, 2.0, 2.0, 0.0625], 5.5)
>>> order = mem.upload(np.array([2, 0, 1, 3, 4, 5]))   # the tree's rows: leaf 0 holds 2, 0, 1
>>> bins = mem.upload(np.zeros((1, 6), np.uint8))
>>> prune.leaf_couplings(order, [(0, 3), (3, 6)], dropped, bins, mem.upload(np.array([2]))).tolist()
[0.0625, 0.0]
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np

from ._launch import grid_launch
from .memory import DeviceMemory
from ._pruning_kernels import LeafSplits, PairArrays, QueryTables
from ._reduce_kernels import QueryTops
from ..common import PART_RECORD, RESULT_SIZE
from .partitions import MAX_PARTITION_BLOCKS, DevicePairCounts, _segments, partition_segments
from ..pair_pruning_kernels import N_BUCKETS

__all__ = ["DevicePruning", "DeviceDropped", "LEAF_BITS"]

#: A row's leaf in ``leaf_map`` is ``stamp + leaf``, ``stamp = tree << LEAF_BITS``: a later tree's are
#: larger, so a row of an earlier tree (or of none: 0) is in no leaf (``num_leaves`` < 2**17).
LEAF_BITS = 32


class DeviceDropped(NamedTuple):
    """The pairs a tree's splits were searched without, on the device: ``pairs[record[0]:]`` of
    ``pairs = (pi, pj, pc)`` (``record``: the kept count, on the card)."""

    pairs: tuple
    record: Any


class DevicePruning:
    """A fit's pruning tables and launches (see the module docstring).

    Parameters
    ----------
    memory : DeviceMemory
        The fit's allocator and counter.
    query_of_row : ndarray of int32
        Each training row's query (``0 <= q < n_queries``).
    n_queries : int
    epsilon : float
        ``ole_fast_epsilon``: the share of each query's coupling mass that may be dropped, in ``[0, 1)``.
    n_rows, num_leaves : int
        The training rows (pairs index them) and the most leaves of a tree.
    kernels : module or CountedKernels, optional
        :mod:`._pruning_kernels` (the backend passes them counted: :mod:`.stats`).
    """

    def __init__(self, memory: DeviceMemory, query_of_row: np.ndarray, n_queries: int, *, epsilon: float,
                 n_rows: int, num_leaves: int, kernels: Any = None) -> None:
        if kernels is None:
            from . import _pruning_kernels as kernels
        self.eps = float(epsilon)
        if not 0.0 <= self.eps < 1.0:
            raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
        qor = np.ascontiguousarray(query_of_row, dtype=np.int32)
        self.n_queries = nq = int(n_queries)
        if qor.shape[0] != int(n_rows) or (qor.size and (qor.min() < 0 or qor.max() >= nq)):
            raise ValueError(f"query_of_row must hold {n_rows} query indices in [0, {nq})")
        self.memory, self._kernels = memory, kernels
        self._qor = memory.upload(qor)
        q = max(nq, 1)
        # zero once here; dropped_leaf_sums sets them back to 0 after each tree's use
        self._tables = QueryTables(memory.upload(np.zeros(q, np.int64)), memory.upload(np.zeros(q)),
                                   memory.upload(np.zeros((q, N_BUCKETS))), self.eps)
        self._tops_of: Any = None  # the couplings whose query tops grid_round made (query_tops)
        self._counts = memory.array((MAX_PARTITION_BLOCKS, 2), np.int64)
        self._record = memory.array((PART_RECORD,), np.int64)  # the kept pairs' counts: [kept | 0]
        self._no_res = memory.array((2, RESULT_SIZE), np.float64)  # no search results to point at
        self._leaf_of_row = memory.upload(np.zeros(max(int(n_rows), 1), np.int64))  # stamp 0: no tree
        self._trees = 0
        self.pending = False  #: a tree pruned whose dropped couplings (:meth:`leaf_couplings`) are to come
        self._leaf_bufs(max(int(num_leaves), 1))

    @classmethod
    def for_fit(cls, memory: DeviceMemory, ctx: Any, params: Any) -> "Optional[DevicePruning]":
        """The pruning of a fit (``ctx``: its :class:`~customobj.ole.context.GrowContext`, ``params``: its
        ``GrowParams``) with counted kernels (:mod:`.stats`), or None when it prunes nothing."""
        if not params.criterion.prunes_pairs or ctx.queries is None:
            return None
        from . import _pruning_kernels
        from .stats import CountedKernels

        return cls(memory, *ctx.queries, epsilon=params.criterion.ole_fast_epsilon, n_rows=ctx.data.n_rows,
                   num_leaves=params.num_leaves, kernels=CountedKernels(_pruning_kernels, memory.counter))

    @staticmethod
    def memory_needed(*, n_rows: int, n_queries: int, num_leaves: int) -> int:
        """Bytes a fit's pruning holds on the device (what :class:`DevicePruning` allocates): the rows'
        queries and leaves (int32, int64), per query its tables (top, mass, ``N_BUCKETS`` bucket
        masses: ``8 * (N_BUCKETS + 2)``), the partition's block counts and record, per leaf its range,
        split and three sums."""
        q, n, leaves = max(int(n_queries), 1), max(int(n_rows), 1), max(int(num_leaves), 1)
        return (int(n) * (4 + 8) + q * 8 * (N_BUCKETS + 2) + MAX_PARTITION_BLOCKS * 16 + 8 * PART_RECORD
                + 16 * RESULT_SIZE + leaves * 80)

    @classmethod
    def memory_for_fit(cls, ctx: Any, params: Any) -> dict:
        """``{"pair pruning": bytes}`` of the fit's pruning (:meth:`for_fit`), ``{}`` without one: an item
        of :func:`~customobj.ole.cuda.memory.device_memory_needed`'s record for the memory refusal."""
        if not params.criterion.prunes_pairs or ctx.queries is None:
            return {}
        return {"pair pruning": cls.memory_needed(n_rows=ctx.data.n_rows, n_queries=ctx.queries[1],
                                                  num_leaves=params.num_leaves)}

    def _leaf_bufs(self, n_leaves: int) -> None:
        self._ranges = self.memory.array((3 * n_leaves,), np.int64)
        self._sums = self.memory.array((3 * n_leaves,), np.float64)
        self._splits = self.memory.array((n_leaves, 4), np.int64)

    def prune(self, bufs: tuple, kept_c: Any) -> tuple:
        """``bufs = (pairs, scratch)`` (device, couplings on their grid) pruned per query:
        ``((kept, other), kept_counts, dropped)``. ``kept``: ``scratch``, the kept pairs first, in
        their order, then the :class:`DeviceDropped` ones; ``other``: ``pairs``, the buffer they
        ping-pong with. The kept count stays on the card (``kept_counts``, a
        :class:`~customobj.ole.cuda.partitions.DevicePairCounts` ``(kept, 0)`` that comes back with the
        root's split) and so does their coupling, in ``kept_c[0]`` (the root's ``C``): nothing is read."""
        src, dst = bufs
        m, kernels = int(src[2].shape[0]), self._kernels
        if any(int(a.shape[0]) != m for a in src) or any(int(a.shape[0]) < m for a in dst):
            raise ValueError("DevicePruning.prune: pair arrays of different lengths or a scratch buffer too short")
        pi, pj, pc = src
        bits = pc.view(np.int64)
        launch = grid_launch(m)
        if self._tops_of is not pc:  # not made as the couplings were rounded (query_tops below)
            kernels.query_tops[launch](self._tops(pi, pc), pc, m)
        self._tops_of = None
        kernels.query_masses[launch](pi, pc, bits, self._qor, m, self._tables.tops, self._tables.mass, self._record,
                                     kept_c)
        nb = partition_segments(m)  # a block of lanes (a warp) per segment, as the partitions'
        kernels.count_kept_blocks[_segments(m, nb)](PairArrays(*src), bits, self._qor, self._tables, m, nb,
                                                    self._counts, self._record, kept_c)
        kernels.place_kept_blocks[_segments(m, nb)](PairArrays(*src), bits, self._qor, self._tables, m, nb,
                                                    self._counts, self._record, PairArrays(*dst[:3]))
        self.pending = True
        kept, other = tuple(a[:m] for a in dst), src
        return (kept, other), DevicePairCounts(self.memory, self._record), DeviceDropped(kept, self._record)

    def query_tops(self, pi: Any, pc: Any) -> QueryTops:
        """The first step of :meth:`prune` for the pairs ``(pi, ..., pc)``, done by the kernel that rounds
        their couplings onto the tree's grid (``_reduce_kernels.grid_round``): its record. The
        next :meth:`prune` of these couplings then launches one kernel fewer."""
        self._tops_of = pc
        return self._tops(pi, pc)

    def _tops(self, pi: Any, pc: Any) -> QueryTops:
        return QueryTops(pi, pc.view(np.int64), self._qor, self._tables.tops, self._tables.totals, True)

    def _sum_leaves(self, order: Any, ranges: list, dropped: DeviceDropped, table: np.ndarray, res: Any,
                    bins: Any, n_bins: Any, out: Optional[Any] = None) -> Any:
        """:func:`~._pruning_kernels.leaf_map` and :func:`~._pruning_kernels.dropped_leaf_sums`
        of the leaves ``ranges`` with their splits ``table`` (2 launches) into ``out`` (``3 * leaves``
        float64 on the device; None: the pruning's own), not read."""
        n_leaves = len(ranges)
        if n_leaves > self._sums.shape[0] // 3:
            self._leaf_bufs(n_leaves)
        if out is not None and int(out.shape[0]) != 3 * n_leaves:
            raise ValueError(f"the leaves' sums take {3 * n_leaves} values, not {out.shape[0]}")
        self._trees += 1
        stamp = self._trees << LEAF_BITS  # rows of earlier trees hold smaller stamps
        se = np.asarray(ranges, dtype=np.int64).reshape(n_leaves, 2)
        if n_leaves and (se.min() < 0 or se.max() > order.shape[0] or (se[:, 1] < se[:, 0]).any()):
            raise ValueError(f"leaf ranges must be (start, end) positions within the {order.shape[0]} rows of order")
        by_start = np.lexsort((se[:, 1], se[:, 0]))  # an empty leaf before the one starting where it does
        flat = self.memory.copy_in(self._ranges[:3 * n_leaves],
                                   np.concatenate([se[by_start, 0], se[by_start, 1], by_start]))
        starts, ends, leaves = (flat[i * n_leaves:(i + 1) * n_leaves] for i in range(3))
        n, sums = int(se[:, 1].max()) if n_leaves else 0, self._sums[:3 * n_leaves] if out is None else out
        self._kernels.leaf_map[grid_launch(max(n, n_leaves))](order, n, starts, ends, leaves, n_leaves, stamp,
                                                         self._leaf_of_row, sums)
        splits = LeafSplits(self.memory.copy_in(self._splits[:max(n_leaves, 1)], table), res, bins, n_bins)
        md = int(dropped.pairs[2].shape[0])
        self._kernels.dropped_leaf_sums[grid_launch(max(md, self.n_queries))](
            PairArrays(*dropped.pairs), dropped.record, md, self._leaf_of_row, stamp, n_leaves, splits, sums,
            self._tables)
        return sums

    def plan(self, order: Any, ranges: list, table: np.ndarray, res: Any, bins: Any, n_bins: Any,
             dropped: DeviceDropped, out: Optional[Any] = None) -> Any:
        """The dropped couplings of the leaves ``ranges`` (positions of the device row ``order``) and of
        each side of each one's split (``table``: :class:`~._pruning_kernels.LeafSplits`' rows;
        ``res``: the search's results they may point to), summed before the search's results are
        read, so they come back with them: ``3 * leaves`` values ``[inside, left, right]`` on the
        device, in ``out`` (the search's tail; None: the pruning's own), 2 launches, nothing read.
        ``bins``, ``n_bins``: the binned matrix (feature-major) and the features' bins. The tree's
        counts end at :meth:`planned`."""
        return self._sum_leaves(order, ranges, dropped, np.ascontiguousarray(table, dtype=np.int64), res, bins,
                                n_bins, out)

    def planned(self) -> None:
        """The tree's dropped couplings came with its last search (:meth:`plan`): its counts end."""
        self.pending = False
        self.memory.counter.end_tree()

    def leaf_couplings(self, order: Any, ranges: list, dropped: DeviceDropped, bins: Any, n_bins: Any) -> np.ndarray:
        """Per leaf (positions ``(s, e)`` of the device row ``order``, for each of ``ranges``) the
        coupling of the ``dropped`` pairs inside it (exact): one read, which ends the tree's counts
        (:meth:`~customobj.ole.cuda.stats.DeviceCounter.end_tree`: the tree's end (``DeviceTree.end``) leaves
        them open while :attr:`pending`). A tree that ended before a search that could be its last."""
        self.pending = False
        table = np.full((max(len(ranges), 1), 4), -1, np.int64)  # no splits: the leaves' own sums
        sums = self._sum_leaves(order, ranges, dropped, table, self._no_res, bins, n_bins)
        out = self.memory.read(sums)[0::3] if len(ranges) else np.zeros(0)
        self.memory.counter.end_tree()  # the tree's last call: its row order (the backend's) left it open
        return out
