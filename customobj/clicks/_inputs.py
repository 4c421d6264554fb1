"""Checks of click data: display positions, click labels and propensities (docs/clicks.md).

Nothing trains on garbage: a negative, fractional or oversized position, a position given twice in
one query, a label that is not a click (0 / 1) and a propensity that is not a positive finite
number raise ``ValueError`` naming the argument.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import _to_numpy

__all__ = ["MAX_POSITION", "DEFAULT_POSITIONS", "as_position", "as_propensity", "check_clicks",
           "check_position_groups", "row_order_positions"]

#: Largest display position (0-based) accepted: the propensity tables have one entry per position,
#: and no result page shows more rows than this.
MAX_POSITION = 10_000
#: Positions tracked by default (XGBoost's ``MaxPositionSize`` without truncation): bias beyond
#: them is small and their pairs too few to estimate it.
DEFAULT_POSITIONS = 32


def as_position(position: Any, name: str = "position") -> np.ndarray:
    """Display positions (0 = top) as a read-only int64 array: integers in ``[0, MAX_POSITION)``.

    Examples
    --------
    >>> as_position([0, 1, 2]).tolist()
    [0, 1, 2]
    """
    arr = _to_numpy(position, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one display position per row), got shape {arr.shape}")
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be integer display positions, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.floor(arr)))
        if bad.size:
            raise ValueError(f"{name} must be integers (0 = top); found {arr[bad[0]]} at row {int(bad[0])}")
    if arr.size and arr.min() < 0:
        row = int(np.argmin(arr))
        raise ValueError(f"{name} must be >= 0 (0 = top of the page); found {arr[row]} at row {row}")
    if arr.size and arr.max() >= MAX_POSITION:
        row = int(np.argmax(arr))
        raise ValueError(f"{name} must be < {MAX_POSITION} (customobj.clicks._inputs.MAX_POSITION); "
                         f"found {arr[row]} at row {row}")
    out = np.ascontiguousarray(arr, dtype=np.int64)
    out.setflags(write=False)
    return out


def check_position_groups(position: np.ndarray, ptr: np.ndarray, n_rows: int, name: str = "position") -> None:
    """``position`` must have one entry per row, and no position twice within a query."""
    if position.shape[0] != n_rows:
        raise ValueError(f"{name} has {position.shape[0]} entries but the data has {n_rows} rows")
    query = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))  # sorted, not a loop over queries: logs have many
    order = np.lexsort((position, query))
    q_sorted, p_sorted = query[order], position[order]
    twice = (q_sorted[1:] == q_sorted[:-1]) & (p_sorted[1:] == p_sorted[:-1])
    if twice.any():
        q = int(q_sorted[1:][twice].min())
        uniq, counts = np.unique(position[ptr[q]:ptr[q + 1]], return_counts=True)
        raise ValueError(f"{name} is inconsistent with the groups: query {q} shows position "
                         f"{int(uniq[np.argmax(counts)])} {int(counts.max())} times")


def row_order_positions(ptr: np.ndarray) -> np.ndarray:
    """Each row's index within its query: the positions when rows come in displayed order."""
    sizes = np.diff(ptr)
    n = int(ptr[-1]) if ptr.size else 0
    return np.arange(n, dtype=np.int64) - np.repeat(ptr[:-1], sizes)


def check_clicks(labels: np.ndarray, name: str = "labels") -> None:
    """Click labels are 0 (not clicked) or 1 (clicked)."""
    bad = np.flatnonzero((labels != 0.0) & (labels != 1.0))
    if bad.size:
        raise ValueError(f"{name} must be clicks, 0 or 1; found {labels[bad[0]]} at row {int(bad[0])}")


def as_propensity(propensity: Any, name: str = "propensity") -> np.ndarray:
    """Per-position examination propensities (position 1 first), each finite and > 0, read-only.

    Examples
    --------
    >>> as_propensity([1.0, 0.5]).tolist()
    [1.0, 0.5]
    """
    arr = _to_numpy(propensity, name)
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array (one propensity per position), got shape {arr.shape}")
    if arr.size > MAX_POSITION:
        raise ValueError(f"{name} has {arr.size} entries, more than MAX_POSITION = {MAX_POSITION}")
    arr = np.array(arr, dtype=np.float64)
    bad = np.flatnonzero(~(np.isfinite(arr) & (arr > 0.0)))
    if bad.size:
        raise ValueError(f"{name} must be finite and > 0; found {arr[bad[0]]} at position {int(bad[0])}")
    arr.setflags(write=False)
    return arr
