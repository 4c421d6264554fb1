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

import numpy as np
from numba import njit, prange

__all__ = ["BinMapper"]


def _midpoint(a, b):
    """A bound with ``a <= m < b`` (the midpoint unless rounding breaks that)."""
    m = a / 2.0 + b / 2.0
    if not (a <= m < b):
        m = a
    return m


def _feature_bounds(col, max_bin):
    """Upper bounds of the value bins of one column (NaN removed)."""
    vals = col[~np.isnan(col)]
    if vals.size == 0:
        return np.array([np.inf])
    uniq, counts = np.unique(vals, return_counts=True)
    if uniq.size <= max_bin:
        cuts = np.arange(uniq.size - 1)
    else:
        # Greedy quantiles: close a bin once it reaches the next multiple of n / max_bin rows.
        cum = np.cumsum(counts)
        targets = cum[-1] * np.arange(1, max_bin) / max_bin
        cuts = np.unique(np.searchsorted(cum, targets, side="left"))
        cuts = cuts[cuts < uniq.size - 1]
    bounds = [_midpoint(uniq[k], uniq[k + 1]) for k in cuts]
    bounds.append(np.inf)
    return np.asarray(bounds, dtype=np.float64)


@njit(cache=True)
def _bin_matrix(X, bounds, bound_ptr, out):
    n, f = X.shape
    for j in range(f):
        lo = bound_ptr[j]
        nb = bound_ptr[j + 1] - lo
        ub = bounds[lo:lo + nb]
        for i in range(n):
            x = np.float64(X[i, j])
            if np.isnan(x):
                out[i, j] = nb
            else:
                out[i, j] = np.searchsorted(ub, x, side="left")


_BIN_BLOCK = 512


@njit(cache=True, parallel=True)
def _bin_matrix_fm(X, bounds, bound_ptr, out):
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
            for i in range(i0, i1):
                x = np.float64(X[i, j])
                if np.isnan(x):
                    out[j, i] = nb
                else:
                    out[j, i] = np.searchsorted(ub, x, side="left")


class BinMapper:
    """Per-feature bin bounds. ``bins(X)`` maps a float matrix to a row-major uint8/uint16 matrix."""

    def __init__(self, bounds_list, has_nan):
        self.bounds = [np.asarray(b, dtype=np.float64) for b in bounds_list]
        self.has_nan = np.asarray(has_nan, dtype=np.bool_)
        self.n_bins = np.array([b.size for b in self.bounds], dtype=np.int64)
        # Histogram slots: n_bins[f] value bins + 1 NaN slot per feature.
        self.offsets = np.zeros(len(self.bounds) + 1, dtype=np.int64)
        np.cumsum(self.n_bins + 1, out=self.offsets[1:])
        self._flat = np.concatenate(self.bounds) if self.bounds else np.zeros(0)
        self._ptr = np.zeros(len(self.bounds) + 1, dtype=np.int64)
        np.cumsum(self.n_bins, out=self._ptr[1:])

    @property
    def n_features(self):
        return len(self.bounds)

    @property
    def n_slots(self):
        return int(self.offsets[-1])

    @classmethod
    def fit(cls, X, max_bin):
        bounds, has_nan = [], []
        for j in range(X.shape[1]):
            # float64 per column (float32 input converts exactly), never a float64 copy of all of X
            col = np.asarray(X[:, j], dtype=np.float64)
            bounds.append(_feature_bounds(col, max_bin))
            has_nan.append(bool(np.isnan(col).any()))
        return cls(bounds, np.array(has_nan, dtype=np.bool_))

    def _dtype(self):
        return np.uint8 if int(self.n_bins.max(initial=0)) <= 255 else np.uint16

    def bins_feature_major(self, X):
        """Bins as a (features, rows) matrix: each feature's column contiguous (histograms, partitions)."""
        out = np.empty((X.shape[1], X.shape[0]), dtype=self._dtype())
        if X.size:
            _bin_matrix_fm(X, self._flat, self._ptr, out)
        return out

    def bins(self, X):
        out = np.empty(X.shape, dtype=self._dtype())
        _bin_matrix(X, self._flat, self._ptr, out)
        return out

    def threshold(self, feature, bin_index):
        """The real threshold of split "bin <= bin_index" (x <= threshold goes left)."""
        return float(self.bounds[feature][bin_index])
