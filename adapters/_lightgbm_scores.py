"""Each row's leaf in LightGBM's newest tree, read off the change of LightGBM's own cached scores.

After a round, LightGBM has added the new tree to its cached scores of the training set and of
every validation set: ``score[r] += leaf_output[leaf(r)]``, one float64 addition per row and tree
(``SerialTreeLearner::AddPredictionToScore`` for the training rows of the bag, ``Tree::
AddPredictionToScore`` on the binned data for the others and for validation sets). So the change
``d_r = after_r - before_r`` of a row's cached score is its leaf's value up to two roundings, and
when exactly one leaf value lies that close to ``d_r`` it names the row's leaf: LightGBM's own
partition, for one copy of ``n`` doubles and a binary search per row, instead of a traversal of
the tree over the raw features (the 62 MB feature matrix of an MSLR-sized set, read at random).

The reading is checked, not trusted: any row whose change is not within the rounding bound of
exactly one leaf value (two leaves with equal values, DART's rescaled trees, a random forest's
averaged scores, anything but a plain addition) makes :func:`leaves_from_score_change` report
failure, and the caller falls back to the traversal. Scores come through LightGBM's C API
(``LGBM_BoosterGetNumPredict`` / ``LGBM_BoosterGetPredict``, which copy the raw cached scores of
a custom objective's booster); where that API is unavailable the reader returns None.
"""
from __future__ import annotations

import ctypes

import numpy as np
from numba import njit

__all__ = ["LightGBMScores", "leaves_from_score_change"]

#: Bound on ``|d - v| / (|after| + |before|)`` for ``after = fl(before + v)``, ``d = fl(after - before)``:
#: two roundings of at most ``2**-53`` relative each give ``2**-53 (2 |after| + |before|)``; this is 4x
#: that, so a true leaf is never missed, and still ~1e-15 relative: distinct leaf values are far apart.
_ROUNDING_BOUND = 4.0 * float(np.finfo(np.float64).eps)


#: Up to this many leaves the position of ``d`` among the values is a branch-free count (vectorised,
#: ~2.5x faster than a binary search at 31 leaves); above it, a binary search.
_COUNT_UP_TO = 64


@njit(cache=True)
def leaves_from_score_change(after, before, sorted_values, sorted_leaf, out):
    """``out[r]`` = the leaf whose value equals ``after[r] - before[r]`` up to rounding; True when
    every row has exactly one such leaf, False (``out`` then partly written) otherwise.

    ``sorted_values`` are the tree's leaf values in ascending order, ``sorted_leaf`` their leaf
    indices. A NaN change matches no leaf: failure.
    """
    n_leaves = sorted_values.shape[0]
    for r in range(after.shape[0]):
        d = after[r] - before[r]
        tol = _ROUNDING_BOUND * (abs(after[r]) + abs(before[r]))
        lo = 0  # the number of values below d
        if n_leaves <= _COUNT_UP_TO:
            for t in range(n_leaves):
                lo += sorted_values[t] < d
        else:
            hi = n_leaves
            while lo < hi:
                mid = (lo + hi) // 2
                if sorted_values[mid] < d:
                    lo = mid + 1
                else:
                    hi = mid
        # Values within tol of d are contiguous around lo: if two exist, two of lo-2..lo+1 are in.
        found, hits = -1, 0
        for t in range(max(lo - 2, 0), min(lo + 2, n_leaves)):
            if abs(sorted_values[t] - d) <= tol:
                found = t
                hits += 1
        if hits != 1:
            return False
        out[r] = sorted_leaf[found]
    return True


def _c_api(booster):
    """``(lib, handle)`` for LightGBM's C API calls on ``booster``, or None."""
    try:
        from lightgbm.basic import _LIB

        handle = booster._handle
    except (ImportError, AttributeError):
        return None
    if not (hasattr(_LIB, "LGBM_BoosterGetNumPredict") and hasattr(_LIB, "LGBM_BoosterGetPredict")):
        return None
    return _LIB, handle


class LightGBMScores:
    """LightGBM's cached raw scores of one data set (``data_idx`` 0: training, ``i``: the i-th
    validation set), kept from one round to the next so each round's change can name the leaves.

    Two float64 buffers are swapped every round (no allocation once sized). LightGBM's layout:
    class-major, ``k`` blocks of ``n`` rows.
    """

    __slots__ = ("data_idx", "_before", "_after")

    def __init__(self, data_idx: int) -> None:
        self.data_idx = data_idx
        self._before: np.ndarray | None = None
        self._after: np.ndarray | None = None

    def set_before(self, scores: np.ndarray) -> None:
        """What LightGBM's cache held before this round (the initial scores, in the first round)."""
        self._before = np.ravel(np.asarray(scores, dtype=np.float64), order="F").copy()

    def _read(self, booster) -> "np.ndarray | None":
        api = _c_api(booster)
        if api is None:
            return None
        lib, handle = api
        n = ctypes.c_int64(0)
        if lib.LGBM_BoosterGetNumPredict(handle, ctypes.c_int(self.data_idx), ctypes.byref(n)) != 0:
            return None
        buf = self._after
        if buf is None or buf.shape[0] != n.value:
            buf = np.empty(n.value, dtype=np.float64)  # sized by LightGBM itself: the copy below fits
        got = ctypes.c_int64(0)
        ptr = buf.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        if lib.LGBM_BoosterGetPredict(handle, ctypes.c_int(self.data_idx), ctypes.byref(got), ptr) != 0:
            return None
        return buf if got.value == n.value else None

    def leaves(self, booster, leaf_values: "list[np.ndarray]") -> "np.ndarray | None":
        """``(rows, k)`` int64 leaf of every row in this round's ``k`` trees (``leaf_values``: each
        tree's leaf values as LightGBM stores them), or None when the change does not name them
        (then the caller traverses the trees). Call it once per round, in every round: it also
        keeps this round's scores as the next round's ``before``."""
        after = self._read(booster)
        before, self._before = self._before, after
        self._after = before  # the old buffer is next round's read target
        k = len(leaf_values)
        if after is None or before is None or after.shape != before.shape or after.shape[0] % k:
            return None
        n = after.shape[0] // k
        out = np.empty((k, n), dtype=np.int64)
        for c, values in enumerate(leaf_values):
            order = np.argsort(values, kind="stable")
            block = slice(c * n, (c + 1) * n)
            if not leaves_from_score_change(after[block], before[block], values[order], order, out[c]):
                return None
        return out.T
