"""Input checks shared by every public entry point.

Everything that reaches a numba kernel passes through here first: arrays are converted once to
contiguous float64 / int64, and anything the kernels cannot handle (wrong shape, NaN, object
dtype, disagreeing lengths) becomes a ``ValueError``/``TypeError`` that names the argument.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_1d_float",
    "as_scores",
    "as_labels",
    "as_weight",
    "as_pairs",
    "check_positive",
    "check_nonnegative",
    "check_choice",
    "check_int",
    "check_pair_budget",
    "SCORE_LIMIT",
    "MAX_PAIRS",
]

#: Largest ``|score|`` an objective accepts. Margins this large mean a diverged model; beyond it
#: squared losses (and products with weights) would overflow to inf, which no kernel may return.
SCORE_LIMIT = 1e100

#: Largest number of row pairs a function may materialise as arrays (``pair_couplings``,
#: ``label_pairs``, ``precision_at_percent``, ...): 32 bytes a pair, so about 3.2 GB. One query of
#: 20,000 rows has up to 2e8 pairs; gradients and losses never materialise pairs and are not limited.
MAX_PAIRS = 100_000_000


def _to_numpy(x, name):
    """Convert array-likes (lists, pandas, numpy) to ndarray; reject sparse and object data."""
    if x is None:
        raise TypeError(f"{name} must be an array, got None")
    if hasattr(x, "tocsr") and hasattr(x, "nnz"):
        raise TypeError(f"{name} must be a dense 1-D array, got a scipy.sparse matrix; use .toarray()")
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):  # pandas Series / DataFrame
        x = x.to_numpy()
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} could not be converted to an array: {exc}") from None
    if arr.dtype == object:
        raise TypeError(f"{name} has dtype object; pass a numeric array (float or int)")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    return arr


def _first_bad(arr):
    bad = np.flatnonzero(~np.isfinite(arr.ravel()))
    return int(bad[0]), arr.ravel()[bad[0]]


def as_1d_float(x, name, *, n=None, finite=True, allow_2d=False):
    """Return ``x`` as a C-contiguous float64 array (1-D, or 2-D when ``allow_2d``)."""
    arr = _to_numpy(x, name)
    if arr.ndim == 2 and arr.shape[1] == 1 and not allow_2d:
        arr = arr[:, 0]
    if arr.ndim != 1 and not (allow_2d and arr.ndim == 2):
        want = "1-D or 2-D" if allow_2d else "1-D"
        raise ValueError(f"{name} must be {want}, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows but data has {n} rows")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if finite and not np.all(np.isfinite(arr)):
        pos, val = _first_bad(arr)
        raise ValueError(f"{name} must be finite; found {val} at position {pos}")
    return arr


def as_scores(scores, n=None, *, allow_2d=False, name="scores", max_abs=None):
    """Scores (raw margins): finite float64; with ``max_abs``, ``|scores| <= max_abs`` too."""
    s = as_1d_float(scores, name, n=n, allow_2d=allow_2d)
    if max_abs is not None and s.size:
        flat = s.ravel()
        pos = int(np.argmax(np.abs(flat)))
        if abs(flat[pos]) > max_abs:
            raise ValueError(
                f"{name} must satisfy |{name}| <= {max_abs:g}; found {flat[pos]:g} at position {pos} "
                "(margins this large mean the model diverged: lower the learning rate)"
            )
    return s


def as_labels(labels, n=None, *, integer=False, name="labels"):
    """Relevance labels: finite, non-negative float64; integer-valued when ``integer``."""
    y = as_1d_float(labels, name, n=n)
    if y.size and y.min() < 0:
        pos = int(np.argmin(y))
        raise ValueError(f"{name} must be non-negative relevance grades; found {y[pos]} at row {pos}")
    if integer and y.size:
        frac = np.flatnonzero(y != np.floor(y))
        if frac.size:
            raise ValueError(
                f"{name} must be integer grades (0, 1, 2, ...); found {y[frac[0]]} at row {int(frac[0])}"
            )
    return y


def as_weight(weight, n, *, name="weight"):
    """Row weights: ``None`` (all ones) or finite, non-negative float64 of length ``n``."""
    if weight is None:
        return None
    w = as_1d_float(weight, name, n=n)
    if w.size and w.min() < 0:
        pos = int(np.argmin(w))
        raise ValueError(f"{name} must be non-negative; found {w[pos]} at row {pos}")
    return w


def as_pairs(pairs, n, *, name="pairs"):
    """Explicit preference pairs: an ``(m, 2)`` int64 array, row ``pairs[k, 0]`` preferred to ``pairs[k, 1]``.

    ``n`` is the number of rows (indices must lie in ``0..n-1``); ``None`` checks only ``>= 0``
    (for options given before the data is known).
    """
    arr = _to_numpy(pairs, name)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (m, 2) (preferred row, other row), got {arr.shape}")
    if arr.dtype.kind == "f":
        flat = arr.ravel()
        bad = np.flatnonzero(~np.isfinite(flat) | (flat != np.floor(flat)) | (np.abs(flat) > 2.0**62))
        if bad.size:
            k = int(bad[0]) // 2
            raise TypeError(f"{name} must hold integer row indices; found {flat[bad[0]]} in {name}[{k}]")
    elif arr.dtype.kind == "b":
        raise TypeError(f"{name} must hold integer row indices, got booleans")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} holds a row index above the int64 range")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if n is None:
        bad = np.flatnonzero((arr < 0).any(axis=1))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"{name}[{k}] = {arr[k].tolist()} holds a negative row index (rows are 0, 1, ...)")
    else:
        bad = np.flatnonzero((arr < 0).any(axis=1) | (arr >= n).any(axis=1))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"{name}[{k}] = {arr[k].tolist()} points outside the data (rows 0..{n - 1})")
    same = np.flatnonzero(arr[:, 0] == arr[:, 1])
    if same.size:
        k = int(same[0])
        raise ValueError(f"{name}[{k}] pairs row {arr[k, 0]} with itself")
    return arr


def _check_number(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def check_positive(value, name):
    v = _check_number(value, name)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return v


def check_nonnegative(value, name):
    v = _check_number(value, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return v


def check_choice(value, name, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def check_int(value, name, *, minimum=None, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_pair_budget(n_pairs, what, *, hint=""):
    """Raise ``ValueError`` before materialising more than :data:`MAX_PAIRS` row pairs."""
    if n_pairs > MAX_PAIRS:
        raise ValueError(
            f"{what} would materialise {n_pairs:,} row pairs (about {n_pairs * 32 / 1e9:.1f} GB), more than "
            f"customobj._validation.MAX_PAIRS = {MAX_PAIRS:,}{'; ' + hint if hint else ''}"
        )
    return int(n_pairs)
