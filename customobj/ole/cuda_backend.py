"""The grower's GPU backend (``TreeBooster(device="cuda")``): a tree grown in numba.cuda.

:class:`CUDABackend` provides the contract of :mod:`customobj.ole.backend` (issue "OLE at scale").
What runs where:

- **on the device**, every kernel deterministic (see *Kernels* below):

  - the binned matrix, uploaded once per fit (feature-major and row-major);
  - the gradients and hessians, computed there from scores kept there for the whole fit when the
    objective has GPU kernels (:mod:`.cuda_scores`: se / wse with any objective that has GPU
    kernels, every criterion with a pointwise objective), and with them the pair couplings when the
    criterion needs them and they have a GPU kernel (``ole``, ``ole_fast``, ``ole_float64`` with
    LambdaRank and the pairwise losses: ``objectives._cuda_couplings``, the CPU's pairs in the
    CPU's order; with bagging the out-of-bag pairs are dropped there too), which the pair histograms
    and partitions take where they are; each finished tree is added to those scores there;
  - each tree's gradients, hessians and couplings rounded to their grids, the root's sums, the row
    and pair histograms, which stay there (:class:`~customobj.ole.cuda_memory.DeviceHist`: the
    grower's ``parent -= child`` is a kernel), the split search of every criterion and
    ``ole_fast``'s per-feature WSE ranking, the row and pair partitions and the in-node coupling
    sums; only the chosen split (12 float64) comes back, and the sums, ``ole_fast``'s per-feature
    gains (one float64 a feature) and a NaN slot's row count. Host pairs are uploaded once per
    tree, device pairs used as they are.

- **on the host**: the objective's gradients and its pair couplings when the criterion needs
  couplings that have no GPU kernel (composites: ``Sum``, ``Scaled``) or that the host must see
  (``leaf_solver="joint"``), with ``line_search``, and for an objective without GPU kernels
  (``TreeBooster.device_gradients_`` says which and why; those gradients are uploaded once per
  tree); ``ole_fast``'s per-query pair pruning (device pairs come to the host for it, then the kept
  ones go back) and its dropped pairs' leaf couplings; the joint leaf solve; the tree's
  bookkeeping (:mod:`.grower`). The row order comes back once per finished tree.

Kernels
-------
**Why the trees are the CPU's.** Every tree first rounds its gradients, hessians and couplings to
a power-of-two grid (:mod:`.fixed_point`, XGBoost's deterministic-histogram technique); the CPU
backend does the same. On the grid every partial sum is exact, so a sum is the same whatever the
order of its terms: atomics, block counts, thread counts and the card cannot change a bit, and
the GPU's histograms, node sums and couplings are the CPU's bit for bit. The split search is the
CPU's own source (a ``@njit`` function compiled as a device function), ties broken the CPU's way.
Under the simulator the trees are the CPU's exactly (tests/test_ole_cuda_backend.py; the tiny
fits where float32 pair sums used to choose other splits at exact ties are kept there).

**Which kernel does what** (``U``: rows or pairs x features of a histogram; traffic per update):

- :mod:`._cuda_reduce_kernels` ``grid_max``, ``grid_units``, ``grid_round`` (after ``reset``): a
  tree's grid, 4 launches for its rows and 4 for its pairs, once per tree: grid-stride loops, a
  tree reduction in shared memory, one atomic per block (a max, an int64 sum, an exact float64
  sum); ``coupling_sums``: a node's (or both children's) couplings, the same way; ``scan_counts``:
  the partitions' block offsets, a block-wide Hillis-Steele scan; ``pick_best``: the best feature,
  a block tree reduction (larger gain, then lower feature).
- :mod:`._cuda_hist_kernels` ``row_hist_shared`` / ``pair_hist_shared`` (after ``zero``): a grid
  of (chunks, feature groups); each block keeps its group's histogram in shared memory as int64
  grid units (``SHARED_SLOTS`` slots, 48,000 bytes: eight 255-bin features), its threads stride
  over (item, feature) updates, neighbouring lanes on neighbouring features of one item, so a
  warp reads one row's run of the row-major bins in one coalesced transaction. Per update: 1 bin
  byte (rows) or 2 (pairs), 3 shared ``atom.add.u64``, the item's index and values (16-24 bytes)
  broadcast to the group's lanes; per block, once: one global float64 atomic per non-zero slot
  and channel. No per-block partial histograms in global memory (the old design's 214 MB at
  WEB30K). A feature wider than a block's shared memory adds straight to global memory.
- :mod:`._cuda_split_kernels` ``feature_bests``: one thread per feature runs the CPU's
  ``_best_in_feature`` (records ``FeatureBins``, ``ChildSums``, ``SplitRules``: no kernel over 12
  arguments); ``subtract``: ``parent -= child``, elementwise (exact on the grid).
- :mod:`._cuda_partition_kernels`: stable row and pair partitions, blocks of ``PARTITION_BLOCK``
  items marked and placed by the CPU's own per-block code, offsets from ``scan_counts``.

**Launches per split**, counted under the simulator (2 ``ole`` trees of 8 leaves, 400 rows): about
22 launches and 6 blocking reads per split, the objective's per-tree kernels included (partitions
7 with 2 reads, children's couplings 2 with 2 reads, histograms and subtractions ~6, split search
4 with 2 reads). The issue's budget (8 and 1) needs the grower to fuse these steps and keep
the counts on the card.

``TreeBooster.device_memory_peak_`` is the peak of what the fit held on the device
(:class:`~customobj.ole.cuda_memory.DeviceMemory`).

Before a fit uses the device, :func:`check_device_memory` compares what it needs
(:func:`device_memory_needed`: bins, gradients, the row order and its scratch, the two pair
buffers, one histogram; not the leaves' histograms, ``slots x 3`` float64 each, nor the
objective's scratch) with the card's free memory and refuses with the numbers (:class:`DeviceMemoryError`); the pairs are
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
customobj.ole.cuda_backend.DeviceMemoryError: TreeBooster(device="cuda") needs 2.92 GiB of GPU memory (...), but the device has 1 GiB free
>>> print(f"{need['pairs'] / 2**30:.3f} GiB of pairs, {need['bins'] / 2**30:.3f} GiB of bins")
1.788 GiB of pairs, 0.960 GiB of bins
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .._cuda_runtime import THREADS, GPUUnavailableError, is_device_array, require_gpu
from ._cuda_launch import grid_launch, pow2_threads
from .backend import CPUBackend, _node
from .common import HIST_CHANNELS, PH_CHANNELS, SPLIT_SIZE, ChildSums, SplitInfo
from .context import GrowContext
from .criterion import WSE
from .fixed_point import grid_step_of
from .cuda_memory import DeviceHist, DeviceMemory
from .splitting import FeatureBins, parent_score

__all__ = ["CUDABackend", "DeviceMemoryError", "device_memory_needed", "check_device_memory", "free_device_memory"]

#: Rows (or pairs) per block of a partition, and most blocks: a partition's result does not depend on
#: its block count (it is stable), so it takes many short blocks (one thread each: 30,000 threads at
#: WEB30K's 3.8M rows; their offsets are one block-wide scan) for parallelism.
PARTITION_BLOCK = 128
MAX_PARTITION_BLOCKS = 32768
ACC_RING = 256  # coupling sums per zeroing of their accumulators

_WHAT = 'TreeBooster(device="cuda")'
_GIB = 2.0**30


class DeviceMemoryError(GPUUnavailableError):
    """A ``device="cuda"`` fit needs more GPU memory than the card has free (the message has the numbers)."""


def device_memory_needed(*, n_rows: int, n_features: int, bin_itemsize: int, n_slots: int, n_pairs: int = 0,
                         index_itemsize: int = 4) -> dict:
    """Bytes of GPU memory a fit holds at its peak, by item.

    ``bins``: the binned matrix, feature-major (partitions) and row-major (the histograms' coalesced
    reads); ``gradients``: a tree's ``g`` and ``h`` and their on-grid copies (float64); ``rows``: the
    tree's row order and the partition's scratch (int64 each) and each row's side (a byte);
    ``pairs``: the tree's two pair buffers (two indices and a float64 coupling each, every pair);
    ``histograms``: one histogram (float64, ``slots x 3``; the blocks add into it, no partials).
    """
    return {
        "bins": 2 * int(n_rows) * int(n_features) * int(bin_itemsize),
        "gradients": 4 * int(n_rows) * 8,
        "rows": int(n_rows) * (8 + 8 + 1),
        "pairs": 2 * int(n_pairs) * (2 * int(index_itemsize) + 8),
        "histograms": int(n_slots) * max(HIST_CHANNELS, PH_CHANNELS) * 8,
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


def _launch(n_threads: int) -> tuple:
    """``(blocks, threads)`` covering ``n_threads``: small launches use fewer threads per block."""
    per = min(THREADS, max(1, n_threads))
    return (max(1, math.ceil(n_threads / per)), per)


class CUDABackend(CPUBackend):
    """The grower's kernels on the GPU (see the module docstring for what is where).

    Parameters
    ----------
    ctx, params
        As for :class:`~customobj.ole.backend.CPUBackend`.

    Attributes
    ----------
    memory : DeviceMemory
        What the fit holds on the device, now and at its peak (bytes).

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
        from . import _cuda_partition_kernels as partition_kernels
        from . import _cuda_reduce_kernels as reduce_kernels
        from . import _cuda_split_kernels as split_kernels

        self._k, self._ks, self._kp, self._kr = kernels, split_kernels, partition_kernels, reduce_kernels
        d = ctx.data
        n_feat = d.feature_major.shape[0]
        self._shape = dict(n_rows=d.n_rows, n_features=n_feat, bin_itemsize=d.feature_major.dtype.itemsize,
                           n_slots=d.n_slots, index_itemsize=np.dtype(d.index_dtype()).itemsize)
        need = device_memory_needed(**self._shape)
        check_device_memory(need)
        # what this fit keeps on the device from here on: later checks count it as theirs, not as taken
        self._resident = need["bins"] + need["histograms"]
        mem = self.memory = DeviceMemory(self._cuda)
        self._bins = mem.upload(d.feature_major)
        self._bins_rm = mem.upload(np.ascontiguousarray(d.feature_major.T))  # coalesced histogram reads
        self._offsets = mem.upload(np.asarray(d.offsets, dtype=np.int64))
        self._n_bins = np.ascontiguousarray(d.n_bins, dtype=np.int64)
        self._n_bins_d = mem.upload(self._n_bins)
        self._bins_d = FeatureBins(self._n_bins_d, self._offsets)  # the split kernels' record, on the device
        self._all_features = np.arange(n_feat, dtype=np.int64)
        self._all_groups = self._feature_args(self._all_features)  # every full histogram's feature groups
        # the split search's per-feature records, gains and result; a stand-in pair histogram for SE/WSE
        self._per = mem.array((max(n_feat, 1), SPLIT_SIZE), np.float64)
        self._gains = mem.array((max(n_feat, 1),), np.float64)
        self._res = mem.array((SPLIT_SIZE,), np.float64)
        self._no_ph = mem.upload(np.zeros((1, PH_CHANNELS)))
        # the grids (fixed_point) of the tree's rows and pairs: stats [max|a|, max|b|, step a, step b],
        # int64 unit sums, exact sums; and the coupling sums' accumulators
        self._rstats, self._pstats = mem.array((4,), np.float64), mem.array((4,), np.float64)
        self._runits, self._punits = mem.array((2,), np.int64), mem.array((2,), np.int64)
        self._rsums, self._psums = mem.array((2,), np.float64), mem.array((2,), np.float64)
        # coupling sums' accumulators, a ring zeroed in one launch each time it wraps (not one per sum)
        self._csums, self._csum_next = mem.array((ACC_RING, 2), np.float64), ACC_RING
        self._gh = mem.array((2, max(d.n_rows, 1)), np.float64)  # the tree's g and h on their grids
        # the tree's row order, the partition's scratch, each row's side and the blocks' counts
        self._tmp_rows = mem.array((max(d.n_rows, 1),), np.int64)
        self._go_left = mem.array((max(d.n_rows, 1),), np.bool_)
        self._counts = mem.array((MAX_PARTITION_BLOCKS, 2), np.int64)
        self._no_idx = mem.array((1,), np.int64)
        self._before = mem.array((MAX_PARTITION_BLOCKS + 1, 2), np.int64)
        self._grad: Any = None
        self._hess: Any = None
        self._order: Any = None  # the tree's row order on the device
        self._mask_host: Optional[np.ndarray] = None
        self._mask_dev: Any = None

    # --- the tree's gradients and root sums: the first call of every tree -----------------------------
    def row_sums(self, order: np.ndarray, grad, hess) -> tuple:
        """``(sum g, sum h)`` over ``order``, of the tree's gradients and hessians rounded to their
        grids on the device (:mod:`._cuda_reduce_kernels`: the CPU's grids and exact sums); host
        gradients are uploaded first. The rounded copies are what the row histograms add."""
        n = int(order.shape[0])
        self.memory.sample()  # the card's use as a tree starts (a real card only)
        self._order = self.memory.upload(np.asarray(order, dtype=np.int64))  # partitioned there from now on
        if not is_device_array(grad):
            grad = self.memory.upload(np.asarray(grad, dtype=np.float64))
            hess = self.memory.upload(np.asarray(hess, dtype=np.float64))
        self._grad, self._hess = grad, hess
        self._to_grid(grad, hess, self._order, True, n, self._rstats, self._runits, self._gh[0], self._gh[1],
                      self._rsums)
        G, H = self._rsums.copy_to_host()
        return float(G), float(H)

    def _to_grid(self, a, b, idx, use_idx: bool, n: int, stats, units, oa, ob, sums) -> None:
        """``a`` and ``b`` (items ``idx[:n]`` or ``:n``) onto their grids: reset, max, unit sums, round."""
        kr, launch = self._kr, grid_launch(n)
        kr.reset[1, 4](stats, units, sums)
        kr.grid_max[launch](a, b, idx, use_idx, n, stats)
        kr.grid_units[launch](a, b, idx, use_idx, n, stats, units)
        kr.grid_round[launch](a, b, idx, use_idx, n, stats, units, oa, ob, sums)

    def round_pairs(self, pc) -> None:
        """The tree's couplings onto their grid (:mod:`.fixed_point`) where they are (host ones as the
        CPU does: the joint solve keeps that copy; their step then goes up for the pair histograms)."""
        if not is_device_array(pc):
            super().round_pairs(pc)
            step = grid_step_of(pc, 0, pc.shape[0])
            self._pstats = self.memory.upload(np.array([0.0, 0.0, step, step]))
            return
        self._to_grid(pc, pc, self._no_idx, False, int(pc.shape[0]), self._pstats, self._punits, pc, pc, self._psums)

    def pair_buffers(self, pairs: tuple) -> tuple:
        """The tree's two pair buffers on the device (the pairs uploaded once per tree), after checking
        that they fit next to the rest; ``ole_fast`` keeps them on the host until :meth:`prune_pairs`."""
        need = device_memory_needed(**self._shape, n_pairs=pairs[0].shape[0])
        # device pairs (the objective's couplings, cuda_scores) already hold the first of the two buffers
        held = need["pairs"] // 2 if is_device_array(pairs[0]) else 0
        check_device_memory(need, free=free_device_memory() + self._resident + held)
        if self.criterion.prunes_pairs and self.ctx.queries is not None:  # device pairs come to the host here
            return super().pair_buffers(tuple(a.copy_to_host() if is_device_array(a) else a for a in pairs))
        self.round_pairs(pairs[2])
        return self._device_pairs(pairs)

    def prune_pairs(self, bufs: tuple) -> tuple:
        """``ole_fast``'s pruning on the host (:mod:`.pair_pruning`), then the kept pairs to the device."""
        if not self.criterion.prunes_pairs or self.ctx.queries is None:
            return bufs, None
        kept, dropped = super().prune_pairs(bufs)
        return self._device_pairs(kept[0]), dropped

    def _device_pairs(self, pairs: tuple) -> tuple:
        mem = self.memory
        first = tuple(a if is_device_array(a) else mem.upload(a) for a in pairs)  # device couplings stay put
        return first, tuple(mem.array(a.shape, a.dtype) for a in first)

    def _feature_args(self, feats: np.ndarray) -> tuple:
        """``feats``' shared-memory groups (``feature_groups``): their table, and the arrays on the device."""
        mem = self.memory
        groups, members, smap = self._k.feature_groups(self.data.offsets, self._n_bins, feats)
        return groups, (mem.upload(groups), mem.upload(members), mem.upload(smap))

    # --- histograms on the device: they stay there (DeviceHist) ------------------------------------------
    def _zeroed(self) -> Any:
        out = self.memory.array((self.data.n_slots, HIST_CHANNELS), np.float64)
        self._k.zero[grid_launch(out.size)](out.reshape(out.size))
        return out

    def row_hist(self, order: np.ndarray, start: int, end: int, grad, hess, root: bool = False) -> Any:
        """``(slots, 3)`` histogram [g, h, count] of the rows ``order[start:end]``, built and kept on
        the device from the gradients :meth:`row_sums` took (``grad``, ``hess`` are those arrays)."""
        if self._grad is None or self._order is None:
            raise RuntimeError("CUDABackend.row_hist before row_sums: the tree's gradients are not on the device")
        k, n = self._k, end - start
        rows_d = self._order[start:end]  # the device order (the host's ``order`` is only read at the end)
        out = self._zeroed()
        groups, dev = self._all_groups
        if n > 0 and groups.shape[0]:
            k.row_hist_shared[k.launch_for(n, groups)](
                self._bins_rm, rows_d, n, self._gh[0], self._gh[1], self._rstats[2:4], *dev, out)
        return DeviceHist(out, self._ks.subtract)

    def pair_hist(self, buf: tuple, start: int, end: int, features: Optional[np.ndarray] = None) -> Any:
        """``(slots, 3)`` pair histogram [hi, nanp, R] of the pairs ``buf[start:end]``, built and kept
        on the device (all features, or only ``features``: the other slots are 0)."""
        k, n = self._k, end - start
        feats = self._all_features if features is None else np.unique(np.asarray(features, dtype=np.int64))
        if feats.size and (feats[0] < 0 or feats[-1] >= self._all_features.size):
            raise ValueError(f"features must be in [0, {self._all_features.size}), got {feats[0]}..{feats[-1]}")
        out = self._zeroed()
        if n > 0 and feats.size:
            groups, dev = self._all_groups if features is None else self._feature_args(feats)
            pi, pj, pc = (a if is_device_array(a) else self.memory.upload(a) for a in buf)
            k.pair_hist_shared[k.launch_for(n, groups)](
                self._bins_rm, pi, pj, pc, start, n, self._pstats[2:4], *dev, out)
        return DeviceHist(out, self._ks.subtract)

    # --- split search on the device: only the chosen split comes back ---------------------------------------
    def _mask(self, mask: np.ndarray):
        """The feature mask on the device, uploaded again only when it changes (a tree's nodes share one)."""
        host = np.ascontiguousarray(mask, dtype=np.bool_)
        if self._mask_host is None or not np.array_equal(host, self._mask_host):
            self._mask_host, self._mask_dev = host.copy(), self.memory.upload(host)
        return self._mask_dev

    def find_split(self, hist: Any, phist: Any, mask: np.ndarray,
                   sums: ChildSums) -> SplitInfo:
        """The best split of a node from its device histograms (:mod:`._cuda_split_kernels`: the CPU's
        per-feature search, one thread per feature, then the first strictly best feature by a block
        reduction); only the chosen split comes back."""
        self._search(hist, phist, mask, _node(sums), self.rules)
        self._kr.pick_best[1, pow2_threads(self._shape["n_features"])](self._per, self._gains, self._res)
        return SplitInfo.from_array(self._res.copy_to_host())

    def wse_gains(self, hist: Any, mask: np.ndarray, sums: ChildSums, out: np.ndarray) -> np.ndarray:
        """``out[f]``: feature ``f``'s best WSE gain at the node (0 outside ``mask``), searched on the device."""
        self._search(hist, None, mask, _node(sums, with_c=False), self.rules._replace(score=WSE))
        out[:] = self._gains.copy_to_host()[:out.shape[0]]
        return out

    def _search(self, hist: Any, phist: Any, mask: np.ndarray, node: ChildSums, rules) -> None:
        n_feat = self._shape["n_features"]
        self._ks.feature_bests[_launch(n_feat)](hist.array, self._no_ph if phist is None else phist.array,
                                                phist is not None, self._bins_d, self._mask(mask), node, rules,
                                                parent_score(node, rules), self._per, self._gains)

    # --- where the scores live, and what the fit held -------------------------------------------------------
    def device_scores(self, obj, prep, scores: np.ndarray, need_pairs: bool, line_search: bool, *,
                      pairs_on_host: Optional[str] = None):
        """The scores on the device with each round's gradients (and, with ``need_pairs``, pair
        couplings) computed there (:class:`~customobj.ole.cuda_scores.DeviceScores`), or None with the
        reason in ``gradients_where``."""
        from .cuda_scores import DeviceScores, host_gradients_reason

        why = host_gradients_reason(obj, need_pairs, line_search, pairs_on_host)
        if why is not None:
            self.gradients_where = f"host: {why}"
            return None
        self.gradients_where = "device"
        index = self.data.index_dtype() if need_pairs else None  # the host path's pair index dtype
        return DeviceScores(self.memory, self._bins, self._n_bins_d, obj, prep, scores, index)

    def device_memory_peak(self) -> Optional[int]:
        """Bytes the fit held on the device at its peak (:class:`DeviceMemory`)."""
        self.memory.sample()
        return self.memory.peak

    # --- partitions and coupling sums on the device ---------------------------------------------------------
    def _scanned(self, nb: int) -> np.ndarray:
        """The blocks' offsets from their counts (a block-wide scan); the totals come back."""
        self._kr.scan_counts[1, pow2_threads(nb)](self._counts, nb, self._before)
        return self._before[nb].copy_to_host()

    @staticmethod
    def _partition_blocks(n: int) -> int:
        return int(max(1, min(MAX_PARTITION_BLOCKS, (n + PARTITION_BLOCK - 1) // PARTITION_BLOCK)))

    def partition_rows(self, order: np.ndarray, start: int, end: int, split: SplitInfo, nan_left: bool) -> int:
        """Reorder the device order's ``[start:end]`` as [left | right] by ``split`` (stable: the CPU's
        order), mark each row's side there; the left count. ``order`` (host) is brought up to date by
        :meth:`row_order`."""
        kp, n, f = self._kp, end - start, split.feature
        nb = self._partition_blocks(n)
        kp.mark_rows_blocks[_launch(nb)](self._bins[f], self._order, start, n, nb, split.bin, int(self._n_bins[f]),
                                         bool(nan_left), self._go_left, self._counts)
        nl = int(self._scanned(nb)[0])
        kp.place_rows_blocks[_launch(nb)](self._order, start, n, nb, self._go_left, self._before, self._tmp_rows)
        kp.copy_rows[_launch(n)](self._tmp_rows, self._order, start, n)
        return nl

    def row_order(self, order: np.ndarray) -> np.ndarray:
        """The finished tree's row order, copied from the device into ``order``."""
        order[:] = self._order.copy_to_host()
        return order

    def partition_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> tuple:
        """Copy the device pairs ``src[start:end]`` to ``dst``, stably ordered [both left | both right |
        split] by the last :meth:`partition_rows`; ``(n_left, n_right)``."""
        n = end - start
        nb = self._partition_blocks(n)
        self._kp.count_sides_blocks[_launch(nb)](src[0], src[1], start, n, nb, self._go_left, self._counts)
        tl, tr = self._scanned(nb)
        self._kp.place_sides_blocks[_launch(nb)](*src, start, n, nb, self._go_left, self._before, *dst)
        return int(tl), int(tr)

    def sum_couplings(self, pc, start: int, end: int) -> float:
        """The coupling of the pairs ``start:end`` (on their grid: exact, the CPU's bits)."""
        if not is_device_array(pc):
            return super().sum_couplings(pc, start, end)
        return self._coupling_sums((pc, pc, pc), start, end, False)[0]

    def split_coupling_sums(self, buf: tuple, start: int, end: int) -> tuple:
        """The children's couplings ``(C_left, C_right)`` of the device pairs ``buf[start:end]``."""
        return self._coupling_sums(buf, start, end, True)

    def _coupling_sums(self, buf: tuple, start: int, end: int, split: bool) -> tuple:
        n, kr = end - start, self._kr
        if self._csum_next == ACC_RING:
            self._k.zero[grid_launch(2 * ACC_RING)](self._csums.reshape(2 * ACC_RING))
            self._csum_next = 0
        acc = self._csums[self._csum_next]
        self._csum_next += 1
        kr.coupling_sums[grid_launch(n)](*buf, start, n, self._go_left, split, acc)
        a, b = acc.copy_to_host()
        return float(a), float(b)
