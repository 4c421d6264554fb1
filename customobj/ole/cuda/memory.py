"""What ``TreeBooster(device="cuda")`` holds in GPU memory, and its histograms as the grower sees them.

:class:`DeviceMemory` allocates (and uploads) every array the GPU backend keeps and counts their
bytes while they live (a finalizer subtracts an array's bytes when it is freed), so a fit knows
the peak of what it held: ``TreeBooster.device_memory_peak_`` (issue "OLE at scale": peak GPU
memory reported). Arrays the objective's GPU kernels keep (labels, queries, scratch:
``objectives.devices.DeviceData``) are added with :meth:`DeviceMemory.hold`. On a real card,
:meth:`DeviceMemory.sample` also records the card's used memory (total - free, every process on
it) at the points it is called, as ``card_peak``; the simulator has no card (``None``). Every
allocation, upload and blocking read it makes is also counted in its
:class:`~customobj.ole.cuda.stats.DeviceCounter` (``counter``: ``TreeBooster.device_stats_``).

:class:`DeviceHist` is a histogram that stays in device memory: the grower subtracts one from
another (``parent -= child``, elementwise as numpy's: a split's subtractions queued and run in one
launch, :class:`SubtractQueue`) and reads a single entry (the NaN slot's row count: one float comes
back); the backend's split search reads the rest on the device.

Examples
--------
>>> import numpy as np
>>> mem = DeviceMemory()
>>> a = mem.array((1000,), np.float64)
>>> b = mem.upload(np.zeros(500, dtype=np.int32))
>>> mem.current, mem.peak
(10000, 10000)
>>> del a
>>> mem.current, mem.peak
(2000, 10000)

:func:`check_device_memory` refuses a fit whose needs (:func:`device_memory_needed`) exceed the
card's free memory, with the numbers: WEB30K's size (3.8 million rows x 136 features, 255 bins,
~60 million pairs, a 31-leaf pool) on a card with 1 GiB free:

>>> need = device_memory_needed(n_rows=3_788_392, n_features=136, bin_itemsize=1, n_slots=136 * 256,
...                             n_pairs=60_000_000, n_hists=2 * 31 + 3)
>>> sorted(need)
['bins', 'gradients', 'histograms', 'pairs', 'rows']
>>> check_device_memory(need, free=2**30)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
customobj.ole.cuda.memory.DeviceMemoryError: TreeBooster(device="cuda") needs 3.03 GiB of GPU memory (...), but the device has 1 GiB free
>>> print(f"{need['pairs'] / 2**30:.3f} GiB of pairs, {need['bins'] / 2**30:.3f} GiB of bins")
1.788 GiB of pairs, 0.960 GiB of bins
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Optional

import numpy as np
from numba import config

from ..._cuda_runtime import GPUUnavailableError, cuda_module, require_gpu
from ._launch import grid_launch
from ..common import HIST_CHANNELS, PH_CHANNELS
from .stats import DeviceCounter

# numba.cuda's simulator (NUMBA_ENABLE_CUDASIM), fixed when numba.cuda is imported
_SIMULATED = bool(getattr(config, "ENABLE_CUDASIM", 0))

__all__ = ["DeviceMemory", "DeviceHist", "SubtractQueue", "DeviceMemoryError", "device_memory_needed", "check_device_memory",
           "free_device_memory"]

_WHAT = 'TreeBooster(device="cuda")'
_GIB = 2.0**30


class DeviceMemoryError(GPUUnavailableError):
    """A ``device="cuda"`` fit needs more GPU memory than the card has free (the message has the numbers)."""


def device_memory_needed(*, n_rows: int, n_features: int, bin_itemsize: int, n_slots: int, n_pairs: int = 0,
                         index_itemsize: int = 4, n_hists: int = 1) -> dict:
    """Bytes of GPU memory a fit holds at its peak, by item.

    ``bins``: the binned matrix, feature-major (partitions) and row-major (the histograms' coalesced
    reads); ``gradients``: a tree's ``g`` and ``h`` and their on-grid copies (float64); ``rows``: the
    tree's row order, the rows it started from and the partition's scratch (int64 each), each
    row's coupling sum over its node's pairs (float64: the pair histograms' ``R``) and its side (a
    byte); ``pairs``: the tree's two pair buffers (two indices and a float64 coupling
    each, every pair); ``histograms``: the pool's ``n_hists`` node histograms (float64, ``slots x 3``;
    :func:`~customobj.ole.cuda.pool.hists_per_tree`: the blocks add into them, no partials).
    """
    return {
        "bins": 2 * int(n_rows) * int(n_features) * int(bin_itemsize),
        "gradients": 4 * int(n_rows) * 8,
        "rows": int(n_rows) * (8 + 8 + 8 + 8 + 1),
        "pairs": 2 * int(n_pairs) * (2 * int(index_itemsize) + 8),
        "histograms": int(n_hists) * int(n_slots) * max(HIST_CHANNELS, PH_CHANNELS) * 8,
    }


def free_device_memory() -> float:
    """Free bytes on the current device (``inf`` under the simulator, which has no limit)."""
    cuda = require_gpu(_WHAT)
    return float(cuda.current_context().get_memory_info()[0])


def check_device_memory(need: dict, free: Optional[float] = None) -> None:
    """Raise :class:`DeviceMemoryError` when ``sum(need)`` bytes exceed ``free`` (default: the card's)."""
    free = free_device_memory() if free is None else float(free)
    total = sum(need.values())
    if total > free:
        items = ", ".join(f"{k} {v / _GIB:.3g}" for k, v in need.items())
        raise DeviceMemoryError(f"{_WHAT} needs {total / _GIB:.3g} GiB of GPU memory ({items} GiB), but the device "
                                f"has {free / _GIB:.3g} GiB free")


class DeviceMemory:
    """Counts the bytes of the device arrays made through it (``current``) and their maximum (``peak``).

    Parameters
    ----------
    cuda : module, optional
        ``numba.cuda`` (or its simulator); by default :func:`customobj._cuda_runtime.cuda_module`'s.
    counter : DeviceCounter, optional
        Where allocations, copies and reads are counted (a new one by default).
    """

    def __init__(self, cuda: Any = None, counter: Optional[DeviceCounter] = None) -> None:
        self.cuda = cuda_module() if cuda is None else cuda
        self.counter = DeviceCounter() if counter is None else counter
        self.current = 0
        self.peak = 0
        self.card_peak: Optional[int] = None

    def _count(self, arr: Any) -> Any:
        nbytes = int(arr.size) * int(np.dtype(arr.dtype).itemsize)
        self.hold(nbytes)
        weakref.finalize(arr, self.hold, -nbytes)
        return arr

    def hold(self, nbytes: int) -> None:
        """Add ``nbytes`` (negative: release them) to what the fit holds; updates the peak."""
        self.current += int(nbytes)
        self.peak = max(self.peak, self.current)

    def array(self, shape: tuple, dtype: type) -> Any:
        """An uninitialised device array, counted while it lives."""
        self.counter.allocation()
        return self._count(self.cuda.device_array(shape, dtype=dtype))

    def upload(self, host: np.ndarray) -> Any:
        """A device copy of ``host`` (made contiguous), counted while it lives."""
        host = np.ascontiguousarray(host)
        self.counter.allocation(host.nbytes)
        return self._count(self.cuda.to_device(host))

    def copy_in(self, dev: Any, host: np.ndarray) -> Any:
        """``host`` copied into the front of the device array ``dev`` (no allocation); that front."""
        host = np.ascontiguousarray(host, dtype=dev.dtype)
        part = dev[:host.shape[0]] if host.ndim else dev
        if host.size:
            self.counter.to_device(host.nbytes)
            part.copy_to_device(host)
        return part

    def staged(self, shape: tuple, dtype: type) -> Any:
        """A page-locked host array for :meth:`copy_in_queued` (made once, reused)."""
        return self.cuda.pinned_array(shape, dtype=dtype)

    def copy_in_queued(self, dev: Any, staged: Any, n: int) -> Any:
        """The first ``n`` items of ``staged`` (page-locked, :meth:`staged`) copied into the front of
        ``dev`` on the launches' stream: queued behind them, the host does not wait (a copy from
        pageable memory first waits for every launch before it). ``staged`` is written again only
        after a read that follows the launch using it. That front of ``dev``."""
        part, src = dev[:n], staged[:n]
        if n:
            self.counter.to_device(int(src.nbytes))
            part.copy_to_device(src, stream=self.cuda.default_stream())
        return part

    def read(self, dev: Any) -> np.ndarray:
        """``dev`` copied to the host: one blocking read, counted."""
        self.counter.read(int(dev.size) * int(np.dtype(dev.dtype).itemsize))
        return dev.copy_to_host()

    def sample(self) -> None:
        """Record the card's used memory now into ``card_peak`` (a real card only)."""
        if _SIMULATED:
            return
        free, total = self.cuda.current_context().get_memory_info()
        used = int(total) - int(free)
        self.card_peak = used if self.card_peak is None else max(self.card_peak, used)


def _flat(a: Any) -> Any:
    return a.reshape(a.size)


class SubtractQueue:
    """``a -= b`` of device histograms (:class:`DeviceHist`), queued and run together: up to
    ``MAX_OPS`` in one launch of ``subtract3`` (elementwise, each thread applies them in the order
    they were queued, so a target subtracted twice gets both in order: numpy's result, exact on the
    grid of :mod:`.fixed_point`), or one with a split's children's pair histograms completed on the
    card (:meth:`children`: ``subtract_children``). A queue runs when a histogram of it is read or
    used (``array``), when it is full, or at :meth:`flush`; it holds its histograms until then (none
    goes back to the pool with a subtraction pending).

    Parameters
    ----------
    subtract3 : numba.cuda kernel
        ``subtract3(a0, b0, a1, b1, a2, b2, n_ops)`` (:mod:`._split_kernels`), counted or not.
    subtract_children : numba.cuda kernel, optional
        ``subtract_children(a0, b0, n_ops, parent, left, right, record)`` (:mod:`._split_kernels`),
        for :meth:`children`.
    before : callable, optional
        Run first by every :meth:`flush` (the histograms' waiting build: ``histograms``).
    """

    MAX_OPS = 3  # a split's: the rows' parent - small child, the pairs' parent - small child - cross pairs

    def __init__(self, subtract3: Any, subtract_children: Any = None, before: Any = None) -> None:
        self._kernel, self._children_kernel, self._ops = subtract3, subtract_children, []  # type: Any, Any, list
        self._children: Optional[tuple] = None
        self._before = before
        self._held: list = []  # subtractions held for a level's one kernel (hold), applied by flush if not taken
        #: Run first by :meth:`flush` and :meth:`take` (not :meth:`hold`, whose kernel comes later): a
        #: level's row histograms not launched yet (``level_place``), which what is applied now may read.
        self.pending_builds: Optional[Callable[[], None]] = None

    def add(self, a: "DeviceHist", b: "DeviceHist") -> None:
        if (self._ops and self._ops[0][0]._array.size != a._array.size) or self._children is not None:
            self.flush()  # one launch covers one size; a completion runs after the one subtraction before it
        self._ops.append((a, b))
        if len(self._ops) == self.MAX_OPS:
            self.flush()

    def children(self, parent: "DeviceHist", left: "DeviceHist", right: "DeviceHist", record: Any) -> None:
        """A split's children's pair histograms completed by the plan in ``record`` (made on the card:
        ``_histograms_kernels.child_hists``), after the subtractions queued before, in one launch
        with at most one of them."""
        if (self._children is not None or len(self._ops) > 1
                or (self._ops and self._ops[0][0]._array.size != parent._array.size)):
            self.flush()
        self._children = (parent, left, right, record)

    def take(self, targets: list, *, drop_others: bool = False) -> Optional[tuple]:
        """The one queued ``a -= b``, taken off the queue for a kernel that applies it itself as it reads
        ``a`` (``ole_fast``'s feature choice, :func:`._choice_kernels.wse_choose`), when ``a`` is
        one of ``targets``: ``(index of a in targets, a's array, b's array)``. With ``drop_others``, an
        ``a`` that is none of them is dropped (None): the caller knows it is never read again (a
        leaf that is never split). Else, or when the queue holds anything but one subtraction, None
        and the queue as it was. The waiting build runs first either way."""
        if self._children is not None or len(self._ops) != 1:
            return None
        a, b = self._ops[0]
        index = next((i for i, t in enumerate(targets) if t is a), -1)
        if index < 0 and not drop_others:
            return None
        self._pending_builds()
        if self._before is not None:
            self._before()  # b's build, queued before this kernel
        self._ops = []
        return None if index < 0 else (index, a._array, b._array)

    def hold(self, targets: list) -> None:
        """:meth:`take` for a later kernel: the one queued ``a -= b``, when ``a`` is one of ``targets``, is
        held (:meth:`take_held`: a breadth-first level's feature choice,
        :func:`._choice_kernels.wse_choose_level`, applies it as it reads ``a``), else dropped (``a`` is
        never read again: a leaf never split), so the next split's subtraction queues alone and nothing
        runs mid-level. Both histograms are kept (none goes back to the pool) until then; a held one that
        something reads first is applied by :meth:`flush`, before the queue's own. With anything but one
        subtraction queued: nothing taken (the queue as it was)."""
        if self._children is not None or len(self._ops) != 1:
            return
        a, b = self._ops[0]
        if self._before is not None:
            self._before()  # b's build, queued before the kernel that reads it
        self._ops = []
        if any(t is a for t in targets):
            self._held.append((a, b))

    def take_held(self) -> list:
        """The held subtractions not applied yet, ``(a, b)`` (:class:`DeviceHist`) each, in the order held;
        none held after (the caller keeps them until its kernel is launched)."""
        held, self._held = self._held, []
        return held

    def restore(self, held: list) -> None:
        """Subtractions taken by :meth:`take_held` and not launched, held again before any others (the
        next :meth:`flush` applies them)."""
        self._held = list(held) + self._held

    def flush(self) -> None:
        """Run the held subtractions, then the queued ones (a launch per ``MAX_OPS`` of one size; none:
        nothing)."""
        self._pending_builds()
        if self._before is not None:
            self._before()
        held, self._held = self._held, []
        ops, self._ops, children, self._children = self._ops, [], self._children, None
        if children is None:  # read before their level's kernel: applied now, first, with the queue's
            held, ops = [], held + ops
        self._run(held)
        if children is not None:
            parent, left, right, record = children
            first = (_flat(ops[0][0]._array), _flat(ops[0][1]._array)) if ops else (_flat(parent._array),) * 2
            self._children_kernel[grid_launch(int(parent._array.size))](
                *first, len(ops), _flat(parent._array), _flat(left._array), _flat(right._array), record)
            return
        self._run(ops)

    def _pending_builds(self) -> None:
        run, self.pending_builds = self.pending_builds, None
        if run is not None:
            run()

    def _run(self, ops: list) -> None:
        """``a -= b`` of each of ``ops`` in order: a ``subtract3`` launch per run of at most ``MAX_OPS`` of one size."""
        i = 0
        while i < len(ops):
            n = int(ops[i][0]._array.size)
            j = i + 1
            while j < len(ops) and j - i < self.MAX_OPS and int(ops[j][0]._array.size) == n:
                j += 1
            flat = [(_flat(a._array), _flat(b._array)) for a, b in ops[i:j]]
            flat += [flat[0]] * (self.MAX_OPS - len(flat))  # not applied: n_ops
            self._kernel[grid_launch(n)](*(x for ab in flat for x in ab), j - i)
            i = j


class DeviceHist:
    """A ``(slots, channels)`` float64 histogram in device memory (``array``), as the grower uses it.

    Parameters
    ----------
    array : device array
        The histogram (C-contiguous, float64); owned by this object from now on.
    queue : SubtractQueue
        Where ``-=`` goes (run before ``array`` is used).
    memory : DeviceMemory, optional
        Counts the single-entry reads (:meth:`DeviceMemory.read`).
    """

    __slots__ = ("_array", "_queue", "_memory", "_known", "__weakref__")

    def __init__(self, array: Any, queue: SubtractQueue, memory: Optional[DeviceMemory] = None) -> None:
        self._array = array
        self._queue = queue
        self._memory = memory
        self._known: dict = {}  # entries that came back with another read (the backend's split search)

    @property
    def array(self) -> Any:
        """The device array, every queued subtraction applied."""
        self._queue.flush()
        return self._array

    def known(self, slot: int, channel: int, value: float) -> None:
        """Entry ``[slot, channel]`` is ``value`` (read with something else): ``self[slot, channel]``
        reads nothing until the histogram changes."""
        self._known[(int(slot), int(channel))] = float(value)

    @property
    def shape(self) -> tuple:
        return tuple(self._array.shape)

    def __isub__(self, other: "DeviceHist") -> "DeviceHist":
        if not isinstance(other, DeviceHist) or other.shape != self.shape:
            raise ValueError(f"a device histogram of shape {self.shape} can only subtract another of that shape")
        self._known.clear()
        self._queue.add(self, other)
        return self

    def __getitem__(self, index: tuple) -> float:
        """One entry ``[slot, channel]``, copied to the host."""
        slot, channel = index
        value = self._known.get((int(slot), int(channel)))
        if value is not None:
            return value
        array = self.array
        if self._memory is None:
            return float(array[int(slot), int(channel)])
        return float(self._memory.read(array[int(slot), int(channel):int(channel) + 1])[0])

    def copy_to_host(self) -> np.ndarray:
        """The whole histogram on the host (tests, debugging: the grower never needs it)."""
        return self.array.copy_to_host()
