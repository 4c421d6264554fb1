"""The grower's GPU backend (``TreeBooster(device="cuda")``): the histograms in numba.cuda.

:class:`CUDABackend` provides the contract of :mod:`customobj.ole.backend` (issue "OLE at scale").
What runs where in this first version:

- **on the device**: the binned matrix (uploaded once per fit, feature-major), each tree's
  gradients and hessians (uploaded once per tree), the row histograms and the pair histograms
  (the OLE channels), the cost of a tree (:mod:`._cuda_hist_kernels`, deterministic, no atomics);
- **still on the host** (the CPU backend's kernels, inherited): the root's sums, the split search
  (a histogram comes back, ``slots x 3`` float64, and is searched as on the CPU, so ties break the
  same way), the row and pair partitions (a node's row indices and pairs go to the device for its
  histograms), ``ole_fast``'s pruning, the coupling sums and the objective's gradients. Moving
  those next is what the issue asks for; the histograms' results would not change.

Before a fit uses the device, :func:`check_device_memory` compares what it needs
(:func:`device_memory_needed`: bins, gradients, a node's rows and pairs, histogram partials) with
the card's free memory and refuses with the numbers (:class:`DeviceMemoryError`); the pairs are
checked again each tree, once their count is known.

Examples
--------
WEB30K's size (3.8 million rows x 136 features, 255 bins, ~60 million pairs) on a card with 1 GiB free:

>>> need = device_memory_needed(n_rows=3_788_392, n_features=136, bin_itemsize=1, n_slots=136 * 256,
...                             n_pairs=60_000_000)
>>> sorted(need)
['bins', 'gradients', 'histograms', 'pairs', 'rows']
>>> check_device_memory(need, free=2**30)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
customobj.ole.cuda_backend.DeviceMemoryError: TreeBooster(device="cuda") needs 1.66 GiB of GPU memory (...), but the device has 1 GiB free
>>> print(f"{need['pairs'] / 2**30:.3f} GiB of pairs, {need['bins'] / 2**30:.3f} GiB of bins")
0.894 GiB of pairs, 0.480 GiB of bins
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._cuda_runtime import THREADS, GPUUnavailableError, require_gpu
from .backend import CPUBackend
from .common import HIST_CHANNELS, PH_CHANNELS
from .context import GrowContext

__all__ = ["CUDABackend", "DeviceMemoryError", "device_memory_needed", "check_device_memory", "free_device_memory",
           "n_blocks", "ROW_BLOCK", "PAIR_BLOCK", "MAX_BLOCKS"]

#: Rows per block of a row histogram (a node this small is summed by one thread per feature, in
#: the CPU's order) and pairs per block of a pair histogram (:mod:`._cuda_hist_kernels`).
ROW_BLOCK = 4096
PAIR_BLOCK = 4096
#: Most blocks of one histogram: the partials take ``MAX_BLOCKS x slots x 3`` float64 on the device.
MAX_BLOCKS = 256

_WHAT = 'TreeBooster(device="cuda")'
_GIB = 2.0**30


class DeviceMemoryError(GPUUnavailableError):
    """A ``device="cuda"`` fit needs more GPU memory than the card has free (the message has the numbers)."""


def device_memory_needed(*, n_rows: int, n_features: int, bin_itemsize: int, n_slots: int, n_pairs: int = 0,
                         index_itemsize: int = 4) -> dict:
    """Bytes of GPU memory a fit holds at its peak, by item.

    ``bins``: the binned matrix; ``gradients``: a tree's ``g`` and ``h`` (float64); ``rows``: a
    node's row indices (int64, at most every row); ``pairs``: a node's pairs (two indices and a
    float64 coupling each, at most every pair); ``histograms``: the per-block partials and the
    reduced histogram (float64, ``slots x 3``).
    """
    return {
        "bins": int(n_rows) * int(n_features) * int(bin_itemsize),
        "gradients": 2 * int(n_rows) * 8,
        "rows": int(n_rows) * 8,
        "pairs": int(n_pairs) * (2 * int(index_itemsize) + 8),
        "histograms": (MAX_BLOCKS + 1) * int(n_slots) * max(HIST_CHANNELS, PH_CHANNELS) * 8,
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


def n_blocks(n_items: int, block: int) -> int:
    """Blocks of one histogram over ``n_items`` rows or pairs: a function of the count only, so the
    sums' order never depends on the device.

    >>> n_blocks(0, ROW_BLOCK), n_blocks(ROW_BLOCK, ROW_BLOCK), n_blocks(ROW_BLOCK + 1, ROW_BLOCK), n_blocks(10**9, 1)
    (1, 1, 2, 256)
    """
    return int(max(1, min(MAX_BLOCKS, (n_items + block - 1) // block)))


def _launch(n_threads: int) -> tuple:
    """``(blocks, threads)`` covering ``n_threads``: small launches use fewer threads per block."""
    per = min(THREADS, max(1, n_threads))
    return (max(1, math.ceil(n_threads / per)), per)


class CUDABackend(CPUBackend):
    """The grower's kernels with the histograms on the GPU (see the module docstring for what is where).

    Parameters
    ----------
    ctx, params
        As for :class:`~customobj.ole.backend.CPUBackend`.

    Raises
    ------
    GPUUnavailableError
        No usable GPU (no ``numba-cuda``, driver or device: the message says which).
    DeviceMemoryError
        The binned matrix, gradients and histograms do not fit the device's free memory.
    """

    def __init__(self, ctx: GrowContext, params) -> None:
        self._cuda = require_gpu(_WHAT)
        super().__init__(ctx, params)
        from . import _cuda_hist_kernels as kernels

        self._k = kernels
        d = ctx.data
        self._shape = dict(n_rows=d.n_rows, n_features=d.feature_major.shape[0],
                           bin_itemsize=d.feature_major.dtype.itemsize, n_slots=d.n_slots,
                           index_itemsize=np.dtype(d.index_dtype()).itemsize)
        need = device_memory_needed(**self._shape)
        check_device_memory(need)
        # what this fit keeps on the device from here on: later checks count it as theirs, not as taken
        self._resident = need["bins"] + need["histograms"]
        cuda = self._cuda
        self._bins = cuda.to_device(np.ascontiguousarray(d.feature_major))
        self._offsets = cuda.to_device(np.ascontiguousarray(d.offsets, dtype=np.int64))
        self._n_bins = np.ascontiguousarray(d.n_bins, dtype=np.int64)
        # one partial buffer serves both histograms: each has three channels (common.py)
        self._partial = cuda.device_array((MAX_BLOCKS, d.n_slots, HIST_CHANNELS), dtype=np.float64)
        self._out = cuda.device_array((d.n_slots, HIST_CHANNELS), dtype=np.float64)
        self._all_features = np.arange(self._shape["n_features"], dtype=np.int64)
        self._all_feature_args = self._feature_args(self._all_features)  # every tree's full pair histograms
        self._grad = self._hess = None

    # --- the tree's gradients: uploaded with the root's sums, the first call of every tree -------------
    def row_sums(self, order: np.ndarray, grad: np.ndarray, hess: np.ndarray) -> tuple:
        """``(sum g, sum h)`` over ``order`` (host); uploads the tree's ``grad`` and ``hess``."""
        self._grad = self._cuda.to_device(np.ascontiguousarray(grad, dtype=np.float64))
        self._hess = self._cuda.to_device(np.ascontiguousarray(hess, dtype=np.float64))
        return super().row_sums(order, grad, hess)

    def pair_buffers(self, pairs: tuple) -> tuple:
        """As on the CPU, after checking that the tree's pairs fit the device next to the rest."""
        check_device_memory(device_memory_needed(**self._shape, n_pairs=pairs[0].shape[0]),
                            free=free_device_memory() + self._resident)
        return super().pair_buffers(pairs)

    def _feature_args(self, feats: np.ndarray) -> tuple:
        """``(feats, their first slots, their bin counts)`` on the device, for ``pair_hist_blocks``."""
        cuda = self._cuda
        return (cuda.to_device(feats), cuda.to_device(np.ascontiguousarray(self.data.offsets[feats], dtype=np.int64)),
                cuda.to_device(self._n_bins[feats]))

    # --- histograms on the device --------------------------------------------------------------------------
    def _reduced(self, nb: int) -> np.ndarray:
        k, n_slots = self._k, self.data.n_slots
        k.reduce_blocks[_launch(n_slots * HIST_CHANNELS)](self._partial, nb, self._out)
        return self._out.copy_to_host()

    def row_hist(self, order: np.ndarray, start: int, end: int, grad: np.ndarray, hess: np.ndarray,
                 root: bool = False) -> np.ndarray:
        """``(slots, 3)`` histogram [g, h, count] of the rows ``order[start:end]``, built on the device
        from the gradients :meth:`row_sums` uploaded (``grad``, ``hess`` are those arrays)."""
        if self._grad is None:
            raise RuntimeError("CUDABackend.row_hist before row_sums: the tree's gradients are not on the device")
        k, n = self._k, end - start
        rows = self._cuda.to_device(np.ascontiguousarray(order[start:end], dtype=np.int64))
        nb = n_blocks(n, ROW_BLOCK)
        k.row_hist_blocks[_launch(self._shape["n_features"] * nb)](self._bins, rows, n, nb, self._grad, self._hess,
                                                                   self._offsets, self._partial)
        return self._reduced(nb)

    def pair_hist(self, buf: tuple, start: int, end: int, features: Optional[np.ndarray] = None) -> np.ndarray:
        """``(slots, 3)`` pair histogram [hi, nanp, R] of the pairs ``buf[start:end]``, built on the
        device (all features, or only ``features``: the other slots are 0)."""
        k, cuda, n = self._k, self._cuda, end - start
        feats = self._all_features if features is None else np.unique(np.asarray(features, dtype=np.int64))
        if feats.size and (feats[0] < 0 or feats[-1] >= self._all_features.size):
            raise ValueError(f"features must be in [0, {self._all_features.size}), got {feats[0]}..{feats[-1]}")
        if n <= 0 or feats.size == 0:  # no pairs or no features: an empty histogram
            return np.zeros((self.data.n_slots, PH_CHANNELS))
        args = self._all_feature_args if features is None else self._feature_args(feats)
        nb = n_blocks(n, PAIR_BLOCK)
        if feats.size < self._all_features.size:  # slots of the other features are read back: zero them
            k.zero[_launch(nb * self.data.n_slots * PH_CHANNELS)](self._partial.reshape(self._partial.size))
        pi, pj, pc = (cuda.to_device(np.ascontiguousarray(a[start:end])) for a in buf)
        k.pair_hist_blocks[_launch(feats.size * nb)](self._bins, pi, pj, pc, n, nb, *args, self._partial)
        return self._reduced(nb)
