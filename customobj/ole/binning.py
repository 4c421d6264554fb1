"""Feature binning, computed once per fit and reused every round (LightGBM's approach).

Each feature gets at most ``max_bin`` value bins with real upper bounds ``ub[0] < ub[1] < ...``,
``ub[-1] = +inf``; a value ``x`` falls in the first bin with ``x <= ub[b]``, so a split "bin <= t"
is exactly the LightGBM rule ``x <= threshold`` with ``threshold = ub[t]``. NaN gets one extra
slot per feature (index ``n_bins[f]``), whose direction a split chooses (LightGBM's
``default_left``). With at most ``max_bin`` distinct values the bins are exact (one value each,
bounds at midpoints); otherwise the bounds are greedy quantiles over the distinct values, so
every bin holds about ``n / max_bin`` rows and equal values never straddle a bound.
"""
from __future__ import annotations

import ctypes
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, prange

from .predictor import ZERO_THRESHOLD

__all__ = ["BinMapper"]


def _midpoint(a, b):
    """A bound with ``a <= m < b`` (the midpoint unless rounding breaks that)."""
    m = a / 2.0 + b / 2.0
    if not (a <= m < b):
        m = a
    return m


def _off_zero(m):
    """Move a bound out of ``[-Z, Z)`` (``Z = ZERO_THRESHOLD``) so values read as 0 bin with 0."""
    if 0 <= m < ZERO_THRESHOLD:
        return ZERO_THRESHOLD
    if -ZERO_THRESHOLD <= m < 0:
        return float(np.nextafter(-ZERO_THRESHOLD, -np.inf))
    return m


def _feature_bounds(col, max_bin):
    """Upper bounds of the value bins of one column (NaN removed), and its (min, max) (NaN if empty)."""
    vals = col[~np.isnan(col)]  # a copy: sorted in place (np.unique would copy it once more)
    vals[np.abs(vals) <= ZERO_THRESHOLD] = 0  # |x| <= Z is 0 to LightGBM and to predict(): train so too
    if vals.size == 0:
        return np.array([np.inf]), (np.nan, np.nan)
    vals.sort()
    new = np.empty(vals.size, dtype=np.bool_)
    new[0] = True
    np.not_equal(vals[1:], vals[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    uniq = vals[starts]
    if uniq.size <= max_bin:
        cuts = np.arange(uniq.size - 1)
    else:
        # Greedy quantiles: close a bin once it reaches the next multiple of n / max_bin rows.
        cum = np.append(starts[1:], vals.size)  # rows with a value <= uniq[k]
        targets = cum[-1] * np.arange(1, max_bin) / max_bin
        cuts = np.unique(np.searchsorted(cum, targets, side="left"))
        cuts = cuts[cuts < uniq.size - 1]
    bounds = [_off_zero(_midpoint(uniq[k], uniq[k + 1])) for k in cuts]
    bounds.append(np.inf)
    return np.asarray(bounds, dtype=np.float64), (float(uniq[0]), float(uniq[-1]))


def _trim_thread_arenas():
    """Return the worker threads' freed column copies to the OS (glibc keeps them in per-thread
    arenas: +0.3 GB of resident memory for the rest of a WEB30K-sized fit); no-op elsewhere."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


# Bin lookup: a two-level count of the bounds below x, over every _LEVEL-th bound and then within
# one block of _LEVEL bounds. Both counts are short branch-free loops that vectorise; a binary
# search (np.searchsorted, or a hand-written branch-free one, which LLVM turns back into branches)
# mispredicts about every step on quantile bounds and ran 2.2x slower.
_LEVEL = 16
# BinMapper.fit copies a few columns at a time per thread: up to 4, within _FIT_BLOCK_BYTES
_FIT_COLUMNS = 4
_FIT_BLOCK_BYTES = 64 * 2**20


def _coarse_bounds(bounds_list):
    """Every ``_LEVEL``-th bound (the last of each block, the last bound for a short block)."""
    parts, ptr = [], [0]
    for b in bounds_list:
        last = np.minimum(np.arange(_LEVEL - 1, b.size + _LEVEL - 1, _LEVEL), b.size - 1)
        parts.append(b[last])
        ptr.append(ptr[-1] + last.size)
    flat = np.concatenate(parts) if parts else np.zeros(0)
    return flat, np.asarray(ptr, dtype=np.int64)


@njit(cache=True, inline="always")
def _bin_of(ub, nb, cu, x):
    """The first ``b`` with ``x <= ub[b]`` (``ub[nb - 1] = inf``); ``nb`` for NaN."""
    if np.isnan(x):
        return nb
    k = 0
    for t in range(cu.shape[0]):  # blocks whose bounds are all below x
        k += 1 if cu[t] < x else 0
    base = _LEVEL * k
    m = 0
    for b in range(base, min(base + _LEVEL, nb)):
        m += 1 if ub[b] < x else 0
    return base + m


@njit(cache=True)
def _bin_matrix(X, bounds, bound_ptr, coarse, coarse_ptr, out):
    n, f = X.shape
    for j in range(f):
        lo = bound_ptr[j]
        nb = bound_ptr[j + 1] - lo
        ub = bounds[lo:lo + nb]
        cu = coarse[coarse_ptr[j]:coarse_ptr[j + 1]]
        for i in range(n):
            out[i, j] = _bin_of(ub, nb, cu, np.float64(X[i, j]))


_BIN_BLOCK = 512


@njit(cache=True, parallel=True)
def _bin_matrix_fm(X, bounds, bound_ptr, coarse, coarse_ptr, out):
    # row blocks in parallel: each block reads its rows of X once (row-major input) and writes
    # short runs of every feature's column; the mapping is elementwise, so any split is exact
    n, f = X.shape
    n_blocks = (n + _BIN_BLOCK - 1) // _BIN_BLOCK
    for blk in prange(n_blocks):
        i0 = blk * _BIN_BLOCK
        i1 = min(n, i0 + _BIN_BLOCK)
        for j in range(f):
            lo = bound_ptr[j]
            nb = bound_ptr[j + 1] - lo
            ub = bounds[lo:lo + nb]
            cu = coarse[coarse_ptr[j]:coarse_ptr[j + 1]]
            for i in range(i0, i1):
                out[j, i] = _bin_of(ub, nb, cu, np.float64(X[i, j]))


class BinMapper:
    """Per-feature bin bounds. ``bins(X)`` maps a float matrix to a row-major uint8/uint16 matrix."""

    def __init__(self, bounds_list, has_nan, value_range=None):
        self.bounds = [np.asarray(b, dtype=np.float64) for b in bounds_list]
        #: per feature (min, max) of the non-NaN training values, NaN when there are none (``fit``)
        self.value_range = value_range
        self.has_nan = np.asarray(has_nan, dtype=np.bool_)
        self.n_bins = np.array([b.size for b in self.bounds], dtype=np.int64)
        # Histogram slots: n_bins[f] value bins + 1 NaN slot per feature.
        self.offsets = np.zeros(len(self.bounds) + 1, dtype=np.int64)
        np.cumsum(self.n_bins + 1, out=self.offsets[1:])
        self._flat = np.concatenate(self.bounds) if self.bounds else np.zeros(0)
        self._ptr = np.zeros(len(self.bounds) + 1, dtype=np.int64)
        np.cumsum(self.n_bins, out=self._ptr[1:])
        self._coarse, self._coarse_ptr = _coarse_bounds(self.bounds)

    @property
    def n_features(self):
        return len(self.bounds)

    @property
    def n_slots(self):
        return int(self.offsets[-1])

    @classmethod
    def fit(cls, X, max_bin, n_jobs=1):
        """Bounds of every column of ``X``; ``n_jobs`` threads work on separate columns (NumPy's
        sorts release the GIL), the result does not depend on it."""

        width = int(max(1, min(_FIT_COLUMNS, _FIT_BLOCK_BYTES // max(1, 8 * X.shape[0]))))

        def columns(j0):
            # a few columns at a time, float64 (float32 input converts exactly) and contiguous: one
            # pass over the rows' cache lines per block, never a float64 copy of all of X
            cols = np.array(X[:, j0:j0 + width], dtype=np.float64, order="F")
            return [(*_feature_bounds(c, max_bin), bool(np.isnan(c).any())) for c in cols.T]

        starts = range(0, X.shape[1], width)
        if n_jobs > 1 and len(starts) > 1:
            with ThreadPoolExecutor(min(n_jobs, len(starts))) as pool:
                parts = list(pool.map(columns, starts))
            _trim_thread_arenas()
        else:
            parts = [columns(j0) for j0 in starts]
        found = [r for part in parts for r in part]
        return cls([b for b, _, _ in found], np.array([n for _, _, n in found], dtype=np.bool_),
                   [r for _, r, _ in found])

    def _dtype(self):
        return np.uint8 if int(self.n_bins.max(initial=0)) <= 255 else np.uint16

    def bins_feature_major(self, X):
        """Bins as a (features, rows) matrix: each feature's column contiguous (histograms, partitions)."""
        out = np.empty((X.shape[1], X.shape[0]), dtype=self._dtype())
        if X.size:
            _bin_matrix_fm(X, self._flat, self._ptr, self._coarse, self._coarse_ptr, out)
        return out

    def bins(self, X):
        out = np.empty(X.shape, dtype=self._dtype())
        _bin_matrix(X, self._flat, self._ptr, self._coarse, self._coarse_ptr, out)
        return out

    def threshold(self, feature, bin_index):
        """The real threshold of split "bin <= bin_index" (x <= threshold goes left)."""
        return float(self.bounds[feature][bin_index])
