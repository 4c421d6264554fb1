"""Checks of click data: display positions, click labels and propensities (docs/clicks.md).

Positions are 0-based: 0 is the top of the page. Nothing trains on garbage: a negative, fractional
or oversized position, a position given twice in one query, a log with no row at the top position
(a 1-based log, unless ``first_position=1`` says so), rows of a session out of display order, a
label that is not a click (0 / 1) and a propensity that is not a positive finite number raise
``ValueError`` naming the argument and saying how to fix the data.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import MAX_PROPENSITY, MIN_PROPENSITY, _to_numpy

__all__ = ["MAX_POSITION", "DEFAULT_POSITIONS", "as_position", "as_propensity", "check_clicks",
           "check_position_groups", "check_display_order", "zero_based", "row_order_positions", "data_positions"]

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


def zero_based(position: np.ndarray, first_position: int, name: str = "position") -> np.ndarray:
    """``position`` numbered from 0 (the top): minus ``first_position``, the number the log gives
    its top position. Refused when no row is at the top: a silently shifted log would debias
    nothing (no pair at the reference position) or estimate nonsense there.

    Examples
    --------
    >>> zero_based(np.array([1, 2, 3, 1]), 1).tolist()
    [0, 1, 2, 0]
    """
    if position.size == 0:
        return position
    low = int(position.min())
    if low < first_position:
        row = int(np.argmin(position))
        raise ValueError(f"{name} has {low} at row {row}, smaller than first_position={first_position} (the top row's number): "
                         "give first_position the number your log gives its top row (0, or 1 for a 1-based log)")
    if low != first_position:
        hint = ("positions are 0-based (0 = top of the page); if your log numbers the top row 1, pass "
                "first_position=1" if first_position == 0 else f"first_position={first_position} is the top's number")
        raise ValueError(f"no row of {name} is at the top position {first_position} (the smallest is {low}): {hint}")
    if first_position == 0:
        return position
    out = position - first_position
    out.setflags(write=False)
    return out


def check_display_order(position: np.ndarray, ptr: np.ndarray, name: str = "position") -> None:
    """Each query's (session's) rows come in display order: positions increase down the rows.

    Why refused rather than taken as they are: LightGBM numbers its ``position`` field by first
    appearance, so rows out of order turn into a permuted propensity curve without a word, and a
    log out of order usually means the sessions were cut or sorted wrongly.
    """
    if position.size < 2:
        return
    sizes = np.diff(ptr)
    qid = np.repeat(np.arange(sizes.size), sizes)
    bad = np.flatnonzero((qid[1:] == qid[:-1]) & (np.diff(position) <= 0))
    if bad.size:
        r = int(bad[0])
        raise ValueError(f"{name}: the rows of query {int(qid[r])} are not in display order (row {r + 1} at position "
                         f"{int(position[r + 1])} follows row {r} at position {int(position[r])}): order each "
                         "session's rows by position, top first (e.g. rows = np.lexsort((position, session)))")


def row_order_positions(ptr: np.ndarray) -> np.ndarray:
    """Each row's index within its query: the positions when rows come in displayed order."""
    sizes = np.diff(ptr)
    n = int(ptr[-1]) if ptr.size else 0
    return np.arange(n, dtype=np.int64) - np.repeat(ptr[:-1], sizes)


def data_positions(own: Any, prep: Any, first_position: int, owner: str) -> np.ndarray:
    """The 0-based display positions of a prepared data set's rows, checked: the data's own
    (``prep.position``, e.g. a LightGBM Dataset's field) or the objective's ``position=`` option
    ``own`` (both given: they must agree), numbered from ``first_position``; without either, the row
    order within each query (XGBoost's convention). ``owner`` names the objective in messages."""
    position = own
    if prep.position is not None:
        given = as_position(prep.position)
        if position is not None and not np.array_equal(position, given):
            raise ValueError(f"the data's position field differs from {owner}(position=...): give one of them")
        position = given
    if position is None:
        return row_order_positions(prep.ptr)
    check_position_groups(position, prep.ptr, prep.n_rows)
    position = zero_based(position, first_position)
    check_display_order(position, prep.ptr)
    return position


def check_clicks(labels: np.ndarray, name: str = "labels") -> None:
    """Click labels are 0 (not clicked) or 1 (clicked)."""
    bad = np.flatnonzero((labels != 0.0) & (labels != 1.0))
    if bad.size:
        raise ValueError(f"{name} must be clicks, 0 or 1; found {labels[bad[0]]} at row {int(bad[0])}")


def as_propensity(propensity: Any, name: str = "propensity") -> np.ndarray:
    """Per-position examination propensities (the top position, 0, first), read-only, each in
    ``[MIN_PROPENSITY, MAX_PROPENSITY]`` (1e-16 to 1e20, ``customobj._validation``): a click is divided
    by them, so a smaller one (a denormal: ``1 / 5e-324`` is inf) would make gradients infinite.

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
    bad = np.flatnonzero(~(np.isfinite(arr) & (arr >= MIN_PROPENSITY) & (arr <= MAX_PROPENSITY)))
    if bad.size:
        raise ValueError(f"{name} must be finite and in [{MIN_PROPENSITY:g}, {MAX_PROPENSITY:g}] (a click is divided "
                         f"by it; customobj._validation.MIN_PROPENSITY); found {arr[bad[0]]} at position {int(bad[0])}")
    arr.setflags(write=False)
    return arr
