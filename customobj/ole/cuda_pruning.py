r"""``criterion="ole_fast"``'s pair pruning and its dropped couplings per leaf on the card, for the
GPU backend (:mod:`.cuda_backend`): the pairs never leave the device.

:class:`DevicePruning` holds, for one fit, the rows' query indices (uploaded once), the per-query
tables (each query's top key, mass and bucket masses, ``N_BUCKETS`` float64 a query, zero between
trees: the kernel that reads them last clears them), its thresholds, the partition's block counts,
each row's leaf and the leaves' ranges and sums; it allocates nothing per tree (a tree with more
leaves than the fit's ``num_leaves`` would grow the leaf buffers, counted); the backend's memory
refusal counts its bytes (:meth:`DevicePruning.memory_needed`, the item ``"pair pruning"``). Per
tree, through the fit's counted kernels (:mod:`._cuda_prune_kernels`):

- :meth:`DevicePruning.prune`: ``query_tops``, ``query_masses``, ``query_cuts``,
  ``count_kept_blocks``, ``place_kept_blocks`` (5 launches), one read of 16 bytes (the kept count
  and their coupling, the root's ``C``);
- :meth:`DevicePruning.leaf_couplings`: the leaves' ranges copied in (24 bytes a leaf), ``leaf_map``
  and ``dropped_leaf_sums`` (2 launches), one read (8 bytes a leaf).

Why the result is the CPU's bit for bit (:func:`customobj.ole.pair_pruning.prune_for_tree` and
:func:`~customobj.ole.pair_pruning.dropped_leaf_couplings`): the couplings are on the tree's grid
(:mod:`.fixed_point`) before they are pruned (the backend's ``pair_buffers`` rounds them first),
so each query's mass, bucket masses and dropped mass, the kept coupling and the leaves' dropped
couplings are exact sums, equal in any order; keys and cuts are integers; the budget
``eps * M_q`` is one float64 product on both. The kept pairs are placed stably (the CPU's order);
the dropped ones behind them, in their order (their set is the CPU's). (A non-finite coupling leaves
the tree's grid step at 0: its sums are then exact neither here nor on the CPU.)

Examples
--------
>>> import numpy as np
>>> from customobj._cuda_runtime import cuda_module
>>> from customobj.ole.cuda_memory import DeviceMemory
>>> mem = DeviceMemory(cuda_module())
>>> prune = DevicePruning(mem, np.array([0, 0, 0, 1, 1, 1], np.int32), 2, epsilon=0.1, n_rows=6, num_leaves=2)
>>> pairs = (np.array([0, 0, 1, 3, 3], np.int32), np.array([1, 2, 2, 4, 5], np.int32),
...          np.array([1.0, 0.0625, 0.5, 2.0, 2.0]))   # on a grid: exact sums
>>> src, dst = tuple(mem.upload(a) for a in pairs), tuple(mem.upload(np.zeros_like(a)) for a in pairs)
>>> (kept, other), c_kept, dropped = prune.prune((src, dst))
>>> mem.read(kept[2]).tolist(), c_kept   # 0.0625 <= 0.1 * 1.5625 is dropped
([1.0, 0.5, 2.0, 2.0], 5.5)
>>> order = mem.upload(np.array([2, 0, 1, 3, 4, 5]))   # the tree's rows: leaf 0 holds 2, 0, 1
>>> prune.leaf_couplings(order, [(0, 3), (3, 6)], dropped).tolist()
[0.0625, 0.0]
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np

from ._cuda_launch import grid_launch
from .cuda_memory import DeviceMemory
from .cuda_partitions import MAX_PARTITION_BLOCKS, _blocks, partition_blocks
from .pair_pruning_kernels import N_BUCKETS

__all__ = ["DevicePruning", "DeviceDropped", "LEAF_BITS"]

#: A row's leaf in ``leaf_map`` is ``stamp + leaf``, ``stamp = tree << LEAF_BITS``: a later tree's are
#: larger, so a row of an earlier tree (or of none: 0) is in no leaf (``num_leaves`` < 2**17).
LEAF_BITS = 32


class DeviceDropped(NamedTuple):
    """The pairs a tree's splits were searched without, on the device: ``(pi, pj, pc)``."""

    pairs: tuple


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
        :mod:`._cuda_prune_kernels` (the backend passes them counted: :mod:`.cuda_stats`).
    """

    def __init__(self, memory: DeviceMemory, query_of_row: np.ndarray, n_queries: int, *, epsilon: float,
                 n_rows: int, num_leaves: int, kernels: Any = None) -> None:
        if kernels is None:
            from . import _cuda_prune_kernels as kernels
        self.eps = float(epsilon)
        if not 0.0 <= self.eps < 1.0:
            raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
        qor = np.ascontiguousarray(query_of_row, dtype=np.int32)
        self.n_queries = nq = int(n_queries)
        if qor.shape[0] != int(n_rows) or (qor.size and (qor.min() < 0 or qor.max() >= nq)):
            raise ValueError(f"query_of_row must hold {n_rows} query indices in [0, {nq})")
        self.memory, self._k = memory, kernels
        self._qor = memory.upload(qor)
        q = max(nq, 1)
        # zero once here; query_cuts sets them back to 0 after each tree's use
        self._tops, self._totals = memory.upload(np.zeros(q, np.int64)), memory.upload(np.zeros(q))
        self._mass = memory.upload(np.zeros((q, N_BUCKETS)))
        self._thresholds = memory.array((q, 2), np.int64)
        self._counts = memory.array((MAX_PARTITION_BLOCKS, 2), np.int64)
        self._acc = memory.array((4,), np.int64)  # the kept count (int64) and their coupling (float64 [2])
        self._leaf_of_row = memory.upload(np.zeros(max(int(n_rows), 1), np.int64))  # stamp 0: no tree
        self._trees = 0
        self.pending = False  #: a tree pruned whose dropped couplings (:meth:`leaf_couplings`) are to come
        self._leaf_bufs(max(int(num_leaves), 1))

    @classmethod
    def for_fit(cls, memory: DeviceMemory, ctx: Any, params: Any) -> "Optional[DevicePruning]":
        """The pruning of a fit (``ctx``: its :class:`~customobj.ole.context.GrowContext`, ``params``: its
        ``GrowParams``) with counted kernels (:mod:`.cuda_stats`), or None when it prunes nothing."""
        if not params.criterion.prunes_pairs or ctx.queries is None:
            return None
        from . import _cuda_prune_kernels
        from .cuda_stats import CountedKernels

        return cls(memory, *ctx.queries, epsilon=params.criterion.ole_fast_epsilon, n_rows=ctx.data.n_rows,
                   num_leaves=params.num_leaves, kernels=CountedKernels(_cuda_prune_kernels, memory.counter))

    @staticmethod
    def memory_needed(*, n_rows: int, n_queries: int, num_leaves: int) -> int:
        """Bytes a fit's pruning holds on the device (what :class:`DevicePruning` allocates): the rows'
        queries and leaves (int32, int64), per query its tables (top, mass, ``N_BUCKETS`` bucket
        masses, threshold: ``8 * (N_BUCKETS + 4)``), the partition's block counts, per leaf its range
        and sum."""
        q, n, leaves = max(int(n_queries), 1), max(int(n_rows), 1), max(int(num_leaves), 1)
        return int(n) * (4 + 8) + q * 8 * (N_BUCKETS + 4) + MAX_PARTITION_BLOCKS * 16 + 32 + leaves * 32

    @classmethod
    def memory_for_fit(cls, ctx: Any, params: Any) -> dict:
        """``{"pair pruning": bytes}`` of the fit's pruning (:meth:`for_fit`), ``{}`` without one: an item
        of :func:`~customobj.ole.cuda_memory.device_memory_needed`'s record for the memory refusal."""
        if not params.criterion.prunes_pairs or ctx.queries is None:
            return {}
        return {"pair pruning": cls.memory_needed(n_rows=ctx.data.n_rows, n_queries=ctx.queries[1],
                                                  num_leaves=params.num_leaves)}

    def _leaf_bufs(self, n_leaves: int) -> None:
        self._ranges = self.memory.array((3 * n_leaves,), np.int64)
        self._sums = self.memory.array((n_leaves,), np.float64)

    def prune(self, bufs: tuple) -> tuple:
        """``bufs = (pairs, scratch)`` (device, couplings on their grid) pruned per query:
        ``((kept, other), C_kept, dropped)``: the kept pairs, in their order, in ``scratch[:k]``, the
        buffer they ping-pong with (``pairs[:k]``), their coupling (exact) and the
        :class:`DeviceDropped` pairs ``scratch[k:]``."""
        src, dst = bufs
        m, k, nq = int(src[2].shape[0]), self._k, self.n_queries
        if any(int(a.shape[0]) != m for a in src) or any(int(a.shape[0]) < m for a in dst):
            raise ValueError("DevicePruning.prune: pair arrays of different lengths or a scratch buffer too short")
        pi, pj, pc = src
        bits = pc.view(np.int64)
        acc = self._acc
        totals, couplings = acc[0:2], acc[2:4].view(np.float64)
        launch = grid_launch(m)
        k.query_tops[launch](pi, pc, bits, self._qor, m, self._tops, self._totals)
        k.query_masses[launch](pi, pc, bits, self._qor, m, self._tops, self._mass)
        k.query_cuts[grid_launch(nq)](self._tops, self._totals, self._mass, nq, self.eps,
                                      self._thresholds, acc)
        nb = partition_blocks(m)
        k.count_kept_blocks[_blocks(nb)](pi, pc, bits, self._qor, self._thresholds, m, nb, self._counts, totals,
                                         couplings)
        k.place_kept_blocks[_blocks(nb)](pi, pj, pc, bits, self._qor, self._thresholds, m, nb, self._counts, totals,
                                         *dst)
        got = self.memory.read(acc)
        self.pending = True
        n_kept, c_kept = int(got[0]), float(got[2:4].view(np.float64)[0])
        kept, other = tuple(a[:n_kept] for a in dst), tuple(a[:n_kept] for a in src)
        return (kept, other), c_kept, DeviceDropped(tuple(a[n_kept:m] for a in dst))

    def leaf_couplings(self, order: Any, ranges: list, dropped: DeviceDropped) -> np.ndarray:
        """Per leaf (positions ``(s, e)`` of the device row ``order``, for each of ``ranges``) the
        coupling of the ``dropped`` pairs inside it (exact): one read, which ends the tree's counts
        (:meth:`~customobj.ole.cuda_stats.DeviceCounter.end_tree`: the backend's ``row_order`` leaves
        them open while :attr:`pending`)."""
        n_leaves, self.pending = len(ranges), False
        if n_leaves == 0:  # no tree has none; nothing to read
            self.memory.counter.end_tree()
            return np.zeros(0)
        if n_leaves > self._sums.shape[0]:
            self._leaf_bufs(n_leaves)
        self._trees += 1
        stamp = self._trees << LEAF_BITS  # rows of earlier trees hold smaller stamps
        se = np.asarray(ranges, dtype=np.int64).reshape(n_leaves, 2)
        if se.min() < 0 or se.max() > order.shape[0] or (se[:, 1] < se[:, 0]).any():
            raise ValueError(f"leaf ranges must be (start, end) positions within the {order.shape[0]} rows of order")
        by_start = np.lexsort((se[:, 1], se[:, 0]))  # an empty leaf before the one starting where it does
        flat = self.memory.copy_in(self._ranges, np.concatenate([se[by_start, 0], se[by_start, 1], by_start]))
        starts, ends, leaves = (flat[i * n_leaves:(i + 1) * n_leaves] for i in range(3))
        n, sums = int(se[:, 1].max()), self._sums[:n_leaves]
        self._k.leaf_map[grid_launch(max(n, n_leaves))](order, n, starts, ends, leaves, n_leaves, stamp,
                                                         self._leaf_of_row, sums)
        pi, pj, pc = dropped.pairs
        md = int(pc.shape[0])
        self._k.dropped_leaf_sums[grid_launch(md)](pi, pj, pc, md, self._leaf_of_row, stamp, n_leaves, sums)
        out = self.memory.read(sums)
        self.memory.counter.end_tree()  # the tree's last call: its row order (the backend's) left it open
        return out
