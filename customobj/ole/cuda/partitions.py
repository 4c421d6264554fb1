"""The OLE GPU backend's partitions and coupling sums (:mod:`.backend`): a split's rows and
pairs reordered on the card, and the children's couplings read back with the pair counts.

:class:`DevicePartitions` holds the scratch every partition reuses (made once per fit: the rows'
sides and temporary order, the blocks' counts and offsets, a ring of coupling accumulators) and
launches, through the fit's counted kernels (:mod:`.stats`):

- a row partition: ``mark_rows_blocks``, ``place_rows_blocks`` (2 launches, nothing read: the left
  count is the split's own, exact histogram count); the placing waits (:meth:`DevicePartitions.flush`)
  until the order is used or the split's pairs are partitioned;
- a pair partition: ``count_sides_blocks`` (the counts and their totals; in the same launch as the
  waiting rows' placing: ``place_rows_count_sides``), ``place_sides_blocks`` (``ole_fast``: in the
  launch of the smaller child's row histogram, ``place_sides_row_hist``, :meth:`DevicePartitions.place_sides`)
  (1 or 2 launches, nothing read; the placing also takes the split pairs' couplings out of their
  rows' sums, :attr:`DevicePartitions.rho`, so each row's is its child's: the pair histograms' ``R``). The totals stay on the card in a record
  (:class:`DevicePairCounts`, a row of a ring of accumulators zeroed in one launch each time it
  wraps: ``common.PART_RECORD``), where the children's pair histograms are planned and built from
  them (``histograms.ChildPlan``, ``_histograms_kernels.child_hists``); the counts come back with the
  children's splits (``search``), or in a read of their own when the host asks first.
- a breadth-first level's partitions (:meth:`DevicePartitions.level`): every split's rows marked in
  one launch (``mark_rows_level``), placed with every split's pairs counted in a second
  (``place_rows_count_sides_level``), from one table (a row per split, ``_partitions_kernels.LV_*``)
  copied in one queued copy; each split's pairs are then placed at its turn
  (:meth:`DevicePartitions.placed`), as its pair histograms read them split by split. A level's
  leaves hold disjoint rows: one ``go_left``, scratch order and ``rho`` serve them all, and each
  split's segment counts take their own rows of the scratch (:func:`level_blocks`).

Each kernel runs a block of lanes (:func:`segment_threads`: one warp on a card) per segment of the range
(:func:`partition_segments`), its lanes over runs of the segment's items (issue 42, item 4). A
partition is stable (the CPU's order, :mod:`.partition` and :mod:`.pair_partition`), so its result
does not depend on its segment count or its blocks' width. :meth:`DevicePartitions.coupling_sum` (a range's
couplings, one read) adds values on their grid (:mod:`.fixed_point`): exact in any order.

Examples
--------
>>> import numpy as np
>>> from customobj.ole.cuda import _histograms_kernels, _partitions_kernels, _reduce_kernels
>>> from customobj.ole.cuda.memory import DeviceMemory
>>> mem = DeviceMemory()
>>> parts = DevicePartitions(mem, _partitions_kernels, _reduce_kernels, _histograms_kernels.zero,
...                          n_rows=6)
>>> order = mem.upload(np.arange(6, dtype=np.int64))
>>> col = mem.upload(np.array([3, 0, 2, 1, 0, 3], dtype=np.uint8))  # one feature's bins, 3: NaN
>>> parts.rows(col, order, 0, 6, 1, 3, False, 3)  # bins <= 1 go left (3 rows), NaN right
>>> parts.flush()  # the placing waits for the split's pairs, or for this
>>> mem.read(order).tolist()
[1, 3, 4, 0, 2, 5]
>>> pi, pj = mem.upload(np.array([0, 1, 0], np.int32)), mem.upload(np.array([3, 2, 5], np.int32))
>>> dst = tuple(mem.array((3,), t) for t in (np.int32, np.int32, np.float64))
>>> counts = parts.pairs((pi, pj, mem.upload(np.array([0.5, 1.0, 2.0]))), 0, 3, dst)  # nothing read
>>> counts.counts  # rows 1, 3, 4 went left: (0, 5) both right; one read, as nothing brought them back
(0, 1)
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import numpy as np

from ..._cuda_runtime import THREADS
from ._launch import WARP, grid_launch, pow2_threads
from ..backend import PairCounts
from ..common import PART_N_LEFT, PART_N_RIGHT, PART_RECORD
from ._partitions_kernels import (LEVEL_COLUMNS, LV_BASE, LV_FEATURE, LV_N, LV_N_LEFT, LV_NAN_BIN, LV_NAN_LEFT, LV_NB,
                                  LV_PBASE, LV_PBUF, LV_PN, LV_PNB, LV_PSTART, LV_RECORD, LV_START, LV_TBIN, PairPlace,
                                  PairSides, PairSources)
from ._level_place_kernels import LevelPlacings
from .memory import DeviceMemory

__all__ = ["DevicePartitions", "DevicePairCounts", "RowPlace", "PairCount", "LevelSplit", "PARTITION_BLOCK",
           "MAX_PARTITION_BLOCKS", "ACC_RING", "level_blocks", "partition_segments", "segment_threads"]

#: The fewest items of a partition's segment and the most segments (:func:`partition_segments`: the
#: tree's row and pair partitions and ``ole_fast``'s pruning, a block of lanes each). A partition is
#: stable, so its result does not depend on its segment count: it takes many short segments for
#: parallelism, growing them as ``sqrt(n)`` past ``PARTITION_BLOCK ** 2`` items.
PARTITION_BLOCK = 128
MAX_PARTITION_BLOCKS = 32768
ACC_RING = 256  # pair partitions and coupling sums per zeroing of their accumulators


class RowPlace(NamedTuple):
    """A row partition's placing (``place_rows_blocks``' arguments but the sides), as a kernel record."""

    tmp: Any
    order: Any
    counts: Any
    start: int
    n: int
    nb: int
    n_left: int


class PairCount(NamedTuple):
    """A pair partition's counting (``count_sides_blocks``' arguments but the sides), as a kernel record."""

    pi: Any
    pj: Any
    counts: Any
    totals: Any
    start: int
    n: int
    nb: int


class LevelSplit(NamedTuple):
    """One split of a breadth-first level's partitions (:meth:`DevicePartitions.level`): the parent's
    rows ``order[start:start+n]``, ``n_left`` of them to the left (the split's exact count), by
    ``bins[feature] <= tbin`` (NaN bin ``nan_bin`` left when ``nan_left``); ``rows`` False: its rows are
    not partitioned (nothing reads them); ``pairs``: ``(buffer, start, end)``, the parent's pairs in
    pair buffer ``buffer`` (0/1) to count, or None."""

    feature: int
    start: int
    n: int
    tbin: int
    nan_bin: int
    nan_left: bool
    n_left: int
    rows: bool = True
    pairs: Optional[tuple] = None


class DevicePairCounts(PairCounts):
    """A pair partition's counts, in its ``record`` on the card (``common.PART_RECORD`` int64), where the
    children's pair histograms are planned from them; they come back with the children's splits
    (:class:`~customobj.ole.cuda.tree.DeviceTree`), and :attr:`counts` reads them on their own (one read)."""

    def __init__(self, memory: DeviceMemory, record: Any, index: int = -1) -> None:
        self._memory, self.record, self.index = memory, record, int(index)  # index: its row of the ring

    @property
    def counts(self) -> tuple:
        got = self._memory.read(self.record[PART_N_LEFT:PART_N_RIGHT + 1])
        return int(got[0]), int(got[1])


def launch(n_threads: int) -> tuple:
    """``(blocks, threads)`` covering ``n_threads``: small launches use fewer threads per block."""
    per = min(THREADS, max(1, n_threads))
    return (max(1, -(-n_threads // per)), per)


def level_blocks(sizes: list) -> list:
    """Segments of each range of a level (sizes ``sizes``; 0: not partitioned, 0 segments), their sum at
    most ``MAX_PARTITION_BLOCKS`` (the scratch of segment counts holds one level): each range's
    :func:`partition_segments`, or, when those sum past it, a share of it by size (a partition's result
    does not depend on its segment count).

    >>> level_blocks([0, 129, 1]), sum(level_blocks([10**9, 10**9, 5])) <= MAX_PARTITION_BLOCKS
    ([0, 2, 1], True)
    """
    want = [partition_segments(n) if n > 0 else 0 for n in sizes]
    if sum(want) <= MAX_PARTITION_BLOCKS:
        return want
    total, spare = max(sum(sizes), 1), MAX_PARTITION_BLOCKS - len(sizes)
    return [0 if n <= 0 else max(1, min(w, n * spare // total)) for n, w in zip(sizes, want)]


def partition_segments(n: int) -> int:
    """Segments of a row or pair partition of ``n`` items, a CUDA block each (``_partitions_kernels``):
    segments of ``max(PARTITION_BLOCK, isqrt(n))`` items, at most ``MAX_PARTITION_BLOCKS`` of them. A
    segment's block sums the counts of the segments before it (``b / lanes`` a lane) and its lanes place
    its items (``items / lanes`` a lane), so past ``PARTITION_BLOCK ** 2`` items both grow as
    ``sqrt(n)``: 1,950 segments of ~1,950 rows at WEB30K's 3.8M rows, not 30,000 of 128.

    >>> partition_segments(0), partition_segments(4000), partition_segments(3_800_000)
    (1, 32, 1950)
    """
    n = max(int(n), 0)
    size = max(PARTITION_BLOCK, math.isqrt(n))
    return int(max(1, min(MAX_PARTITION_BLOCKS, -(-n // size))))


def segment_threads(items: int) -> int:
    """Lanes of a partition's block over segments of at most ``items`` items: one warp (the simulator's
    ``_launch.SIMULATOR_THREADS``), fewer for shorter segments (a power of two: the lanes' scans halve it).

    >>> segment_threads(1), segment_threads(3)
    (1, 4)
    """
    return pow2_threads(min(WARP, max(1, int(items))))


def _segments(n: int, nb: int) -> tuple:
    """``(segments, lanes)``: the launch of a partition kernel over ``n`` items in ``nb`` segments."""
    return (max(1, int(nb)), segment_threads(-(-int(n) // max(1, int(nb)))))


class DevicePartitions:
    """A fit's partition scratch and launches (see the module docstring).

    Parameters
    ----------
    memory : DeviceMemory
        The fit's allocator and counter (reads go through it).
    kernels, reduce_kernels : module or CountedKernels
        :mod:`._partitions_kernels` and :mod:`._reduce_kernels` (counted: :mod:`.stats`).
    zero : numba.cuda kernel
        ``zero(flat)`` (:mod:`._histograms_kernels`): clears the coupling accumulators.
    n_rows : int
        Rows of the training set.
    splits : int
        Most splits of a breadth-first level partitioned in one launch (:meth:`level`; its table is made
        here, once per fit).
    """

    def __init__(self, memory: DeviceMemory, kernels: Any, reduce_kernels: Any, zero: Any, *, n_rows: int,
                 splits: int = 1) -> None:
        self.memory, self._kernels, self._reduce_kernels, self._zero = memory, kernels, reduce_kernels, zero
        n = max(int(n_rows), 1)
        self.go_left = memory.array((n,), np.bool_)  # each row's side at the last row partition
        # each row's coupling sum over its node's pairs (the pair histograms' R from rows): made for the
        # root's pairs by the root's row histogram launch, kept by the pair partitions (place_sides_blocks)
        self.rho = memory.array((n,), np.float64)
        self.children_rows: Optional[tuple] = None  # the last row partition's (start, n_left, end)
        self._tmp_rows = memory.array((n,), np.int64)
        self._counts = memory.array((MAX_PARTITION_BLOCKS, 2), np.int64)
        self._pair_counts = memory.array((MAX_PARTITION_BLOCKS, 2), np.int64)  # beside the rows' in one launch
        self._waiting: Optional[RowPlace] = None  # the last row partition's placing, not launched yet
        self._sides: Optional[tuple] = None  # ole_fast: a pair partition's placing, for place_sides
        # accumulators, a ring zeroed in one launch each time it wraps (not one per sum): per use, a
        # pair partition's record (common.PART_RECORD: totals, the plan) or a coupling sum's two float64
        self._acc, self._acc_next = memory.upload(np.zeros((ACC_RING, PART_RECORD), np.int64)), 0  # made zeroed
        # a breadth-first level's splits (level): their table, staged and on the card, and each one's
        # pair placing left for its turn (placed): (PairSides-like arguments, record index) or None
        self.level_splits = max(int(splits), 1)
        self._level_table = memory.array((self.level_splits, LEVEL_COLUMNS), np.int64)
        self._level_host = memory.staged((self.level_splits, LEVEL_COLUMNS), np.int64)
        self._level: list = []

    @property
    def records(self) -> Any:
        """The accumulators' ring, ``(ACC_RING, PART_RECORD)`` int64: a pair partition's record is row
        ``DevicePairCounts.index``."""
        return self._acc

    def reserve(self, n: int) -> bool:
        """Whether the next ``n`` accumulators come from the ring without its zeroing (done now when
        they would not): a batch's partition records then all live until one search reads them."""
        if n > self._acc.shape[0]:
            return False
        if self._acc_next + n > self._acc.shape[0]:
            self._zero[grid_launch(self._acc.size)](self._acc.reshape(self._acc.size).view(np.float64))
            self._acc_next = 0
        return True

    def _next_acc(self) -> Any:
        """A zeroed accumulator row (``PART_RECORD`` int64)."""
        if self._acc_next >= self._acc.shape[0]:
            self._zero[grid_launch(self._acc.size)](self._acc.reshape(self._acc.size).view(np.float64))
            self._acc_next = 0
        self._acc_next += 1
        return self._acc[self._acc_next - 1]

    def rows(self, col: Any, order: Any, start: int, n: int, tbin: int, nan_bin: int, nan_left: bool,
             n_left: int) -> None:
        """Reorder ``order[start:start+n]`` as [left | right] by ``col[row] <= tbin`` (NaN bin
        ``nan_bin`` to the left when ``nan_left``), stably; each row's side in :attr:`go_left`;
        ``n_left``: the rows that go left (the split's exact count)."""
        self.flush()
        kernels, nb = self._kernels, partition_segments(n)
        kernels.mark_rows_blocks[_segments(n, nb)](col, order, start, n, nb, tbin, nan_bin, bool(nan_left),
                                                   self.go_left, self._tmp_rows, self._counts)
        self._waiting = RowPlace(self._tmp_rows, order, self._counts, int(start), int(n), nb, int(n_left))
        self.children_rows = (int(start), int(start) + int(n_left), int(start) + int(n))

    def level(self, bins: Any, order: Any, splits: list, bufs: tuple) -> list:
        """Partition every split of a breadth-first level (:class:`LevelSplit` each, their rows disjoint)
        in two launches: ``mark_rows_level``, then ``place_rows_count_sides_level`` (each split's rows
        placed, its pairs counted, in ``bufs``: the tree's two pair buffers), from one table copied to
        the card; nothing read. Returns, per split, its :class:`DevicePairCounts` (None without pairs);
        its pairs are placed, as :meth:`pairs` would, by :meth:`placed` at its turn (the pair
        histograms read the placed pairs split by split). Call :meth:`reserve` first: the records must
        all live until the level's search reads them."""
        n = len(splits)
        if not 0 < n <= self.level_splits:
            raise ValueError(f"a level partitions 1 to {self.level_splits} splits, got {n}")
        self.flush()
        self.place_sides(None)
        nbs = level_blocks([s.n if s.rows else 0 for s in splits])
        pnbs = level_blocks([0 if s.pairs is None else max(s.pairs[2] - s.pairs[1], 1) for s in splits])
        table, base, pbase = self._level_host, 0, 0
        out: list = []
        self._level = []
        for k, (s, nb, pnb) in enumerate(zip(splits, nbs, pnbs)):
            row = table[k]
            row[:] = 0
            row[LV_START], row[LV_N], row[LV_NB], row[LV_BASE], row[LV_N_LEFT] = s.start, s.n, nb, base, s.n_left
            row[LV_FEATURE], row[LV_TBIN], row[LV_NAN_BIN], row[LV_NAN_LEFT] = s.feature, s.tbin, s.nan_bin, s.nan_left
            row[LV_PBUF] = -1
            base += nb
            rows = (int(s.start), int(s.start) + int(s.n_left), int(s.start) + int(s.n))
            if s.pairs is None:
                out.append(None)
                self._level.append((rows, None))
                continue
            buf, start, end = (int(v) for v in s.pairs)
            acc = self._next_acc()
            row[LV_PBUF], row[LV_PSTART], row[LV_PN], row[LV_PNB] = buf, start, end - start, pnb
            row[LV_PBASE], row[LV_RECORD] = pbase, self._acc_next - 1
            counts = DevicePairCounts(self.memory, acc, self._acc_next - 1)
            src = bufs[buf]
            self._level.append((rows, PairSides(src[0], src[1], src[2], start, end - start, pnb,
                                                self._pair_counts[pbase:pbase + pnb], acc[PART_N_LEFT:PART_N_RIGHT + 1])))
            pbase += pnb
            out.append(counts)
        # queued behind the launches: the staged table is written again only at a later level, after
        # this one's read (a level without a read is its tree's last; the next tree reads its root first)
        dev = self.memory.copy_in_queued(self._level_table, table, n)
        # a block per segment, lanes for the longest segment of any split
        sizes = [s.n if s.rows else 0 for s in splits] + [0 if s.pairs is None else s.pairs[2] - s.pairs[1]
                                                          for s in splits]
        bx, per = max(nbs + pnbs), segment_threads(max(-(-m // max(nb, 1)) for m, nb in zip(sizes, nbs + pnbs)))
        kernels = self._kernels
        kernels.mark_rows_level[(bx, n), per](dev, bins, order, self.go_left, self._tmp_rows, self._counts)
        sources = PairSources(bufs[0][0], bufs[0][1], bufs[-1][0], bufs[-1][1])
        kernels.place_rows_count_sides_level[(bx, n, 1 if pbase == 0 else 2), per](
            dev, order, self._tmp_rows, self._counts, sources, self._pair_counts, self._acc, self.go_left)
        return out

    def placed(self, k: int, dst: tuple, wait: bool = False) -> None:
        """Split ``k`` of the last :meth:`level`: its pairs, counted there, copied to ``dst`` as
        :meth:`pairs` copies them (``wait``: with the smaller child's row histogram, :meth:`place_sides`);
        its children's rows are then :meth:`node_rows`'."""
        sides = self.level_sides(k)
        place = PairPlace(dst[0], dst[1], dst[2], self.rho)
        if wait:
            self._sides = (sides, place)
        else:
            self._kernels.place_sides_blocks[_segments(sides.n, sides.nb)](sides, self.go_left, place)

    def level_sides(self, k: int) -> PairSides:
        """Split ``k`` of the last :meth:`level`: its pairs' placing (:class:`PairSides`), for :meth:`placed`
        or a level's one launch (:mod:`.level_place`); its children's rows are then :meth:`node_rows`'."""
        rows, sides = self._level[k] if 0 <= k < len(self._level) else (None, None)
        if sides is None:
            raise ValueError(f"split {k} of the level has no pairs counted")
        self.children_rows = rows
        self.place_sides(None)  # one waiting at a time
        return sides

    def level_inputs(self, bufs: tuple) -> tuple:
        """The last :meth:`level`'s table on the card and its pairs' placing inputs
        (:class:`._level_place_kernels.LevelPlacings`: ``bufs``, the tree's two pair buffers, and this
        fit's segment counts, records and :attr:`rho`)."""
        return self._level_table, LevelPlacings(bufs[0][0], bufs[0][1], bufs[0][2], bufs[1][0], bufs[1][1],
                                                bufs[1][2], self._pair_counts, self._acc, self.rho)

    def flush(self) -> None:
        """Place the rows of the last :meth:`rows` if :meth:`pairs` has not (call before using the order)."""
        r, self._waiting = self._waiting, None
        if r is not None:
            self._kernels.place_rows_blocks[_segments(r.n, r.nb)](r.tmp, r.order, r.start, r.n, r.nb, r.n_left,
                                                                  self.go_left, r.counts)

    def pairs(self, src: tuple, start: int, end: int, dst: tuple, wait: bool = False) -> DevicePairCounts:
        """Copy the pairs ``src[start:end]`` to ``dst``, stably ordered [both left | both right | split]
        by :attr:`go_left`; the counts stay on the card, in the record of the :class:`DevicePairCounts`
        returned: nothing is read. ``wait``: the placing waits for :meth:`place_sides` (with the
        smaller child's row histogram in one launch); the counting is launched now."""
        self.place_sides(None)  # one waiting at a time
        n = end - start
        nb, kernels, acc = partition_segments(n), self._kernels, self._next_acc()
        counts, totals = self._pair_counts, acc[PART_N_LEFT:PART_N_RIGHT + 1]
        rows, self._waiting = self._waiting, None
        if rows is None:
            kernels.count_sides_blocks[_segments(n, nb)](src[0], src[1], start, n, nb, self.go_left, counts, totals)
        else:  # the split's rows placed in the same launch: a block per segment of either
            bx, per = max(nb, rows.nb), max(_segments(n, nb)[1], _segments(rows.n, rows.nb)[1])
            pairs = PairCount(src[0], src[1], counts, totals, int(start), int(n), nb)
            kernels.place_rows_count_sides[(bx, 2), per](rows, pairs, self.go_left)
        place, sides = PairPlace(dst[0], dst[1], dst[2], self.rho), PairSides(src[0], src[1], src[2], int(start),
                                                                              int(n), nb, counts, totals)
        if wait:
            self._sides = (sides, place)
        else:
            kernels.place_sides_blocks[_segments(n, nb)](sides, self.go_left, place)
        return DevicePairCounts(self.memory, acc, self._acc_next - 1)

    def place_sides(self, row_hist: Optional[tuple]) -> None:
        """Launch the waiting pair placing (:meth:`pairs` with ``wait``), if any: with ``row_hist``
        (``DeviceHistograms.take_waiting``'s ``(bins_rm, tables, build, shape)``) in the same launch
        (``place_sides_row_hist``), else alone."""
        waiting, self._sides = self._sides, None
        if row_hist is None:
            if waiting is None:
                return
            s, place = waiting
            self._kernels.place_sides_blocks[_segments(s.n, s.nb)](s, self.go_left, place)
            return
        if waiting is None:
            raise RuntimeError("a row histogram joins a waiting pair placing: pairs(..., wait=True) first")
        bins_rm, tables, build, ((chunks, n_groups), threads) = row_hist
        sides, place = waiting
        # the histogram's grid, as many blocks as its chunks, or one per ``per`` segments when those are more
        # (each pair block takes its share of the segments as one range, the 2-D block as its lanes)
        per = threads[0] * threads[1]
        blocks = max(chunks, -(-sides.nb // per))
        self._kernels.place_sides_row_hist[(blocks, n_groups, 2), threads](bins_rm, *tables, build, sides, self.go_left,
                                                                            place)

    def node_rows(self, order: Any, sides: list, root: Any) -> list:
        """The rows of the last row partition's children on ``sides`` (0 left, 1 right) as the pair
        histograms' ``R`` reads them (:class:`._histograms_kernels.NodeRows`: ``order``'s part and
        :attr:`rho`), or ``root``'s for each when no split was made in the tree yet."""
        if self.children_rows is None:
            return [root for _ in sides]
        start, mid, end = self.children_rows
        return [root._replace(rows=order[start:mid] if s == 0 else order[mid:end], n=(mid - start) if s == 0 else end - mid)
                for s in sides]

    def coupling_sum(self, pc: Any, start: int, end: int) -> float:
        """The coupling of ``pc[start:end]``; one read."""
        acc = self._next_acc()[0:2].view(np.float64)
        self._reduce_kernels.coupling_sums[grid_launch(end - start)](pc, start, end - start, acc)
        return float(self.memory.read(acc)[0])
