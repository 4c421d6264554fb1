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

A partition is stable (the CPU's order, :mod:`.partition` and :mod:`.pair_partition`), so its
result does not depend on its block count. :meth:`DevicePartitions.coupling_sum` (a range's
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

from typing import Any, NamedTuple, Optional

import numpy as np

from ..._cuda_runtime import THREADS
from ._launch import grid_launch, pow2_threads
from ..backend import PairCounts
from ..common import PART_N_LEFT, PART_N_RIGHT, PART_RECORD
from ._partitions_kernels import PairPlace, PairSides
from .memory import DeviceMemory

__all__ = ["DevicePartitions", "DevicePairCounts", "RowPlace", "PairCount", "PARTITION_BLOCK",
           "MAX_PARTITION_BLOCKS", "ACC_RING"]

#: Rows (or pairs) per block of a partition, and most blocks: a partition's result does not depend on
#: its block count (it is stable), so it takes many short blocks (one thread each: 30,000 threads at
#: WEB30K's 3.8M rows; each CUDA block scans its blocks' offsets) for parallelism.
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


def _blocks(nb: int) -> tuple:
    """``(blocks, threads)`` of a partition kernel over ``nb`` partition blocks: a power of two threads
    per block (their offsets are scanned across the block)."""
    per = pow2_threads(nb)
    return (-(-nb // per), per)


def partition_blocks(n: int) -> int:
    """Blocks of a partition of ``n`` items (at most ``MAX_PARTITION_BLOCKS``).

    >>> partition_blocks(0), partition_blocks(PARTITION_BLOCK + 1), partition_blocks(10**12) == MAX_PARTITION_BLOCKS
    (1, 2, True)
    """
    return int(max(1, min(MAX_PARTITION_BLOCKS, (n + PARTITION_BLOCK - 1) // PARTITION_BLOCK)))


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
    """

    def __init__(self, memory: DeviceMemory, kernels: Any, reduce_kernels: Any, zero: Any, *, n_rows: int) -> None:
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
        kernels, nb = self._kernels, partition_blocks(n)
        kernels.mark_rows_blocks[_blocks(nb)](col, order, start, n, nb, tbin, nan_bin, bool(nan_left), self.go_left,
                                         self._tmp_rows, self._counts)
        self._waiting = RowPlace(self._tmp_rows, order, self._counts, int(start), int(n), nb, int(n_left))
        self.children_rows = (int(start), int(start) + int(n_left), int(start) + int(n))

    def flush(self) -> None:
        """Place the rows of the last :meth:`rows` if :meth:`pairs` has not (call before using the order)."""
        r, self._waiting = self._waiting, None
        if r is not None:
            self._kernels.place_rows_blocks[_blocks(r.nb)](r.tmp, r.order, r.start, r.n, r.nb, r.n_left, self.go_left,
                                                      r.counts)

    def pairs(self, src: tuple, start: int, end: int, dst: tuple, wait: bool = False) -> DevicePairCounts:
        """Copy the pairs ``src[start:end]`` to ``dst``, stably ordered [both left | both right | split]
        by :attr:`go_left`; the counts stay on the card, in the record of the :class:`DevicePairCounts`
        returned: nothing is read. ``wait``: the placing waits for :meth:`place_sides` (with the
        smaller child's row histogram in one launch); the counting is launched now."""
        self.place_sides(None)  # one waiting at a time
        n = end - start
        nb, kernels, acc = partition_blocks(n), self._kernels, self._next_acc()
        counts, totals = self._pair_counts, acc[PART_N_LEFT:PART_N_RIGHT + 1]
        rows, self._waiting = self._waiting, None
        if rows is None:
            kernels.count_sides_blocks[_blocks(nb)](src[0], src[1], start, n, nb, self.go_left, counts, totals)
        else:  # the split's rows placed in the same launch
            bx, per = _blocks(max(nb, rows.nb))
            pairs = PairCount(src[0], src[1], counts, totals, int(start), int(n), nb)
            kernels.place_rows_count_sides[(bx, 2), per](rows, pairs, self.go_left)
        place = PairPlace(dst[0], dst[1], dst[2], self.rho)
        if wait:
            self._sides = (PairSides(src[0], src[1], src[2], int(start), int(n), nb, counts, totals), place)
        else:
            kernels.place_sides_blocks[_blocks(nb)](*src, start, n, nb, self.go_left, counts, totals, place)
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
            self._kernels.place_sides_blocks[_blocks(s.nb)](s.pi, s.pj, s.pc, s.start, s.n, s.nb, self.go_left,
                                                            s.counts, s.totals, place)
            return
        if waiting is None:
            raise RuntimeError("a row histogram joins a waiting pair placing: pairs(..., wait=True) first")
        bins_rm, tables, build, ((chunks, n_groups), threads) = row_hist
        sides, place = waiting
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
