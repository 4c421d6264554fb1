"""The device buffers one ``TreeBooster(device="cuda")`` fit reuses for every node of every tree.

:class:`DevicePool` is made with the backend, before the first tree, and sized up front: the node
histograms a tree can hold at once (``2 * num_leaves + 3``: a row and a pair histogram per leaf,
and a split's new ones while its larger child is being subtracted), the row order and its
starting rows, the feature groups of ``ole_fast``'s pair histograms, two nodes' feature masks and
a ring of the trees' grid accumulators (zeroed once per ``TREE_RING`` trees, not per tree). A node
then takes a histogram from the pool and gives it back when the grower drops it (a finalizer of
its :class:`~customobj.ole.cuda.memory.DeviceHist`), so no node allocates (issue 32, item 3;
``TreeBooster.device_stats_`` counts it). Only the pair buffers grow, by half again, in the
(rare) tree that has more pairs than every tree before it.

The pool's bytes are part of :func:`customobj.ole.cuda.backend.device_memory_needed`, so the
up-front memory refusal counts them.

The row order stays on the card between trees: a tree starts from the rows the last one started
from (every row, without bagging) by a device-to-device copy; only a new bag is uploaded.

Examples
--------
>>> import numpy as np
>>> from customobj.ole.cuda.memory import DeviceMemory
>>> mem = DeviceMemory()
>>> pool = DevicePool(mem, n_rows=10, n_features=3, n_slots=12, n_hists=4)
>>> a = pool.hist(); b = pool.hist(); pool.n_free
2
>>> pool.give_back(a); pool.n_free
3
>>> sent = lambda: mem.counter.stats().outside.bytes_to_device
>>> before = sent(); rows = pool.start_rows(np.arange(10)); rows.shape, sent() - before
((10,), 80)
>>> rows = pool.start_rows(np.arange(10)); sent() - before  # on the card already
80
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ._histograms_kernels import GROUP_COLUMNS, MEMBER_COLUMNS
from ._launch import grid_launch
from ..common import HIST_CHANNELS
from .memory import DeviceMemory

__all__ = ["DevicePool", "hists_per_tree", "TREE_RING"]

#: Trees per zeroing of the grids' accumulators (:meth:`DevicePool.tree_accumulators`, 128 bytes a tree).
TREE_RING = 64


def hists_per_tree(num_leaves: int) -> int:
    """Node histograms a tree holds at most at once: a row and a pair histogram per leaf, and a
    split's smaller child's rows and its children's two pair histograms while they are completed."""
    return 2 * max(int(num_leaves), 1) + 3


class DevicePool:
    """The fit's reused device buffers (see the module docstring).

    Parameters
    ----------
    memory : DeviceMemory
        The fit's allocator: the pool's arrays count toward its peak and its allocations.
    n_rows, n_features, n_slots : int
        The binned training set's shape and histogram slots.
    n_hists : int
        Histograms made up front (:func:`hists_per_tree`); more are made, counted, if ever needed.
    """

    def __init__(self, memory: DeviceMemory, *, n_rows: int, n_features: int, n_slots: int, n_hists: int) -> None:
        self.memory = memory
        self._shape = (int(n_slots), HIST_CHANNELS)
        # one array, so one launch clears them all (clear_all); hist() hands out its rows
        self._all = memory.array((max(int(n_hists), 1),) + self._shape, np.float64)
        self._free: List[Any] = [self._all[i] for i in range(int(n_hists))]  # written (contents undefined)
        self._index = {id(a): (i, a) for i, a in enumerate(self._free)}  # each one's row of the array
        self._clean: List[Any] = []  # free and known to be all 0 (clear_all)
        self._n_made = len(self._free)
        self.no_clear = memory.array((0,), np.float64)  #: what a kernel given nothing to clear gets
        n = max(int(n_rows), 1)
        self.order = memory.array((n,), np.int64)  # the tree's row order, partitioned in place
        self._rows0 = memory.array((n,), np.int64)  # the rows the last tree started from
        self._rows0_host: Optional[np.ndarray] = None
        f = max(int(n_features), 1)
        # a feature subset's shared-memory groups (_histograms_kernels.feature_groups): groups, members, slot map
        self.features = (memory.array((f, GROUP_COLUMNS), np.int64), memory.array((f, MEMBER_COLUMNS), np.int64),
                         memory.array((max(int(n_slots), 1),), np.int64))
        self.mask = memory.array((2, f), np.bool_)  # two nodes searched at once: a mask each
        # 12 float64, 4 int64 a tree; made zeroed (outside the trees), cleared by a launch when it wraps
        self._ring, self._ring_next = memory.upload(np.zeros((TREE_RING, 16))), 0
        self._mask_host: List[Optional[np.ndarray]] = [None, None]
        self._pairs: dict = {}

    # --- histograms ---------------------------------------------------------------------------------
    @property
    def n_free(self) -> int:
        return len(self._free) + len(self._clean)

    @property
    def n_clean(self) -> int:
        """Free histograms known to be all 0."""
        return len(self._clean)

    def hist(self) -> Any:
        """A ``(slots, 3)`` float64 histogram from the pool (contents undefined: a written one first)."""
        if self._free or self._clean:
            return (self._free or self._clean).pop()
        self._n_made += 1
        return self.memory.array(self._shape, np.float64)

    @property
    def hists(self) -> Any:
        """The pool's histograms, ``(n, slots, 3)``: a kernel finds one by its :meth:`index_of`."""
        return self._all

    def index_of(self, array: Any) -> int:
        """``array``'s row of :attr:`hists` (-1: not the pool's, made beyond it)."""
        got = self._index.get(id(array))
        return got[0] if got is not None and got[1] is array else -1

    def clean_hist(self) -> Optional[Any]:
        """A free histogram that is all 0 (:meth:`clear_all` cleared it), or None when none is left."""
        return self._clean.pop() if self._clean else None

    def give_back(self, array: Any) -> None:
        """``array`` (from :meth:`hist`) is free again (written: not clean)."""
        self._free.append(array)

    def clear_all(self) -> Any:
        """The pool's histograms flat, for a kernel launched anyway to set to 0 (a tree's first,
        ``grid_max``), every one then counted clean; :attr:`no_clear` (empty) when one is in use (a
        grower holds it) or made outside the pool's array: they are cleared as they are needed."""
        if self.n_free != self._n_made or self._n_made != self._all.shape[0]:
            return self.no_clear
        self._clean += self._free
        self._free = []
        return self._all.reshape(self._all.size)

    # --- a tree's accumulators ---------------------------------------------------------------------------
    def tree_accumulators(self, zero: Any) -> tuple:
        """A tree's zeroed accumulators of its grids (:mod:`.fixed_point`) and root sums:
        ``(row stats, pair stats, root sums)`` float64[4] each and ``(row units, pair units)`` int64[2]
        each, a row of a ring that ``zero(flat)`` (a counted kernel) clears in one launch when it wraps."""
        ring = self._ring
        if self._ring_next == TREE_RING:
            zero[grid_launch(ring.size)](ring.reshape(ring.size))
            self._ring_next = 0
        k, self._ring_next = self._ring_next, self._ring_next + 1
        units = ring[k, 12:16].view(np.int64)
        return ring[k, 0:4], ring[k, 4:8], ring[k, 8:12], units[0:2], units[2:4]

    # --- rows, features, mask -----------------------------------------------------------------------
    def start_rows(self, rows: np.ndarray) -> Any:
        """The device row order set to ``rows`` (int64): copied on the card when the last tree started
        from the same rows, else uploaded once into the pool's buffer."""
        n = int(rows.shape[0])
        if self._rows0_host is None or not np.array_equal(self._rows0_host, rows):
            self.memory.copy_in(self._rows0, np.asarray(rows, dtype=np.int64))
            self._rows0_host = np.array(rows, dtype=np.int64, copy=True)
        order = self.order[:n]
        if n:
            order.copy_to_device(self._rows0[:n])  # device to device: nothing crosses the bus
        return order

    def feature_groups(self, groups: np.ndarray, members: np.ndarray, slot_map: np.ndarray) -> tuple:
        """A feature subset's ``(groups, members, slot_map)`` tables on the device, in the pool's buffers."""
        return tuple(self.memory.copy_in(buf, a) for buf, a in zip(self.features, (groups, members, slot_map)))

    def feature_mask(self, mask: np.ndarray, slot: int = 0) -> Any:
        """The feature mask on the device (in ``slot`` 0 or 1: a split's two children), copied again
        only when it changes."""
        host = np.ascontiguousarray(mask, dtype=np.bool_)
        known = self._mask_host[slot]
        if known is None or not np.array_equal(host, known):
            self._mask_host[slot] = host.copy()
            self.memory.copy_in(self.mask[slot], host)
        return self.mask[slot, :host.shape[0]]

    def masks_written(self) -> None:
        """A kernel wrote both mask slots (``ole_fast``'s choice, :mod:`.choice`): the next
        :meth:`feature_mask` copies its mask again."""
        self._mask_host = [None, None]

    # --- pairs and host gradients -------------------------------------------------------------------
    @property
    def buffer_bytes(self) -> int:
        """Bytes the pool's growable buffers hold now."""
        return sum(int(a.size) * a.dtype.itemsize for buf in self._pairs.values() for a in buf)

    def buffers(self, name: str, m: int, dtypes: tuple) -> tuple:
        """Arrays of ``m`` items of ``dtypes`` from the pool's buffer ``name`` (grown by half again
        when too small: the pairs of a tree with more of them than every tree before)."""
        buf = self._pairs.get(name)
        if buf is None or buf[0].shape[0] < m or tuple(a.dtype for a in buf) != tuple(np.dtype(d) for d in dtypes):
            self._pairs.pop(name, None)  # freed before the larger one exists
            c = max(1, m + m // 2)
            buf = self._pairs[name] = tuple(self.memory.array((c,), d) for d in dtypes)
        return tuple(a[:m] for a in buf)
