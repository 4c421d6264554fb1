"""``MultiObjective``'s label columns checked once, at construction (tested through
``tests/test_multi_objective.py``).

An entry is None (the objective trains on the data set's label), a numpy column (copied, read-only,
float64, finite, 1-D; its length is checked against the data when it trains), or a Dask array / Series
kept as given, never computed: ``customobj.adapters.dask`` splits it with the query-aligned partitions,
and one machine refuses it (``MultiObjective.check_prepared``).
"""
from __future__ import annotations

from typing import Any

from .._validation import as_1d_float
from ..objectives._arrays import freeze_option

__all__ = ["check_labels", "is_dask", "frozen_label"]


def is_dask(y: Any) -> bool:
    """A Dask array, Series or DataFrame (lazy: its values are on the workers; dask is never imported here).

    >>> is_dask([1.0, 2.0])
    False
    """
    return hasattr(y, "__dask_graph__") and hasattr(y, "dask")


def frozen_label(y: Any) -> object:
    """A label entry in hashable form: numpy by content, a Dask column by its graph's name (``__dask_tokenize__``)."""
    if is_dask(y):
        return ("dask", str(y.__dask_tokenize__()))
    return freeze_option(y)


def check_labels(labels: Any, m: int) -> tuple:
    """``labels=`` as a tuple of ``m`` entries (ValueError/TypeError naming ``labels`` or ``labels[k]``).

    >>> check_labels([None, [0, 1, 1]], 2)[1].tolist()
    [0.0, 1.0, 1.0]
    """
    if labels is None:
        return (None,) * m
    if isinstance(labels, (str, bytes)) or not isinstance(labels, (list, tuple)):
        raise TypeError(f"labels must be a list of {m} label columns (or None for the data set's label), "
                        f"got {type(labels).__name__}")
    if len(labels) != m:
        raise ValueError(f"labels must have one entry per objective ({m}), got {len(labels)}")
    out: list = []
    for k, y in enumerate(labels):
        if y is None or is_dask(y):  # a Dask column is split with the partitions (adapters.dask), never computed
            out.append(y)
            continue
        arr = as_1d_float(y, f"labels[{k}]").copy()  # finite, 1-D; its length is checked against the data
        arr.setflags(write=False)
        out.append(arr)
    return tuple(out)
