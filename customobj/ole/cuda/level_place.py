"""A breadth-first level's pair placings and smaller children's row histograms in one launch
(``ole_fast``, issue 42 item 3): :class:`LevelPlacing` collects each searched split's (its pairs counted by
the level's partitions, ``partitions.DevicePartitions.level``; its smaller child's row histogram, the
build ``histograms.DeviceHistograms.take_waiting`` hands over) and launches them all at once
(:func:`._level_place_kernels.place_sides_row_hist_level`), where it was one
``place_sides_row_hist`` launch a split.

Nothing reads what the launch writes before the level's feature choice (the larger children's
subtractions are held for it, ``SubtractQueue.hold``), except a flush of the subtraction queue mid-level
(the pool short of a histogram): the queue then launches what was collected first
(``SubtractQueue.pending_builds``). A split whose histogram is not one of the pool's (made beyond it)
makes the level fall back to a launch a split, as before: the same results.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._level_place_kernels import BUILD_COLUMNS, LB_HIST, LB_N, LB_SPLIT, LB_START, LevelRows
from .memory import DeviceMemory
from .partitions import segment_threads

__all__ = ["LevelPlacing"]


class LevelPlacing:
    """A fit's level launches of ``place_sides_row_hist_level`` (see the module docstring).

    Parameters
    ----------
    memory : DeviceMemory
        The fit's allocator (the build table is made here, once per fit, and copied queued).
    kernels : module or CountedKernels
        :mod:`._level_place_kernels` (counted: :mod:`.stats`).
    partitions, histograms
        The fit's :class:`~.partitions.DevicePartitions` (the level's pairs) and
        :class:`~.histograms.DeviceHistograms` (the builds, the pool, the subtraction queue).
    splits : int
        Most splits of a level (the partitions' ``level_splits``).
    """

    def __init__(self, memory: DeviceMemory, kernels: Any, partitions: Any, histograms: Any, *, splits: int) -> None:
        self.memory, self._kernels, self._partitions, self._histograms = memory, kernels, partitions, histograms
        n = max(int(splits), 1)
        self._splits = n
        # twice a level's splits, used in turn: a level flushed mid-way launches twice, and a launch's
        # rows are written again only after the level's read (the copy is queued, from page-locked memory)
        self._builds = memory.array((2 * n, BUILD_COLUMNS), np.int64)
        self._host = memory.staged((2 * n, BUILD_COLUMNS), np.int64)
        self._at = 0  # the next launch's first row of the tables
        self._items: list = []  # (split k, smaller child's first row, dst buffer, taken build or None, its sides)
        self._where: tuple = (None, ())  # (order, bufs) of the level collected (set by add with its items)

    def add(self, k: int, start: int, dst: int, taken: Optional[tuple], order: Any, bufs: tuple) -> None:
        """Split ``k`` of the partitions' last level: its pairs (placed into ``bufs[dst]``) and, with
        ``taken`` (``DeviceHistograms.take_waiting``'s build; None: its pairs only, ``ole``), its smaller
        child's row histogram (its rows from position ``start`` of the device ``order``), left for
        :meth:`launch`."""
        sides = self._partitions.level_sides(k)  # checked now: a split without counted pairs is refused here
        self._items.append((int(k), int(start), int(dst), taken, sides))
        self._where = (order, bufs)
        self._histograms.queue.pending_builds = self.launch  # whatever the queue applies first may read them

    def launch(self) -> None:
        """Launch what :meth:`add` collected: one launch, or (a histogram not the pool's, more splits than
        the table) each split's own ``place_sides_row_hist`` / ``place_sides_blocks``. Nothing read."""
        items, self._items = self._items, []
        self._histograms.queue.pending_builds = None
        if not items:
            return
        order, bufs = self._where
        pool, parts = self._histograms.pool, self._partitions
        builds = [t for _, _, _, t, _ in items if t is not None]
        if len(items) > self._splits or any(pool.index_of(t[2].out) < 0 for t in builds):
            for k, _, dst, taken, _ in items:  # each split's own launch, in order
                parts.placed(k, bufs[dst], wait=True)
                parts.place_sides(taken)
            return
        sides = [s for *_, s in items]
        if builds:  # the largest build's block shape and groups; its chunks or more
            (_, n_groups), threads = max(builds, key=lambda t: t[2].n)[3]
            bins_rm, tables = builds[0][0], builds[0][1]
        else:  # pairs only: a block of lanes per segment (partitions.segment_threads)
            n_groups, (bins_rm, tables) = 1, self._histograms.row_tables
            threads = (max(segment_threads(-(-s.n // max(s.nb, 1))) for s in sides), 1)
        if self._at + len(items) > self._host.shape[0]:
            self._at = 0  # the rows before: an earlier level's, read since (a level's are at most splits)
        at, self._at = self._at, self._at + len(items)
        per, blocks, host = int(threads[0]) * int(threads[1]), 1, self._host[at:]
        for j, (k, start, _, taken, s) in enumerate(items):
            row = host[j]
            row[LB_SPLIT], row[LB_START], row[LB_N], row[LB_HIST] = k, start, 0, -1
            if taken is not None:
                row[LB_N], row[LB_HIST] = taken[2].n, pool.index_of(taken[2].out)
                blocks = max(blocks, int(taken[3][0][0]))
            # the histogram's chunks, or one block per ``per`` segments of its pairs when those are more
            blocks = max(blocks, -(-s.nb // per))
        # queued behind the launches: these staged rows are written again only at a later level, after
        # this one's read
        dev = self.memory.copy_in_queued(self._builds[at:], host, len(items))
        table, pairs = parts.level_inputs(bufs)
        g = builds[0][2] if builds else None
        rows = LevelRows(order, *((g.g, g.h, g.steps) if g is not None else (parts.rho,) * 3), pool.hists, dev)
        self._kernels.place_sides_row_hist_level[(blocks, n_groups, 2 * len(items)), threads](
            bins_rm, *tables, rows, table, pairs, parts.go_left)
