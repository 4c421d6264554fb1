"""Per-fit state the grower reuses for every tree: the binned data, scratch arrays, the pair buffers.

Three classes, one job each, bundled by :class:`GrowContext` (what the fit's
:class:`~customobj.ole.backend.CPUBackend` reads and writes):

- :class:`BinnedData`: the bin matrix in the two layouts the kernels read, and the binning;
- :class:`Scratch`: arrays each node overwrites (partition flags, row buffer, gathered gradients,
  the pair-histogram accumulators) and the root's per-bin counts, computed once;
- :class:`PairBuffers`: the memory policy of the round's pairs (two buffers they ping-pong between
  while a tree splits them, sized with headroom, released between rounds when large).
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from .common import GH_CHANNELS
from .pair_partition import compact_pairs
from .pairhist import PairScratch

#: A round's pairs ``(pi, pj, pc)``: both row indices and the coupling.
Pairs = Tuple[np.ndarray, np.ndarray, np.ndarray]

__all__ = ["BinnedData", "Scratch", "PairBuffers", "GrowContext", "ROW_MAJOR_COPY_BYTES"]

#: Largest bin matrix copied to row-major for the pair histograms, and largest pair buffer kept
#: between rounds (bytes).
ROW_MAJOR_COPY_BYTES = 256 * 2**20


def _capacity(m):
    """Pair-buffer size for ``m`` pairs, with headroom: the pair count grows from round to round
    (LambdaRank's first round, at tied scores, has ~25% fewer pairs than the next ones), and a
    buffer that is outgrown is replaced by fresh memory whose page faults cost that round's
    coupling output 0.09 s instead of 0.024 (MSLR-shaped data, 2,000 queries, 4.6 million pairs;
    with 25% headroom that happened in round 5). The headroom costs no memory until it is
    written: ``np.empty`` pages are mapped on first touch, and only the slots that receive pairs
    are touched."""
    return m + m // 2 + 1024


class BinnedData:
    """The training set's bins, ``(features, rows)`` and, on first use, ``(rows, features)``.

    Row histograms and partitions read one feature's column (``feature_major``). The pair
    histograms read whole rows (pairhist copies each into a tile): from a row-major copy when that
    is at most ``ROW_MAJOR_COPY_BYTES`` (tile copies ~35% cheaper overall on MSLR-shaped data), else
    through the transposed view, so large data sets keep one bin matrix.
    """

    def __init__(self, bins_fm: np.ndarray, mapper) -> None:
        self.feature_major = bins_fm
        self.mapper = mapper
        self.n_bins = mapper.n_bins
        self.offsets = mapper.offsets
        self.n_slots = mapper.n_slots
        self.n_rows = bins_fm.shape[1]
        self._row_major: Optional[np.ndarray] = None

    @property
    def row_major(self) -> np.ndarray:
        if self._row_major is None:
            fm = self.feature_major
            self._row_major = np.ascontiguousarray(fm.T) if fm.nbytes <= ROW_MAJOR_COPY_BYTES else fm.T
        return self._row_major

    def index_dtype(self) -> type:
        """Row indices of the pairs: int32 halves the index traffic of pair partitions and
        histograms (int64 beyond 2**31 rows)."""
        return np.int32 if self.n_rows < 2**31 - 1 else np.int64


class Scratch:
    """Arrays the kernels overwrite at every node, allocated once per fit."""

    def __init__(self, n_rows: int) -> None:
        self.go_left = np.zeros(n_rows, dtype=np.bool_)
        self.tmp_rows = np.empty(n_rows, dtype=np.int64)
        self.gh = np.empty((max(n_rows, 1), GH_CHANNELS), dtype=np.float64)
        # A root over every row (no bagging) has the same per-bin counts every round: computed once.
        self.root_counts: Optional[np.ndarray] = None
        self.pair_hist: Optional[PairScratch] = None  # PairScratch, made on the first pair histogram

    def pair_hist_scratch(self, data: BinnedData, acc_dtype: type) -> PairScratch:
        if self.pair_hist is None or self.pair_hist.acc.dtype != acc_dtype:
            bins = data.row_major
            self.pair_hist = PairScratch(bins.shape[0], bins.shape[1], bool(data.mapper.has_nan.any()),
                                         dtype=acc_dtype)
        return self.pair_hist


class PairBuffers:
    """The round's pairs ``(pi, pj, pc)``: the input buffer and the second one they ping-pong with."""

    def __init__(self, index_dtype: type) -> None:
        self.index_dtype = index_dtype
        self.input: Optional[Pairs] = None  # the round's pairs (reordered by the tree), reused across rounds
        self.second: Optional[Pairs] = None  # the buffer the pairs are partitioned into, reused across rounds

    def release(self) -> None:
        """Free large pair buffers between rounds (they would add to the peak while the objective
        builds the next round's couplings); small ones are kept: refilling fresh memory costs page
        faults, ~10% of an OLE tree on MSLR-shaped data."""
        for name in ("input", "second"):
            buf = getattr(self, name)
            if buf is not None and sum(a.nbytes for a in buf) > ROW_MAJOR_COPY_BYTES:
                setattr(self, name, None)

    def _input_buffer(self, m: int) -> Pairs:
        index = self.index_dtype
        buf = self.input
        if buf is None or buf[0].shape[0] < m or buf[0].dtype != index:
            c = _capacity(m)
            buf = self.input = (np.empty(c, index), np.empty(c, index), np.empty(c, np.float64))
        return buf

    def pair_buffer(self, m: int) -> Pairs:
        """``m`` pairs' worth of the reusable input buffer: an objective that counts its pairs first
        (``grad_hess_couplings_prepared(pair_buffer=...)``) writes them straight into it."""
        pi, pj, pc = self._input_buffer(m)
        return pi[:m], pj[:m], pc[:m]

    def load(self, couplings: Pairs, in_bag: np.ndarray | None) -> Pairs:
        """The objective's couplings as the round's pairs: in-bag, coupling > 0, in the input buffer.

        Pairs the objective wrote into ``pair_buffer`` are used where they are (zero couplings
        there only cost histogram work); only bagging compacts them, in place.
        """
        pi, pj, pc = (np.asarray(a) for a in couplings)
        buf = self.input
        in_place = buf is not None and pc.shape[0] > 0 and np.may_share_memory(pc, buf[2])
        if in_place and in_bag is None:
            return pi, pj, pc
        pc = np.asarray(pc, dtype=np.float64)
        m = pc.shape[0]
        if buf is None or not in_place:  # (in place implies a buffer)
            buf = self._input_buffer(m)
        use_bag = in_bag is not None
        bag = in_bag if use_bag else np.zeros(0, dtype=np.bool_)
        k = compact_pairs(pi, pj, pc, bag, use_bag, *buf)
        return buf[0][:k], buf[1][:k], buf[2][:k]

    def second_buffer(self, m: int, index_dtype: type) -> Pairs:
        """The buffer a tree partitions ``m`` pairs of dtype ``index_dtype`` into."""
        if self.second is None or self.second[0].shape[0] < m or self.second[0].dtype != index_dtype:
            c = _capacity(m)
            self.second = (np.empty(c, index_dtype), np.empty(c, index_dtype), np.empty(c, np.float64))
        return self.second


class GrowContext:
    """What every tree of one fit shares: ``data`` (:class:`BinnedData`), ``scratch``
    (:class:`Scratch`) and ``pairs`` (:class:`PairBuffers`); the kernels that read them are
    called through :class:`~customobj.ole.backend.CPUBackend`."""

    def __init__(self, bins_fm: np.ndarray, mapper) -> None:
        self.data = BinnedData(bins_fm, mapper)
        self.scratch = Scratch(self.data.n_rows)
        self.pairs = PairBuffers(self.data.index_dtype())
        #: ``(query of every row, number of queries)`` when ``criterion="ole_fast"`` prunes pairs per query
        self.queries: tuple | None = None
        self._gradients: tuple | None = None

    def gradient_outputs(self, shape: tuple) -> tuple:
        """The round's gradient and hessian arrays of ``shape`` (float64), the same two every round:
        fresh arrays page-fault in during the objective's parallel pass, a cost that grew with the
        threads in measurements on a 2-core VM (5-9 ms per 484k rows at one thread, several times
        that at two); reused ones are only zeroed, by all threads (``Objective._zeroed_outputs``)."""
        g = self._gradients
        if g is None or g[0].shape != tuple(shape):
            g = self._gradients = (np.zeros(shape, dtype=np.float64), np.zeros(shape, dtype=np.float64))
        return g

    def pair_buffers_for_tree(self, m: int, index_dtype: type, acc_dtype: type) -> tuple:
        """Prepare the pair histograms (accumulators of ``acc_dtype``) of a tree with ``m`` pairs;
        returns the second pair buffer."""
        self.scratch.pair_hist_scratch(self.data, acc_dtype)
        return self.pairs.second_buffer(m, index_dtype)
