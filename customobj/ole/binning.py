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
from numba import njit

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
            x = X[i, j]
            if np.isnan(x):
                out[i, j] = nb
            else:
                out[i, j] = np.searchsorted(ub, x, side="left")


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
        bounds = [_feature_bounds(X[:, j], max_bin) for j in range(X.shape[1])]
        has_nan = np.isnan(X).any(axis=0) if X.size else np.zeros(X.shape[1], dtype=bool)
        return cls(bounds, has_nan)

    def bins(self, X):
        dtype = np.uint8 if int(self.n_bins.max(initial=0)) <= 255 else np.uint16
        out = np.empty(X.shape, dtype=dtype)
        _bin_matrix(X, self._flat, self._ptr, out)
        return out

    def threshold(self, feature, bin_index):
        """The real threshold of split "bin <= bin_index" (x <= threshold goes left)."""
        return float(self.bounds[feature][bin_index])
