"""The OLE GPU backend's partitions and coupling sums (:mod:`.cuda_backend`): a split's rows and
pairs reordered on the card, and the children's couplings read back with the pair counts.

:class:`DevicePartitions` holds the scratch every partition reuses (made once per fit: the rows'
sides and temporary order, the blocks' counts and offsets, a ring of coupling accumulators) and
launches, through the fit's counted kernels (:mod:`.cuda_stats`):

- a row partition: ``mark_rows_blocks``, ``scan_counts``, ``place_rows_blocks``, ``copy_rows``
  (4 launches, nothing read: the left count is the split's own, exact histogram count);
- a pair partition with the children's couplings: ``count_sides_blocks``, ``scan_counts``,
  ``place_sides_blocks``, ``coupling_sums`` (4 launches, one read of 32 bytes: the two counts
  and, in the row behind them that the scan zeroed, the two couplings).

A partition is stable (the CPU's order, :mod:`.partition` and :mod:`.pair_partition`), so its
result does not depend on its block count; the couplings are on their grid (:mod:`.fixed_point`),
so their atomic sums are exact in any order.

Examples
--------
>>> import numpy as np
>>> from customobj._cuda_runtime import cuda_module
>>> from customobj.ole import _cuda_hist_kernels, _cuda_partition_kernels, _cuda_reduce_kernels
>>> from customobj.ole.cuda_memory import DeviceMemory
>>> mem = DeviceMemory(cuda_module())
>>> parts = DevicePartitions(mem, _cuda_partition_kernels, _cuda_reduce_kernels, _cuda_hist_kernels.zero,
...                          n_rows=6)
>>> order = mem.upload(np.arange(6, dtype=np.int64))
>>> col = mem.upload(np.array([3, 0, 2, 1, 0, 3], dtype=np.uint8))  # one feature's bins, 3: NaN
>>> parts.rows(col, order, 0, 6, 1, 3, False)  # bins <= 1 go left, NaN right
>>> mem.read(order).tolist()
[1, 3, 4, 0, 2, 5]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._cuda_runtime import THREADS
from ._cuda_launch import grid_launch, pow2_threads
from .cuda_memory import DeviceMemory

__all__ = ["DevicePartitions", "PARTITION_BLOCK", "MAX_PARTITION_BLOCKS", "ACC_RING"]

#: Rows (or pairs) per block of a partition, and most blocks: a partition's result does not depend on
#: its block count (it is stable), so it takes many short blocks (one thread each: 30,000 threads at
#: WEB30K's 3.8M rows; their offsets are one block-wide scan) for parallelism.
PARTITION_BLOCK = 128
MAX_PARTITION_BLOCKS = 32768
ACC_RING = 256  # coupling sums per zeroing of their accumulators


def launch(n_threads: int) -> tuple:
    """``(blocks, threads)`` covering ``n_threads``: small launches use fewer threads per block."""
    per = min(THREADS, max(1, n_threads))
    return (max(1, -(-n_threads // per)), per)


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
    kp, kr : module or CountedKernels
        :mod:`._cuda_partition_kernels` and :mod:`._cuda_reduce_kernels` (counted: :mod:`.cuda_stats`).
    zero : numba.cuda kernel
        ``zero(flat)`` (:mod:`._cuda_hist_kernels`): clears the coupling accumulators.
    n_rows : int
        Rows of the training set.
    """

    def __init__(self, memory: DeviceMemory, kp: Any, kr: Any, zero: Any, *, n_rows: int) -> None:
        self.memory, self._kp, self._kr, self._zero = memory, kp, kr, zero
        n = max(int(n_rows), 1)
        self.go_left = memory.array((n,), np.bool_)  # each row's side at the last row partition
        self._tmp_rows = memory.array((n,), np.int64)
        self._counts = memory.array((MAX_PARTITION_BLOCKS, 2), np.int64)
        # the scan's offsets, with a row behind the totals for the children's couplings (zeroed by the scan)
        self._before = memory.array((MAX_PARTITION_BLOCKS + 2, 2), np.int64)
        # coupling sums' accumulators, a ring zeroed in one launch each time it wraps (not one per sum)
        self._csums, self._csum_next = memory.array((ACC_RING, 2), np.float64), ACC_RING

    def _scan(self, nb: int) -> None:
        """The blocks' offsets from their counts (a block-wide scan); the totals in ``_before[nb]``."""
        self._kr.scan_counts[1, pow2_threads(nb)](self._counts, nb, self._before)

    def rows(self, col: Any, order: Any, start: int, n: int, tbin: int, nan_bin: int, nan_left: bool) -> None:
        """Reorder ``order[start:start+n]`` as [left | right] by ``col[row] <= tbin`` (NaN bin
        ``nan_bin`` to the left when ``nan_left``), stably; each row's side in :attr:`go_left`."""
        kp, nb = self._kp, partition_blocks(n)
        kp.mark_rows_blocks[launch(nb)](col, order, start, n, nb, tbin, nan_bin, bool(nan_left), self.go_left,
                                        self._counts)
        self._scan(nb)
        kp.place_rows_blocks[launch(nb)](order, start, n, nb, self.go_left, self._before, self._tmp_rows)
        kp.copy_rows[launch(n)](self._tmp_rows, order, start, n)

    def pairs(self, src: tuple, start: int, end: int, dst: tuple) -> tuple:
        """Copy the pairs ``src[start:end]`` to ``dst``, stably ordered [both left | both right | split]
        by :attr:`go_left`; ``(n_left, n_right, C_left, C_right)`` in one read."""
        n = end - start
        nb, kp = partition_blocks(n), self._kp
        kp.count_sides_blocks[launch(nb)](src[0], src[1], start, n, nb, self.go_left, self._counts)
        self._scan(nb)
        kp.place_sides_blocks[launch(nb)](*src, start, n, nb, self.go_left, self._before, *dst)
        self._kr.coupling_sums[grid_launch(n)](*src, start, n, self.go_left, True,
                                                self._before[nb + 1].view(np.float64))
        packed = self.memory.read(self._before[nb:nb + 2])
        (tl, tr), (cl, cr) = packed[0], packed[1].view(np.float64)
        return int(tl), int(tr), float(cl), float(cr)

    def coupling_sums(self, buf: tuple, start: int, end: int, split: bool) -> tuple:
        """``(C, 0)`` of the couplings ``buf[2][start:end]`` or, with ``split``, the children's
        ``(C_left, C_right)`` by :attr:`go_left`; one read."""
        if self._csum_next == ACC_RING:
            self._zero[grid_launch(2 * ACC_RING)](self._csums.reshape(2 * ACC_RING))
            self._csum_next = 0
        acc = self._csums[self._csum_next]
        self._csum_next += 1
        self._kr.coupling_sums[grid_launch(end - start)](*buf, start, end - start, self.go_left, split, acc)
        a, b = self.memory.read(acc)
        return float(a), float(b)
