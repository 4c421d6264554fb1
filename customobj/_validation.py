"""Input checks shared by every public entry point: the numeric-range policy of customobj.

Everything that reaches a numba kernel passes through here first: arrays are converted once to
contiguous float64 / int64, and anything the kernels cannot handle (wrong shape, NaN, object
dtype, disagreeing lengths, values whose arithmetic would overflow) becomes a
``ValueError``/``TypeError`` that names the argument.

The limits below are the whole policy (docs/robustness.md, "Input limits", derives them). Each is
checked on the Python value, before it becomes an int64 or a float64 in a kernel, and is chosen so
that every sum and product the kernels form stays finite: a pair term is at most a few factors of
these bounds, and a row takes part in fewer than ``MAX_ROWS`` pairs.
"""
from __future__ import annotations

import numbers
from typing import Any, Collection, Literal, Optional, overload

import numpy as np

from ._cuda_runtime import is_device_array

__all__ = [
    "as_1d_float",
    "as_scores",
    "as_labels",
    "as_weight",
    "as_pairs",
    "as_gain_table",
    "check_positive",
    "check_nonnegative",
    "check_bool",
    "check_real",
    "check_choice",
    "check_int",
    "check_exp_gain_labels",
    "check_pair_budget",
    "SCORE_LIMIT",
    "LABEL_LIMIT",
    "WEIGHT_LIMIT",
    "PARAM_LIMIT",
    "INT_LIMIT",
    "MAX_ROWS",
    "EXP_GAIN_MAX_LABEL",
    "MAX_GAIN",
    "ERR_MAX_LABEL",
    "ERR_MAX_GAIN",
    "MAX_PAIRS",
    "MIN_PROPENSITY",
    "MAX_PROPENSITY",
]

#: Largest ``|score|`` an objective accepts. Margins this large mean a diverged model; beyond it
#: squared losses (and products with weights) would overflow to inf, which no kernel may return.
SCORE_LIMIT = 1e100

#: Largest ``|label|``: labels enter squared errors and margins next to scores, so the same bound.
LABEL_LIMIT = 1e100

#: Largest row (or pair) weight. A pair weight is ``w_i / 2 + w_j / 2``; a row's gradient sums at
#: most ``MAX_ROWS`` pair terms of at most ``WEIGHT_LIMIT * PARAM_LIMIT**2 * e**50`` (MPBoost's
#: clipped exponential), about 5e123, far below the float64 maximum 1.8e308.
WEIGHT_LIMIT = 1e50

#: Largest real-valued option: ``sigma``, ``margin``, ``alpha``, ``lam``, ``beta``, ``C``, ``hess``,
#: the factor of ``factor * objective`` (times every factor it is nested in), and label-derived
#: pair distances such as MPBoost's ``alpha * (y_i - y_j)``. Squared (hessians) it is 1e40.
PARAM_LIMIT = 1e20

#: Largest ``|value|`` of an integer option without a tighter natural bound: a sum of two such
#: values still fits int64 (2**63 - 1), so no kernel's index arithmetic can wrap. 2**62 itself would
#: not: 2**62 + 2**62 = 2**63 wraps.
INT_LIMIT = 2**62 - 1

#: Largest number of rows a data set, a query or a cut-off (``k``, ``truncation``) may claim:
#: 2**40, about 1.1e12 rows (a float64 column of them is 8.8 TB). Row counts are summed in float64
#: first, so query sizes that would wrap int64 are refused instead of wrapping.
MAX_ROWS = 2**40

#: Largest label the exponential gain ``2**y - 1`` accepts (NDCG, DCG, ERR, LambdaRank NDCG,
#: StructuredDCG). ``2**700`` is about 5e210: a query's DCG sums at most ``MAX_ROWS`` gains
#: (6e222), and StructuredDCG's assignment potentials and weighted losses, at most
#: ``MAX_ROWS * (SCORE_LIMIT * MAX_ROWS + 2**701)`` times ``WEIGHT_LIMIT * PARAM_LIMIT``, stay below
#: 1e300. From ``y = 1024`` on ``2**y`` is inf itself.
EXP_GAIN_MAX_LABEL = 700

#: Largest entry of a gain table (``gain=``), the gain of label ``EXP_GAIN_MAX_LABEL``.
MAX_GAIN = 2.0**EXP_GAIN_MAX_LABEL

#: LambdaRank(metric="err") divides by ``1 - R`` with ``R = G(y) / (1 + G(y_max))``. ``R`` must stay
#: below 1 in float64, so ``1 + G(y_max)`` must exceed ``G(y_max)``: gains up to ``2**53 - 1``, i.e.
#: labels up to 53 with the exponential gain (from 54 on, ``R`` rounds to 1 and the swap formula
#: divides by zero).
ERR_MAX_LABEL = 53
ERR_MAX_GAIN = 2.0**53 - 1

#: Largest number of row pairs a function may materialise as arrays (``pair_couplings``,
#: ``label_pairs``, ``precision_at_percent``, LambdaRank's pair buffers, ...): 32 bytes a pair, so
#: about 3.2 GB. One query of 20,000 rows has up to 2e8 pairs; gradients and losses never
#: materialise pairs and are not limited.
MAX_PAIRS = 100_000_000

#: Smallest examination propensity, affine ``alpha`` and click-metric ``clip`` a click estimator
#: divides by: a click weighs at most ``1 / MIN_PROPENSITY = 1e16`` (two of them in a debiased pair,
#: ``1 / (t+ t-)``: 1e32). Together with the bounds above (gradient terms below 6e143, scales below
#: 1e20) every corrected gradient stays below 1e200; a denormal ``1 / 5e-324`` is inf.
MIN_PROPENSITY = 1e-16
#: Largest examination propensity (relative to the top) a click estimator or metric accepts.
MAX_PROPENSITY = PARAM_LIMIT


def _to_numpy(x: Any, name: str) -> np.ndarray:
    """Convert array-likes (lists, pandas, numpy) to ndarray; reject sparse and object data."""
    if x is None:
        raise TypeError(f"{name} must be an array, got None")
    if is_device_array(x):
        raise TypeError(f"{name} is in GPU memory, where only Objective.grad_hess computes: pass a host (numpy) array")
    if hasattr(x, "tocsr") and hasattr(x, "nnz"):
        raise TypeError(f"{name} must be a dense 1-D array, got a scipy.sparse matrix; use .toarray()")
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):  # pandas Series / DataFrame
        x = x.to_numpy()
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} could not be converted to an array: {exc}") from None
    if arr.dtype == object:
        if arr.size and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in arr.ravel()):
            big = max(arr.ravel(), key=abs)
            if abs(big) >= 2**63:
                raise ValueError(f"{name} holds {big}, beyond the int64 range (|value| < 2**63)")
        raise TypeError(f"{name} has dtype object; pass a numeric array (float or int)")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    return arr


def _first_bad(arr):
    bad = np.flatnonzero(~np.isfinite(arr.ravel()))
    return int(bad[0]), arr.ravel()[bad[0]]


def _check_max_abs(arr: np.ndarray, name: str, limit: float, hint: str, where: str = "position") -> None:
    if arr.size:
        flat = arr.ravel()
        pos = int(np.argmax(np.abs(flat)))
        if abs(flat[pos]) > limit:
            raise ValueError(f"{name} must satisfy |{name}| <= {limit:g}; found {flat[pos]:g} at {where} {pos}{hint}")


def as_1d_float(x: Any, name: str, *, n: Optional[int] = None, finite: bool = True, allow_2d: bool = False,
                allow_bool: bool = True) -> np.ndarray:
    """Return ``x`` as a C-contiguous float64 array (1-D, or 2-D when ``allow_2d``)."""
    arr = _to_numpy(x, name)
    if not allow_bool and arr.dtype.kind == "b":
        raise TypeError(f"{name} must be real numbers (float or int), got booleans")
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


#: Why scores beyond ``max_abs`` are refused, for scores the training produced.
DIVERGED_HINT = " (margins this large mean the model diverged: lower the learning rate)"


def as_scores(scores: Any, n: Optional[int] = None, *, allow_2d: bool = False, name: str = "scores",
              max_abs: Optional[float] = None, hint: str = DIVERGED_HINT) -> np.ndarray:
    """Scores (raw margins): finite real numbers (booleans are refused) as float64; with
    ``max_abs``, ``|scores| <= max_abs`` too (``hint`` ends the message of a refusal)."""
    s = as_1d_float(scores, name, n=n, allow_2d=allow_2d, allow_bool=False)
    if max_abs is not None:
        _check_max_abs(s, name, max_abs, hint)
    return s


def as_labels(labels: Any, n: Optional[int] = None, *, integer: bool = False, name: str = "labels") -> np.ndarray:
    """Relevance labels: finite, non-negative float64, at most :data:`LABEL_LIMIT`; integer-valued
    when ``integer``."""
    y = as_1d_float(labels, name, n=n)
    if y.size and y.min() < 0:
        pos = int(np.argmin(y))
        raise ValueError(f"{name} must be non-negative relevance grades; found {y[pos]} at row {pos}")
    _check_max_abs(y, name, LABEL_LIMIT, " (customobj._validation.LABEL_LIMIT)", where="row")
    if integer and y.size:
        frac = np.flatnonzero(y != np.floor(y))
        if frac.size:
            raise ValueError(
                f"{name} must be integer grades (0, 1, 2, ...); found {y[frac[0]]} at row {int(frac[0])}"
            )
    return y


def check_exp_gain_labels(labels: np.ndarray, *, name: str = "labels", limit: int = EXP_GAIN_MAX_LABEL,
                          what: str = "the exponential gain 2**y - 1") -> None:
    """Refuse labels above ``limit`` (default :data:`EXP_GAIN_MAX_LABEL`) where ``what`` uses them."""
    if labels.size:
        pos = int(np.argmax(labels))
        if labels[pos] > limit:
            raise ValueError(
                f"{name} reach {labels[pos]:g} (row {pos}) but {what} needs labels <= {limit} to stay finite; "
                "pass a gain table (gain=[...]) or rescale the grades"
            )


def as_gain_table(gain: Any, name: str = "gain", *, max_gain: float = MAX_GAIN,
                  nondecreasing: bool = False) -> np.ndarray:
    """A per-grade gain table (LightGBM's ``label_gain``): 1-D, non-empty, finite, in ``[0, max_gain]``."""
    if isinstance(gain, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D sequence of per-grade gains (LightGBM's label_gain), got a string")
    table = as_1d_float(gain, name, allow_bool=False)
    if table.size == 0:
        raise ValueError(f"{name} must have one entry per grade, got an empty sequence")
    if table.min() < 0:
        raise ValueError(f"{name} entries must be >= 0; found {table.min():g} at grade {int(np.argmin(table))}")
    if table.max() > max_gain:
        raise ValueError(f"{name} entries must be <= {max_gain:g}; found {table.max():g} at grade {int(np.argmax(table))}")
    if nondecreasing and np.any(np.diff(table) < 0):
        raise ValueError(f"{name} must be non-decreasing in the grade (a better grade never gains less)")
    return table


def as_weight(weight: Any, n: int, *, name: str = "weight") -> Optional[np.ndarray]:
    """Row weights: ``None`` (all ones) or finite float64 in ``[0, WEIGHT_LIMIT]`` of length ``n``."""
    if weight is None:
        return None
    w = as_1d_float(weight, name, n=n)
    if w.size and w.min() < 0:
        pos = int(np.argmin(w))
        raise ValueError(f"{name} must be non-negative; found {w[pos]} at row {pos}")
    _check_max_abs(w, name, WEIGHT_LIMIT, " (customobj._validation.WEIGHT_LIMIT; weights only matter relative "
                   "to each other, so divide them all by their maximum)", where="row")
    return w


def as_pairs(pairs: Any, n: Optional[int], *, name: str = "pairs") -> np.ndarray:
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


def _check_number(value: Any, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        v = float(value)
    except OverflowError:  # a Python int beyond the float range
        raise ValueError(f"{name} must be finite, got {value}") from None
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value}")
    return v


def check_real(value: Any, name: str) -> float:
    """A finite real number (not a bool) as float; Python ints beyond the float range are refused."""
    return _check_number(value, name)


def _check_upper(v: float, value: Any, name: str, maximum: Optional[float]) -> None:
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum:g} (customobj's limit for real options), got {value}")


def check_positive(value: Any, name: str, *, maximum: Optional[float] = PARAM_LIMIT) -> float:
    """A finite real option in ``(0, maximum]`` (default :data:`PARAM_LIMIT`), as float."""
    v = _check_number(value, name)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    _check_upper(v, value, name, maximum)
    return v


def check_bool(value: Any, name: str) -> bool:
    """A True / False option as a Python bool (numpy's bool too); anything else is a TypeError naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def check_nonnegative(value: Any, name: str, *, maximum: Optional[float] = PARAM_LIMIT) -> float:
    """A finite real option in ``[0, maximum]`` (default :data:`PARAM_LIMIT`), as float."""
    v = _check_number(value, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    _check_upper(v, value, name, maximum)
    return v


def check_choice(value: Any, name: str, choices: Collection[Any]) -> Any:
    """``value`` must be one of ``choices`` (strings); anything else, hashable or not, is named."""
    try:
        ok = value in choices
    except TypeError:  # unhashable, e.g. a list
        ok = False
    if not ok:
        options = sorted(choices)
        if not isinstance(value, str):
            raise TypeError(f"{name} must be one of {options} (a string), got {type(value).__name__} {value!r}")
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


# Typed twice so that callers without allow_none=True get an int, not Optional[int].
@overload
def check_int(value: Any, name: str, *, minimum: Optional[int] = None, maximum: Optional[int] = None,
              allow_none: Literal[False] = False, hint: str = "") -> int: ...


@overload
def check_int(value: Any, name: str, *, minimum: Optional[int] = None, maximum: Optional[int] = None,
              allow_none: bool, hint: str = "") -> Optional[int]: ...


def check_int(value: Any, name: str, *, minimum: Optional[int] = None, maximum: Optional[int] = None,
              allow_none: bool = False, hint: str = "") -> Optional[int]:
    """An integer option as a Python int, checked before it can become an int64.

    ``minimum`` defaults to ``-INT_LIMIT`` and ``maximum`` to :data:`INT_LIMIT` (2**62 - 1), so every
    accepted value and the sum of two of them fit int64. ``hint`` is appended to range errors.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    lo = -INT_LIMIT if minimum is None else minimum
    hi = INT_LIMIT if maximum is None else maximum
    extra = f"; {hint}" if hint else ""
    if value < lo:
        raise ValueError(f"{name} must be >= {lo}, got {value}{extra}")
    if value > hi:
        raise ValueError(f"{name} must be <= {hi}, got {value}{extra}")
    return value


def check_pair_budget(n_pairs: int, what: str, *, hint: str = "") -> int:
    """Raise ``ValueError`` before materialising more than :data:`MAX_PAIRS` row pairs."""
    if n_pairs > MAX_PAIRS:
        raise ValueError(
            f"{what} would materialise {n_pairs:,} row pairs (about {n_pairs * 32 / 1e9:.1f} GB), more than "
            f"customobj._validation.MAX_PAIRS = {MAX_PAIRS:,}{'; ' + hint if hint else ''}"
        )
    return int(n_pairs)
