"""``read_click_log(labels=[...])``: a click log's further label columns (a purchase, a dwell time, a
rating), read beside the click for multi-label training (``customobj.multi.MultiObjective``, docs/multi-objective.md).

Each column is numeric, present on every row, finite and non-negative, as a label column of
``MultiObjective`` must be; a bad one is a defect of its own in ``read_click_log``'s one error.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

__all__ = ["check_column_names", "check_label_names", "label_columns"]


def check_column_names(names: Any, argument: str, taken: dict, what: str) -> list:
    """``names``, a non-empty list of distinct column names none of which is one of ``taken``'s
    (``{column: its role}``); ``TypeError``/``ValueError`` naming ``argument`` (``what``: one such
    column, for the message). Shared by ``features=`` and ``labels=``."""
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence) or len(names) == 0:
        raise TypeError(f"{argument} must be a non-empty list of column names")
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"{argument} must hold column names (str)")
    if len(set(names)) != len(names):
        raise ValueError(f"{argument} names a column twice")
    for n in names:
        if n in taken:
            raise ValueError(f"{argument}: column {n!r} is the {taken[n]} column; {what} cannot be it")
    return list(names)


def check_label_names(labels: Any, taken: dict, features: Any) -> Optional[list]:
    """The ``labels=`` column names, checked against the other columns' (``TypeError``/``ValueError``
    naming ``labels``); None for None."""
    if labels is None:
        return None
    check_column_names(labels, "labels", taken, "a label")
    for n in labels:
        if isinstance(features, Sequence) and not isinstance(features, str) and n in features:
            raise ValueError(f"labels: column {n!r} is a feature; a column is a feature or a label, not both")
    return list(labels)


def label_columns(table: Any, names: Optional[list], defects: Any, rows: Any) -> Optional[np.ndarray]:
    """``(rows, len(names))`` float64 in the table's row order, or None; each bad column a defect
    (``rows`` formats the rows of one, as the reader's other messages)."""
    if names is None:
        return None
    Y = np.empty((table.n_rows, len(names)), dtype=np.float64)
    ok = True
    for j, name in enumerate(names):
        ok = defects.check(_label, table, name, Y, j, rows) is not None and ok
    return Y if ok else None


def _label(table, name, Y, j, rows):
    values = table.column(name, "labels")
    if values.dtype.kind not in "biuf":
        raise TypeError(f"labels: column {name!r} must be numeric, got dtype {values.dtype}")
    Y[:, j] = values
    bad = np.flatnonzero(~np.isfinite(Y[:, j]) | (Y[:, j] < 0))
    if bad.size:
        raise ValueError(f"labels: column {name!r} holds {Y[bad[0], j]} at {rows(bad)}; a label must be finite "
                         "and >= 0")
    return True
