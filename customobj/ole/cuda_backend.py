"""The grower's GPU backend (``TreeBooster(device="cuda")``): a tree grown in numba.cuda.

:class:`CUDABackend` provides the contract of :mod:`customobj.ole.backend` (issue "OLE at scale").
What runs where:

- **on the device**, every kernel deterministic (fixed blocks whose number depends only on the
  item count, summed in order; no atomics):

  - the binned matrix, uploaded once per fit (feature-major);
  - the gradients and hessians, computed there from scores kept there for the whole fit when the
    objective has GPU kernels (:mod:`.cuda_scores`: se / wse with any objective that has GPU
    kernels, every criterion with a pointwise objective), and with them the pair couplings when the
    criterion needs them and they have a GPU kernel (``ole``, ``ole_fast``, ``ole_float64`` with
    LambdaRank and the pairwise losses: ``objectives._cuda_couplings``, the CPU's pairs in the
    CPU's order; with bagging the out-of-bag pairs are dropped there too), which the pair histograms
    and partitions take where they are; each finished tree is added to those scores there;
  - the root's sums, the row and pair histograms (:mod:`._cuda_hist_kernels`), which stay there
    (:class:`~customobj.ole.cuda_memory.DeviceHist`: the grower's ``parent -= child`` is a kernel);
  - the split search of every criterion (:mod:`._cuda_split_kernels`: the CPU's per-feature search
    compiled as a device function, then the first strictly best feature, so ties break as on the
    CPU), and ``ole_fast``'s per-feature WSE ranking; only the chosen split (12 float64) comes back,
    and ``ole_fast``'s per-feature gains (one float64 a feature) and a NaN slot's row count;
  - the row and pair partitions and the in-node coupling sums (:mod:`._cuda_partition_kernels`,
    stable: the CPU's order); host pairs are copied into the pool once per tree, device pairs used as they are.

- **on the host**: the objective's gradients and its pair couplings when the criterion needs
  couplings that have no GPU kernel (composites: ``Sum``, ``Scaled``) or that the host must see
  (``leaf_solver="joint"``), with ``line_search``, and for an objective without GPU kernels
  (``TreeBooster.device_gradients_`` says which and why; those gradients are uploaded once per
  tree); ``ole_fast``'s per-query pair pruning (device pairs come to the host for it, then the kept
  ones go back) and its dropped pairs' leaf couplings; the joint leaf solve; the tree's
  bookkeeping (:mod:`.grower`). The row order comes back once per finished tree.

Sums over more than one block (``ROW_BLOCK`` rows, ``PAIR_BLOCK`` pairs) differ from the CPU's
sequential sums by float64 rounding only, so a split can differ from the CPU's only where two
candidates tie to rounding; under the simulator, on small data, the trees are the CPU's exactly
(tests/test_ole_cuda_backend.py). ``TreeBooster.device_memory_peak_`` is the peak of what the fit
held on the device (:class:`~customobj.ole.cuda_memory.DeviceMemory`).

Before a fit uses the device, :func:`~customobj.ole.cuda_memory.check_device_memory` compares what
it needs (:func:`~customobj.ole.cuda_memory.device_memory_needed`: bins, gradients, the row order and
its scratch, the two pair buffers, histogram partials and the pool's node histograms; not the
objective's scratch) with the card's free memory and refuses with the numbers
(:class:`~customobj.ole.cuda_memory.DeviceMemoryError`); the pairs are checked again each tree, once
their count is known.

Orchestration, memory and instrumentation (issue 32, items 3-4)
---------------------------------------------------------------
- **One pool per fit** (:class:`~customobj.ole.cuda_pool.DevicePool`), made before the first tree
  and counted by the memory refusal: the node histograms a tree can hold at once, the row order and
  the rows it starts from, the feature lists and mask; a node takes its histograms from it and gives
  them back when the grower drops them. Only a tree with more pairs than every earlier one grows
  the pair buffers (by half again). So no tree allocates on the device
  (tests/test_ole_cuda_stats.py).
- **The row order stays on the card**: a tree starts from the last tree's starting rows by a
  device copy (only a new bag is uploaded), and the finished order comes back only when the host
  needs it (host gradients, ``ole_fast``'s host pruning, the joint leaf solve).
- **Blocking reads** (each waits for every kernel before it): a split's children are searched
  together and their two splits come back in one read (:meth:`CUDABackend.find_splits`), each with
  its feature's NaN-slot row count (:mod:`._cuda_node_kernels`); the left row count is the
  split's own (exact histogram counts), so a row partition reads nothing; the pair partition's two
  counts and the children's couplings come back in one read (:meth:`CUDABackend.split_pairs`). A
  tree also reads its root sums and root coupling. ``ole_fast`` also reads a split's two
  children's per-feature WSE gains (one read: :meth:`CUDABackend.wse_gains_of`) and brings the
  pairs to the host for its per-query pruning once per tree (not yet on the card).
- **Counted**: every launch (:class:`~customobj.ole.cuda_stats.CountedKernels`), blocking read,
  allocation and copy goes through :class:`~customobj.ole.cuda_memory.DeviceMemory`'s
  :class:`~customobj.ole.cuda_stats.DeviceCounter`: ``TreeBooster.device_stats_``, per tree and per
  split, the same under the simulator and on a card (Python integers, no synchronisation). Issue
  32's budget (at most 8 launches and 1 read per split) needs fused kernels; the counts today and
  the budget's constants are in :mod:`.cuda_stats` and tests/test_ole_cuda_stats.py.
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Optional

import numpy as np

from .._cuda_runtime import THREADS, is_device_array, require_gpu
from .backend import CPUBackend
from .common import HIST_CHANNELS, HIST_COUNT, PH_CHANNELS, SPLIT_SIZE, ChildSums, SplitInfo
from .context import GrowContext
from .criterion import WSE
from .cuda_memory import (MAX_BLOCKS, DeviceHist, DeviceMemory, DeviceMemoryError, check_device_memory,
                          device_memory_needed, free_device_memory)
from .cuda_pool import DevicePool, hists_per_tree
from .cuda_stats import CountedKernels, DeviceStats
from .splitting import _score, node_hessian

__all__ = ["CUDABackend", "DeviceMemoryError", "device_memory_needed", "check_device_memory", "free_device_memory",
           "n_blocks", "ROW_BLOCK", "PAIR_BLOCK", "MAX_BLOCKS"]

#: Rows per block of a row histogram (a node this small is summed by one thread per feature, in
#: the CPU's order) and pairs per block of a pair histogram (:mod:`._cuda_hist_kernels`).
ROW_BLOCK = 4096
PAIR_BLOCK = 4096
#: Rows (or pairs) per block of a partition, and most blocks: a partition's result does not depend on
#: its block count (it is stable), so it takes many short blocks (one thread each) for parallelism.
PARTITION_BLOCK = 1024
MAX_PARTITION_BLOCKS = 4096

_WHAT = 'TreeBooster(device="cuda")'


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
    """The grower's kernels on the GPU (see the module docstring for what is where).

    Parameters
    ----------
    ctx, params
        As for :class:`~customobj.ole.backend.CPUBackend`.

    Attributes
    ----------
    memory : DeviceMemory
        What the fit holds on the device, now and at its peak (bytes), and its
        :class:`~customobj.ole.cuda_stats.DeviceCounter` (``memory.counter``).
    pool : DevicePool
        The buffers every node reuses (:mod:`.cuda_pool`).

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
        from . import _cuda_hist_kernels, _cuda_node_kernels, _cuda_partition_kernels, _cuda_split_kernels

        d = ctx.data
        n_feat = d.feature_major.shape[0]
        self._shape = dict(n_rows=d.n_rows, n_features=n_feat, bin_itemsize=d.feature_major.dtype.itemsize,
                           n_slots=d.n_slots, index_itemsize=np.dtype(d.index_dtype()).itemsize,
                           n_hists=hists_per_tree(params.num_leaves))
        need = device_memory_needed(**self._shape)
        check_device_memory(need, free=free_device_memory())
        # what this fit keeps on the device from here on: later checks count it as theirs, not as taken
        self._resident = need["bins"] + need["histograms"]
        mem = self.memory = DeviceMemory(self._cuda)
        counter = mem.counter  # every launch, allocation and read of the fit (cuda_stats)
        self._k, self._ks, self._kp, self._kn = (CountedKernels(m, counter) for m in (
            _cuda_hist_kernels, _cuda_split_kernels, _cuda_partition_kernels, _cuda_node_kernels))
        self._joint = bool(params.joint_leaves)
        self._bins = mem.upload(d.feature_major)
        self._offsets = mem.upload(np.asarray(d.offsets, dtype=np.int64))
        self._n_bins = np.ascontiguousarray(d.n_bins, dtype=np.int64)
        self._n_bins_d = mem.upload(self._n_bins)
        self.pool = DevicePool(mem, n_rows=d.n_rows, n_features=n_feat, n_slots=d.n_slots,
                               n_hists=self._shape["n_hists"])
        # one partial buffer serves both histograms: each has three channels (common.py)
        self._partial = mem.array((MAX_BLOCKS, d.n_slots, HIST_CHANNELS), np.float64)
        self._all_features = np.arange(n_feat, dtype=np.int64)
        self._all_feature_args = tuple(mem.upload(a) for a in (self._all_features, d.offsets, self._n_bins))
        # the split search's per-feature records, gains and results (two nodes: one read for both), each
        # with the chosen feature's NaN count behind it (_cuda_node_kernels)
        self._per = mem.array((max(n_feat, 1), SPLIT_SIZE), np.float64)
        self._gains = mem.array((max(n_feat, 1),), np.float64)
        self._wse = mem.array((2, max(n_feat, 1)), np.float64)  # ole_fast: two nodes' WSE gains, one read
        self._res = mem.array((2, SPLIT_SIZE + 1), np.float64)
        self._has_nan = bool(np.any(d.mapper.has_nan))
        self._no_ph = mem.upload(np.zeros((1, PH_CHANNELS)))
        self._sums = mem.array((MAX_BLOCKS, 2), np.float64)
        self._sum_out = mem.array((2,), np.float64)
        self._root = mem.array((4,), np.float64)  # the root's G, H and C (and a spare), one read
        # the partition's scratch, each row's side and the blocks' counts; the scan's offsets, with two
        # rows behind the totals for the children's couplings (read with the totals, in one copy)
        self._tmp_rows = mem.array((max(d.n_rows, 1),), np.int64)
        self._go_left = mem.array((max(d.n_rows, 1),), np.bool_)
        self._counts = mem.array((MAX_PARTITION_BLOCKS, 2), np.int64)
        self._before = mem.array((MAX_PARTITION_BLOCKS + 2, 2), np.int64)
        self._grad: Any = None
        self._hess: Any = None
        self._order: Any = None  # the tree's row order on the device (the pool's)
        self._scores_on_device = False

    # --- the tree's gradients and root sums: the first call of every tree -----------------------------
    def row_sums(self, order: np.ndarray, grad, hess) -> tuple:
        """``(sum g, sum h)`` over ``order``: :meth:`root_sums` without pairs."""
        return self.root_sums(order, grad, hess, None, 0)[:2]

    def root_sums(self, order: np.ndarray, grad, hess, pc, n_pairs: int) -> tuple:
        """The tree's root ``(G, H, C)``, its first call. Gradients already on the device (the
        objective's GPU kernels, :mod:`.cuda_scores`) are summed there, in blocks of rows in order (one
        block: the CPU's order); host gradients are copied into the pool and summed on the host, as on
        the CPU. The coupling of the pairs ``pc[:n_pairs]`` as :meth:`sum_couplings`; what the device
        summed comes back in one read."""
        n = int(order.shape[0])
        self.memory.counter.begin_tree()
        self.memory.sample()  # the card's use as a tree starts (a real card only)
        self._order = self.pool.start_rows(order)  # partitioned there from now on
        dev_g, dev_c = is_device_array(grad), pc is not None and is_device_array(pc)
        G = H = C = 0.0
        if dev_g:
            self._grad, self._hess = grad, hess
            nb = n_blocks(n, ROW_BLOCK)
            self._ks.block_sums[_launch(nb)](self._order, n, nb, grad, hess, self._sums)
            self._ordered_sums(nb, self._root[0:2])
        else:
            gh = self.pool.buffers("gradients", int(grad.shape[0]), (np.float64, np.float64))
            self._grad, self._hess = (self.memory.copy_in(b, a) for b, a in zip(gh, (grad, hess)))
            G, H = CPUBackend.row_sums(self, order, grad, hess)
        if dev_c:
            nb = n_blocks(n_pairs, PAIR_BLOCK)
            self._kp.coupling_blocks[_launch(nb)](pc, 0, n_pairs, nb, self._sums)
            self._ordered_sums(nb, self._root[2:4])
        elif pc is not None:
            C = super().sum_couplings(pc, 0, n_pairs)
        if dev_g or dev_c:
            got = self.memory.read(self._root[:3])
            G, H = (float(got[0]), float(got[1])) if dev_g else (G, H)
            C = float(got[2]) if dev_c else C
        return float(G), float(H), float(C)

    def pair_buffers(self, pairs: tuple) -> tuple:
        """The tree's two pair buffers on the device (host pairs copied into the pool once per tree),
        after checking that they fit next to the rest; ``ole_fast`` keeps them on the host until
        :meth:`prune_pairs`."""
        need = device_memory_needed(**self._shape, n_pairs=pairs[0].shape[0])
        # device pairs (the objective's couplings, cuda_scores) already hold the first of the two buffers
        held = (need["pairs"] // 2 if is_device_array(pairs[0]) else 0) + self.pool.buffer_bytes
        check_device_memory(need, free=free_device_memory() + self._resident + held)
        if self.criterion.prunes_pairs and self.ctx.queries is not None:  # device pairs come to the host here
            return super().pair_buffers(tuple(self.memory.read(a) if is_device_array(a) else a for a in pairs))
        return self._device_pairs(pairs)

    def prune_pairs(self, bufs: tuple) -> tuple:
        """``ole_fast``'s pruning on the host (:mod:`.pair_pruning`), then the kept pairs to the device."""
        if not self.criterion.prunes_pairs or self.ctx.queries is None:
            return bufs, None
        kept, dropped = super().prune_pairs(bufs)
        return self._device_pairs(kept[0]), dropped

    def _device_pairs(self, pairs: tuple) -> tuple:
        m, dtypes = int(pairs[0].shape[0]), tuple(a.dtype for a in pairs)
        first = pairs
        if not all(is_device_array(a) for a in pairs):  # device couplings stay put
            first = tuple(self.memory.copy_in(b, a) for b, a in zip(self.pool.buffers("pairs", m, dtypes), pairs))
        return first, self.pool.buffers("pair scratch", m, dtypes)

    # --- histograms on the device: they stay there (DeviceHist), in the pool ----------------------------
    def _reduced(self, nb: int) -> DeviceHist:
        out = self.pool.hist()
        self._k.reduce_blocks[_launch(out.size)](self._partial, nb, out)
        hist = DeviceHist(out, self._ks.subtract, self.memory)
        weakref.finalize(hist, self.pool.give_back, out)  # back to the pool when the grower drops it
        return hist

    def row_hist(self, order: np.ndarray, start: int, end: int, grad, hess, root: bool = False) -> Any:
        """``(slots, 3)`` histogram [g, h, count] of the rows ``order[start:end]``, built and kept on
        the device from the gradients :meth:`row_sums` took (``grad``, ``hess`` are those arrays)."""
        if self._grad is None or self._order is None:
            raise RuntimeError("CUDABackend.row_hist before row_sums: the tree's gradients are not on the device")
        k, n = self._k, end - start
        rows_d = self._order[start:end]  # the device order (the host's ``order`` is only read at the end)
        nb = n_blocks(n, ROW_BLOCK)
        k.row_hist_blocks[_launch(self._shape["n_features"] * nb)](self._bins, rows_d, n, nb, self._grad, self._hess,
                                                                   self._offsets, self._partial)
        return self._reduced(nb)

    def pair_hist(self, buf: tuple, start: int, end: int, features: Optional[np.ndarray] = None) -> Any:
        """``(slots, 3)`` pair histogram [hi, nanp, R] of the pairs ``buf[start:end]``, built and kept
        on the device (all features, or only ``features``: the other slots are 0)."""
        k, n = self._k, end - start
        feats = self._all_features if features is None else np.unique(np.asarray(features, dtype=np.int64))
        if feats.size and (feats[0] < 0 or feats[-1] >= self._all_features.size):
            raise ValueError(f"features must be in [0, {self._all_features.size}), got {feats[0]}..{feats[-1]}")
        nb = n_blocks(n, PAIR_BLOCK)
        if n <= 0 or feats.size < self._all_features.size:  # slots of the other features are read: zero them
            k.zero[_launch(nb * self.data.n_slots * PH_CHANNELS)](self._partial.reshape(self._partial.size))
        if n > 0 and feats.size:
            args = (self._all_feature_args if features is None else
                    self.pool.feature_args(feats, self.data.offsets, self._n_bins))
            pi, pj, pc = (a[start:end] for a in buf)  # device buffers (pair_buffers)
            k.pair_hist_blocks[_launch(feats.size * nb)](self._bins, pi, pj, pc, n, nb, *args, self._partial)
        return self._reduced(nb)

    # --- split search on the device: only the chosen splits come back -------------------------------------
    def find_split(self, hist: Any, phist: Any, mask: np.ndarray, sums: ChildSums) -> SplitInfo:
        """The best split of a node from its device histograms (see :meth:`find_splits`)."""
        return self.find_splits([(hist, phist, mask, sums)])[0]

    def find_splits(self, searches: list) -> list:
        """The best splits of up to two nodes (a split's children), each ``(hist, phist, mask, sums)``:
        :mod:`._cuda_split_kernels` (the CPU's per-feature search, one thread per feature, then the
        first strictly best feature) per node, then every chosen split in one read."""
        if not searches:
            return []
        if len(searches) > self._res.shape[0]:
            return self.find_splits(searches[:2]) + self.find_splits(searches[2:])
        ks, n_feat = self._ks, self._shape["n_features"]
        for k, (hist, phist, mask, sums) in enumerate(searches):
            G, H, N, C = (float(v) for v in sums)
            parent = _score(G, node_hessian(self.score, G, H, N, C), self.lam)
            use_pairs = phist is not None
            ks.feature_bests[_launch(n_feat)](hist.array, phist.array if use_pairs else self._no_ph, use_pairs,
                                              self.score, self._n_bins_d, self._offsets, self.pool.feature_mask(mask),
                                              G, H, N, C, self.lam, self.min_data, self.min_hess, parent, self._per,
                                              self._gains)
            ks.pick_best[1, 1](self._per, self._gains, self._res[k])
            if self._has_nan:  # its NaN count comes back with the split (the grower needs it to place NaN)
                self._kn.split_nan_count[1, 1](hist.array, self._offsets, self._n_bins_d, self._res[k])
        res = self.memory.read(self._res[:len(searches)])
        out = []
        for (hist, _, _, _), r in zip(searches, res):
            split = SplitInfo.from_array(r[:SPLIT_SIZE])
            if self._has_nan and split.feature >= 0:
                hist.known(self.data.offsets[split.feature] + int(self._n_bins[split.feature]), HIST_COUNT,
                           float(r[SPLIT_SIZE]))
            out.append(split)
        return out

    keeps_subset_pair_hists = True  # each pair histogram has its own pool buffer

    def wse_gains(self, hist: Any, mask: np.ndarray, sums: ChildSums, out: np.ndarray) -> np.ndarray:
        """``out[f]``: feature ``f``'s best WSE gain at the node (0 outside ``mask``), searched on the device."""
        out[:] = self.wse_gains_of([(hist, sums)], mask)[0][:out.shape[0]]
        return out

    def wse_gains_of(self, nodes: list, mask: np.ndarray) -> list:
        """The WSE gains of up to two nodes (``(hist, sums)`` each), searched on the device, in one read."""
        if len(nodes) > self._wse.shape[0]:
            return self.wse_gains_of(nodes[:2], mask) + self.wse_gains_of(nodes[2:], mask)
        for k, (hist, sums) in enumerate(nodes):
            G, H, N = float(sums.G), float(sums.H), float(sums.N)
            parent = _score(G, node_hessian(WSE, G, H, N, 0.0), self.lam)
            self._ks.feature_wse_gains[_launch(self._shape["n_features"])](
                hist.array, self._no_ph, self._n_bins_d, self._offsets, self.pool.feature_mask(mask), G, H, N,
                self.lam, self.min_data, self.min_hess, parent, self._per, self._wse[k])
        return list(self.memory.read(self._wse[:len(nodes)])) if nodes else []

    # --- where the scores live, and what the fit held and did -------------------------------------------------
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
        self._scores_on_device = True
        index = self.data.index_dtype() if need_pairs else None  # the host path's pair index dtype
        return DeviceScores(self.memory, self._bins, self._n_bins_d, obj, prep, scores, index)

    def device_memory_peak(self) -> Optional[int]:
        """Bytes the fit held on the device at its peak (:class:`DeviceMemory`)."""
        self.memory.sample()
        return self.memory.peak

    def device_stats(self) -> Optional[DeviceStats]:
        """What the fit asked of the card, per tree (:mod:`.cuda_stats`)."""
        return self.memory.counter.stats()

    # --- partitions and coupling sums on the device ---------------------------------------------------------
    def _ordered_sums(self, nb: int, out: Any = None) -> tuple:
        """The blocks' sums in order into ``out``; without ``out``, into a buffer read back at once."""
        self._ks.ordered_sums[1, 1](self._sums, nb, self._sum_out if out is None else out)
        if out is not None:
            return ()
        a, b = self.memory.read(self._sum_out)
        return float(a), float(b)

    @staticmethod
    def _partition_blocks(n: int) -> int:
        return int(max(1, min(MAX_PARTITION_BLOCKS, (n + PARTITION_BLOCK - 1) // PARTITION_BLOCK)))

    def partition_rows(self, order: np.ndarray, start: int, end: int, split: SplitInfo, nan_left: bool) -> int:
        """Reorder the device order's ``[start:end]`` as [left | right] by ``split`` (stable: the CPU's
        order), mark each row's side there; the left count, which is the split's (its histogram
        counts are exact), so nothing is read back. ``order`` (host) is brought up to date by
        :meth:`row_order` when the host needs it."""
        kp, n, f = self._kp, end - start, split.feature
        self.memory.counter.split()
        nb = self._partition_blocks(n)
        kp.mark_rows_blocks[_launch(nb)](self._bins[f], self._order, start, n, nb, split.bin, int(self._n_bins[f]),
                                         bool(nan_left), self._go_left, self._counts)
        kp.scan_counts[1, 1](self._counts, nb, self._before)
        kp.place_rows_blocks[_launch(nb)](self._order, start, n, nb, self._go_left, self._before, self._tmp_rows)
        kp.copy_rows[_launch(n)](self._tmp_rows, self._order, start, n)
        return int(split.left.N)

    def row_order(self, order: np.ndarray) -> Optional[np.ndarray]:
        """The finished tree's row order, copied from the device into ``order`` when the host needs it
        (its scores, ``ole_fast``'s dropped pairs, the joint leaf solve); else None: it stays on the card."""
        self.memory.counter.end_tree()
        host_pruned = self.criterion.prunes_pairs and self.ctx.queries is not None
        if self._scores_on_device and not host_pruned and not self._joint:
            return None
        order[:] = self.memory.read(self._order)
        return order

    def split_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> tuple:
        """Copy the device pairs ``src[start:end]`` to ``dst``, stably ordered [both left | both right |
        split] by the last :meth:`partition_rows`; ``(n_left, n_right, C_left, C_right)`` in one read
        (the couplings summed over ``src`` by blocks of pairs in order, then the blocks in order)."""
        n = end - start
        nb = self._partition_blocks(n)
        kp = self._kp
        kp.count_sides_blocks[_launch(nb)](src[0], src[1], start, n, nb, self._go_left, self._counts)
        kp.scan_counts[1, 1](self._counts, nb, self._before)
        kp.place_sides_blocks[_launch(nb)](*src, start, n, nb, self._go_left, self._before, *dst)
        nbs = n_blocks(n, PAIR_BLOCK)
        kp.split_coupling_blocks[_launch(nbs)](*src, start, n, nbs, self._go_left, self._sums)
        self._ordered_sums(nbs, self._before[nb + 1].view(np.float64))  # beside the totals
        packed = self.memory.read(self._before[nb:nb + 2])
        (tl, tr), (cl, cr) = packed[0], packed[1].view(np.float64)
        return int(tl), int(tr), float(cl), float(cr)

    def partition_pairs(self, src: tuple, start: int, end: int, dst: tuple) -> tuple:
        """:meth:`split_pairs` without the couplings: ``(n_left, n_right)``."""
        return self.split_pairs(src, start, end, dst)[:2]

    def sum_couplings(self, pc, start: int, end: int) -> float:
        """The coupling of the pairs ``start:end``: blocks of pairs in order, then the blocks in order."""
        if not is_device_array(pc):
            return super().sum_couplings(pc, start, end)
        nb = n_blocks(end - start, PAIR_BLOCK)
        self._kp.coupling_blocks[_launch(nb)](pc, start, end - start, nb, self._sums)
        return self._ordered_sums(nb)[0]

    def split_coupling_sums(self, buf: tuple, start: int, end: int) -> tuple:
        """The children's couplings ``(C_left, C_right)`` of the device pairs ``buf[start:end]``."""
        nb = n_blocks(end - start, PAIR_BLOCK)
        self._kp.split_coupling_blocks[_launch(nb)](*buf, start, end - start, nb, self._go_left, self._sums)
        return self._ordered_sums(nb)
