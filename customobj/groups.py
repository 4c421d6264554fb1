"""Query structure: which contiguous rows belong to which query.

``Groups`` is the one validated representation; every public function that takes ``group=``
accepts a ``Groups``, a sizes array (LightGBM's convention) or a list of sizes, via ``as_groups``.
"""
from __future__ import annotations

import numbers
from typing import Optional, Union

import numpy.typing as npt

import numpy as np

#: What ``group`` arguments accept: query sizes (array-like) or a :class:`Groups`.
GroupLike = Union["Groups", npt.ArrayLike]

from ._validation import MAX_ROWS

__all__ = ["Groups", "as_groups"]


def _int_array(values: object, name: str, *, minimum: Optional[int] = None,
               maximum: Optional[int] = MAX_ROWS) -> np.ndarray:
    """``values`` as a 1-D int64 array, each checked to lie in ``[minimum, maximum]`` *before* the cast
    (an unsigned or float value beyond int64 would otherwise wrap or be undefined)."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
    try:
        arr = np.asarray(values)
    except Exception as exc:
        raise TypeError(f"{name} could not be converted to an array: {exc}") from None
    if arr.dtype == object and arr.size and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in arr.ravel()):
        # Python ints beyond uint64: name the value instead of the dtype.
        big = max(arr.ravel(), key=abs)
        if abs(big) >= 2**63:
            raise ValueError(f"{name} holds {big}, more than customobj allows (at most {maximum})")
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "b":
        raise TypeError(f"{name} must be an array of integers, got booleans")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.floor(arr)))
        if bad.size:
            raise TypeError(f"{name} must hold integers; found {arr[bad[0]]} at position {int(bad[0])}")
    if arr.size:
        # Compared in the input's own dtype (or float64), never after a wrapping cast.
        if minimum is not None and arr.min() < minimum:
            q = int(np.argmin(arr))
            raise ValueError(f"{name} must be >= {minimum}; found {arr[q]} at position {q}")
        if maximum is not None and arr.max() > maximum:
            q = int(np.argmax(arr))
            raise ValueError(
                f"{name} must be <= {maximum} (customobj._validation.MAX_ROWS); found {arr[q]} at position {q}"
            )
    return arr.astype(np.int64)


#: Appended when the sizes given have one entry per row: they are most likely per-row query ids.
#: (Callers with their own spelling of the remedy, e.g. TreeBooster's ``qid=``, replace it.)
PER_ROW_IDS_HINT = ("; group has one entry per row, so it looks like per-row query ids: build the groups "
                    "with customobj.Groups.from_qid(qid) (or pass one size per query)")


class Groups:
    """Validated query boundaries.

    Rows ``ptr[q]:ptr[q+1]`` form query ``q``. Build one with :meth:`from_sizes`,
    :meth:`from_qid` or :meth:`from_ptr`.

    Attributes
    ----------
    ptr : int64 array, length ``n_groups + 1``, ``ptr[0] == 0``, non-decreasing.
    sizes : int64 array of query sizes.
    n_rows, n_groups : int.
    """

    __slots__ = ("_ptr",)

    def __init__(self, ptr: npt.ArrayLike) -> None:
        ptr = _int_array(ptr, "ptr", minimum=0)
        if ptr.size == 0:
            raise ValueError("ptr must have at least one entry (ptr[0] == 0)")
        if ptr[0] != 0:
            raise ValueError(f"ptr must start at 0, got ptr[0] = {ptr[0]}")
        steps = np.diff(ptr)  # entries lie in [0, MAX_ROWS]: no wrap
        if steps.size and steps.min() < 0:
            q = int(np.argmin(steps))
            raise ValueError(f"ptr must be non-decreasing; ptr[{q + 1}] = {ptr[q + 1]} < ptr[{q}] = {ptr[q]}")
        ptr = np.ascontiguousarray(ptr)
        ptr.setflags(write=False)
        self._ptr = ptr

    # constructors -------------------------------------------------------------------------------
    @classmethod
    def from_sizes(cls, sizes: npt.ArrayLike, n_rows: Optional[int] = None) -> "Groups":
        """From query sizes (LightGBM's ``group``); ``n_rows`` checks that they cover the data.

        Each size must lie in ``0..MAX_ROWS`` and so must their total: the total is formed in
        float64 first, so sizes whose int64 sum would wrap are refused, never wrapped.
        """
        sizes = _int_array(sizes, "group sizes")
        if sizes.size and sizes.min() < 0:
            q = int(np.argmin(sizes))
            raise ValueError(f"group sizes must be non-negative; group {q} has size {sizes[q]}")
        approx = float(sizes.sum(dtype=np.float64))
        if approx > 2.0 * MAX_ROWS:  # the exact int64 sum below cannot wrap once this passed
            raise ValueError(
                f"group sizes sum to about {approx:.4g} rows, more than customobj._validation.MAX_ROWS = {MAX_ROWS}"
            )
        total = int(sizes.sum())
        if total > MAX_ROWS:
            raise ValueError(f"group sizes sum to {total} rows, more than customobj._validation.MAX_ROWS = {MAX_ROWS}")
        if n_rows is not None and total != n_rows:
            hint = PER_ROW_IDS_HINT if sizes.size == n_rows else ""
            raise ValueError(f"group sizes sum to {total} but data has {n_rows} rows{hint}")
        ptr = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=ptr[1:])
        return cls(ptr)

    @classmethod
    def from_ptr(cls, ptr: npt.ArrayLike, n_rows: Optional[int] = None) -> "Groups":
        """From offsets ``ptr`` (XGBoost's ``group_ptr``)."""
        g = cls(ptr)
        if n_rows is not None and g.n_rows != n_rows:
            raise ValueError(f"group ptr ends at {g.n_rows} but data has {n_rows} rows")
        return g

    @classmethod
    def from_qid(cls, qid: npt.ArrayLike, n_rows: Optional[int] = None) -> "Groups":
        """From a per-row query id whose queries are contiguous (as in LETOR files).

        A qid that reappears after another query is an error: sort rows by qid first
        (a stable sort keeps each query's row order).
        """
        if hasattr(qid, "to_numpy") and not isinstance(qid, np.ndarray):
            qid = qid.to_numpy()
        qid = np.asarray(qid)
        if qid.ndim != 1:
            raise ValueError(f"qid must be 1-D, got shape {qid.shape}")
        if qid.dtype == object:
            raise TypeError("qid has dtype object; pass integer or string query ids as a typed array")
        if qid.dtype.kind == "f" and qid.size and not np.all(np.isfinite(qid)):
            row = int(np.flatnonzero(~np.isfinite(qid))[0])
            raise ValueError(f"qid must be finite; found {qid[row]} at row {row}")
        if n_rows is not None and qid.size != n_rows:
            raise ValueError(f"qid has {qid.size} rows but data has {n_rows} rows")
        if qid.size == 0:
            return cls(np.zeros(1, dtype=np.int64))
        starts = np.flatnonzero(qid[1:] != qid[:-1]) + 1
        ptr = np.concatenate(([0], starts, [qid.size])).astype(np.int64)
        firsts = qid[ptr[:-1]]
        uniq, first_pos, counts = np.unique(firsts, return_index=True, return_counts=True)
        if uniq.size != firsts.size:
            dup = int(np.flatnonzero(counts > 1)[0])
            value = uniq[dup]
            value = value.item() if hasattr(value, "item") else value
            blocks = np.flatnonzero(firsts == value)
            row = int(ptr[blocks[1]])
            raise ValueError(
                f"qid {value!r} reappears at row {row} after another query; rows of a query must be "
                "contiguous (sort the data by qid with a stable sort first)"
            )
        return cls(ptr)

    # attributes ---------------------------------------------------------------------------------
    @property
    def ptr(self) -> np.ndarray:
        return self._ptr

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self._ptr)

    @property
    def n_rows(self) -> int:
        return int(self._ptr[-1])

    @property
    def n_groups(self) -> int:
        return int(self._ptr.size - 1)

    def __len__(self) -> int:
        return self.n_groups

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Groups) and np.array_equal(self._ptr, other._ptr)

    def __hash__(self) -> int:
        return hash(self._ptr.tobytes())

    def __repr__(self) -> str:
        return f"Groups(n_groups={self.n_groups}, n_rows={self.n_rows})"

    def subset(self, queries: npt.ArrayLike) -> "tuple[np.ndarray, Groups]":
        """Rows and ``Groups`` of the selected queries (an index array), in the given order."""
        queries = _int_array(queries, "queries")
        if queries.size and (queries.min() < 0 or queries.max() >= self.n_groups):
            raise ValueError(f"queries must be in 0..{self.n_groups - 1}")
        sizes = self.sizes[queries]
        rows = np.concatenate([np.arange(self._ptr[q], self._ptr[q + 1]) for q in queries]) if queries.size else np.zeros(0, np.int64)
        return rows.astype(np.int64), Groups.from_sizes(sizes)


def as_groups(group: GroupLike, n_rows: Optional[int] = None, *, name: str = "group") -> Groups:
    """Accept a ``Groups``, a sizes array or a list of sizes; check it covers ``n_rows`` rows."""
    if group is None:
        raise TypeError(f"{name} is required: pass query sizes (e.g. [10, 12, ...]) or a customobj.Groups")
    if isinstance(group, Groups):
        if n_rows is not None and group.n_rows != n_rows:
            raise ValueError(f"{name} covers {group.n_rows} rows but data has {n_rows} rows")
        return group
    if isinstance(group, (numbers.Number, str, bytes)):
        raise TypeError(f"{name} must be a sequence of query sizes or a Groups, got {type(group).__name__}")
    try:
        return Groups.from_sizes(group, n_rows=n_rows)
    except (TypeError, ValueError) as exc:
        msg = str(exc).replace("group sizes", f"{name} sizes", 1) if name != "group" else str(exc)
        raise type(exc)(msg) from None
