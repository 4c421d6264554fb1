"""A click log of one's own: a table (pandas, pyarrow, Parquet or CSV) into the layout every click
method takes (docs/clicks.md, "A click log of your own").

Re-exported as :func:`customobj.data.read_click_log`.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from .._extras import require
from .._validation import check_int
from ..groups import _int_array
from ._inputs import MAX_POSITION, row_order_positions

__all__ = ["ClickData", "read_click_log", "CLICK_LOG_SUFFIXES"]

#: File name endings read (Parquet and CSV, plain or compressed as pyarrow recognises).
CLICK_LOG_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".csv.gz": "csv", ".csv.bz2": "csv"}


class ClickData(NamedTuple):
    """A click log in customobj's layout: one query group per session, rows in display order.

    ``X`` (float64 features), ``y`` (clicks, 0.0 / 1.0), ``group`` (rows per session, int64) and
    ``position`` (0 = top, int64; equal to the row order within each session) train every click
    method: ``Unbiased(obj, position=d.position)`` through ``lightgbm_objective`` (a Dataset with
    ``group=d.group``) or ``xgboost_objective``, XGBoost's ``lambdarank_unbiased`` (a DMatrix with
    ``group=d.group``: its positions are the row order), ``RegressionEM().fit(d.X, d.y,
    position=d.position)``, ``TreeBooster(Unbiased(obj)).fit(d.X, d.y, group=d.group)``.
    ``query`` and ``session`` hold each session's ids from the table (``session`` repeats
    ``query`` when the table has no session column); ``row`` is each row's row in the table;
    ``document`` each row's document id when the table has one (what identifies a query-document
    across logs, :func:`customobj.clicks.harvest_propensities`), else ``None``.
    """

    X: np.ndarray
    y: np.ndarray
    group: np.ndarray
    position: np.ndarray
    query: np.ndarray
    session: np.ndarray
    row: np.ndarray
    document: Optional[np.ndarray] = None
    ranker_id: Optional[np.ndarray] = None  # per row: the ranker that logged the session (``ranker=``)
    randomised: Optional[np.ndarray] = None  # per row: the session's randomisation marker (``randomised=``)
    logging_prob: Optional[np.ndarray] = None  # per row: P(document at its position) (``logging_prob=``)


# ------------------------------------------------------------------------------------------------
# the table: column name -> (values, null mask)
# ------------------------------------------------------------------------------------------------
def _file_kind(path: str) -> str:
    lower = path.lower()
    for suffix, kind in sorted(CLICK_LOG_SUFFIXES.items(), key=lambda kv: -len(kv[0])):
        if lower.endswith(suffix):
            return kind
    raise ValueError(f"source {path!r}: read_click_log reads {', '.join(CLICK_LOG_SUFFIXES)} files")


def read_log_file(source: Any, wanted: Optional[list] = None) -> Any:
    """The pyarrow Table of a Parquet or CSV click-log file (checked to be a regular file with a known
    suffix); of a Parquet file only the ``wanted`` columns that exist, all of them for None."""
    path = os.fspath(source)
    if isinstance(path, bytes):
        raise TypeError("source must be a str or os.PathLike path, a pandas DataFrame or a pyarrow Table, got bytes")
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ValueError(f"source {path!r} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(mode):  # a directory, FIFO or device would hang or read garbage
        raise ValueError(f"source {path!r} is not a regular file")
    kind = _file_kind(path)
    require("pyarrow", "read_click_log on a file")
    if kind == "parquet":
        import pyarrow.parquet as pq

        if wanted is None:
            return pq.read_table(path)
        names = set(pq.read_schema(path).names)
        return pq.read_table(path, columns=[c for c in wanted if c in names])  # only the columns asked for
    import pyarrow.csv as pcsv

    return pcsv.read_csv(path)


class _Table:
    """Column access to a pandas DataFrame or a pyarrow Table."""

    def __init__(self, source: Any, wanted: list) -> None:
        if isinstance(source, (str, os.PathLike, bytes)):
            source = read_log_file(source, wanted)
        if hasattr(source, "column_names") and hasattr(source, "column"):  # pyarrow.Table
            self.names = list(source.column_names)
            self._get = lambda name: (np.asarray(source.column(name).to_numpy()),
                                      np.asarray(source.column(name).is_null().to_numpy()))
            self.n_rows = int(source.num_rows)
        elif hasattr(source, "columns") and hasattr(source, "isna") and hasattr(source, "iloc"):  # DataFrame
            self.names = [c for c in source.columns]
            self._get = lambda name: (np.asarray(source[name].to_numpy()), np.asarray(source[name].isna().to_numpy()))
            self.n_rows = int(len(source))
        else:
            raise TypeError("source must be a pandas DataFrame, a pyarrow Table or the path of a Parquet or CSV "
                            f"file, got {type(source).__name__}")
        if len(set(self.names)) != len(self.names):
            raise ValueError("source has two columns of the same name")

    def column(self, name: str, arg: str) -> np.ndarray:
        if not isinstance(name, str):
            raise TypeError(f"{arg} must be a column name (str), got {type(name).__name__}")
        if name not in self.names:
            raise ValueError(f"{arg}: the table has no column {name!r}; its columns: {', '.join(map(str, self.names))}")
        values, null = self._get(name)
        if null.any():
            raise ValueError(f"{arg}: column {name!r} has a missing value at row {int(np.argmax(null))}")
        if values.ndim != 1:
            raise ValueError(f"{arg}: column {name!r} must hold one value per row")
        return values


# ------------------------------------------------------------------------------------------------
# columns into arrays
# ------------------------------------------------------------------------------------------------
def _ids(values: np.ndarray, name: str, arg: str) -> tuple:
    """(code per row, the distinct ids in sorted order) of an id column: integers or strings."""
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise ValueError(f"{arg}: column {name!r} has a non-finite id at row {int(np.argmin(np.isfinite(values)))}")
    if values.dtype.kind not in "iufUSO":
        raise TypeError(f"{arg}: column {name!r} must hold integer or string ids, got dtype {values.dtype}")
    try:
        uniq, code = np.unique(values, return_inverse=True)
    except TypeError:  # an object column mixing, say, numbers and strings
        raise TypeError(f"{arg}: column {name!r} mixes id types (e.g. numbers and strings)") from None
    return code.reshape(-1).astype(np.int64), uniq


def _clicks(values: np.ndarray, name: str) -> np.ndarray:
    if values.dtype.kind not in "biuf":
        raise TypeError(f"click: column {name!r} must hold clicks 0 / 1, got dtype {values.dtype}")
    out = values.astype(np.float64)
    bad = np.flatnonzero((out != 0.0) & (out != 1.0))
    if bad.size:
        raise ValueError(f"click: column {name!r} must hold clicks 0 or 1; found {values[bad[0]]} at row {int(bad[0])}")
    return out


def _features(table: _Table, features: Any, taken: dict) -> np.ndarray:
    if isinstance(features, (str, bytes)) or not isinstance(features, Sequence) or len(features) == 0:
        raise TypeError("features must be a non-empty list of column names")
    if len(set(features)) != len(features):
        raise ValueError("features names a column twice")
    for f in features:
        if f in taken:
            raise ValueError(f"features: column {f!r} is the {taken[f]} column; a feature cannot be it")
    X = np.empty((table.n_rows, len(features)), dtype=np.float64)
    for j, f in enumerate(features):
        values = table.column(f, "features")
        if values.dtype.kind not in "biuf":
            raise TypeError(f"features: column {f!r} must be numeric, got dtype {values.dtype}")
        X[:, j] = values
        bad = np.flatnonzero(~np.isfinite(X[:, j]))
        if bad.size:
            raise ValueError(f"features: column {f!r} holds {X[bad[0], j]} at row {int(bad[0])}; features must be finite")
    return X


def _logger_columns(table: _Table, names: dict, order: np.ndarray, ptr: np.ndarray) -> dict:
    """The logger's columns (issue 43: ``ranker``, ``randomised``, ``logging_prob``), checked, in the
    sessions' row order: ranker ids integers >= 0 and randomisation markers 0 / 1 (booleans), each the
    same on every row of a session; logging probabilities in (0, 1]."""
    out: dict = {}
    for arg, name in names.items():
        values = table.column(name, arg)[order]
        if arg == "logging_prob":
            v = values.astype(np.float64) if values.dtype.kind in "iuf" else None
            bad = np.flatnonzero(~((v > 0.0) & (v <= 1.0))) if v is not None else np.zeros(1, dtype=np.int64)
            if bad.size:
                raise ValueError(f"logging_prob: column {name!r} must hold probabilities in (0, 1]; found "
                                 f"{values[bad[0]]!r} at row {int(order[bad[0]])}")
            out["logging_prob"] = v
            continue
        if values.dtype.kind not in "biu" and not (values.dtype.kind == "f" and np.all(values == np.floor(values))):
            raise TypeError(f"{arg}: column {name!r} must hold integers, got dtype {values.dtype}")
        v = values.astype(np.int64)
        bad = np.flatnonzero((v < 0) | ((v > 1) if arg == "randomised" else False))
        if bad.size:
            raise ValueError(f"{arg}: column {name!r} must hold {'0 / 1' if arg == 'randomised' else 'ids >= 0'}; "
                             f"found {values[bad[0]]} at row {int(order[bad[0]])}")
        mixed = np.flatnonzero(np.maximum.reduceat(v, ptr[:-1]) != np.minimum.reduceat(v, ptr[:-1]))
        if mixed.size:
            raise ValueError(f"{arg}: column {name!r} differs within session {int(mixed[0])}: one value per session")
        out["randomised" if arg == "randomised" else "ranker_id"] = v.astype(bool) if arg == "randomised" else v
    return out


def _describe(query_ids, session_ids, has_session, s) -> str:
    def plain(v):  # numpy scalars print as np.int64(3) otherwise
        return repr(v.item() if isinstance(v, np.generic) else v)

    return f"query {plain(query_ids[s])}, session {plain(session_ids[s])}" if has_session else \
        f"query {plain(query_ids[s])}"


# ------------------------------------------------------------------------------------------------
# the reader
# ------------------------------------------------------------------------------------------------
def read_click_log(source: Any, *, query: str, position: str, click: str, features: Sequence[str],
                   session: Optional[str] = None, first_position: int, document: Optional[str] = None,
                   ranker: Optional[str] = None, randomised: Optional[str] = None,
                   logging_prob: Optional[str] = None) -> ClickData:
    """Read a click log table into customobj's layout: sessions grouped, rows in display order,
    positions renumbered from 0.

    Each session (the rows of one ``query`` id, or of one ``(query, session)`` pair) is one query
    group; sessions come in sorted order of their ids, rows within a session by position. The
    positions of a session must be exactly ``first_position, first_position + 1, ...`` (one row
    per position shown, none missing); they become ``0, 1, ...`` (0 = top).

    Parameters
    ----------
    source : pandas.DataFrame, pyarrow.Table, or path
        A table, or a Parquet (``.parquet``, ``.pq``) or CSV (``.csv``, ``.csv.gz``, ``.csv.bz2``)
        file, read with pyarrow (``pip install 'customobj[parquet]'``); a path must be a regular file.
    query, position, click : str
        Column names: the query id (integers or strings), the display position (integers), the click
        (0 / 1 or booleans).
    features : list of str
        The feature columns (numeric, finite), in the order of ``X``'s columns.
    session : str, optional
        The session id column: the same query shown to several users is several sessions. Without
        it every query id is one session.
    first_position : int >= 0
        The number the top position carries in the table: 1 for most logs, 0 for customobj's own.
        No default: a wrong guess would shift every position silently.
    document : str, optional
        The document id column (integers or strings): the same document under the same query in
        two logs is the same query-document pair (intervention harvesting).
    ranker, randomised, logging_prob : str, optional
        The logger's columns (``estimate_trust``, ``dr_data``): the id (integer >= 0) of the ranker
        that logged each session, its randomisation marker (0 / 1: an intervention shuffled or
        swapped the session), each the same on every row of a session; and each row's probability
        (in (0, 1]) that the logging policy put its document at its position.

    Returns
    -------
    ClickData
        :class:`customobj.clicks.reader.ClickData`: ``X``, ``y``, ``group``, ``position`` (what the
        click methods take), ``query`` and ``session`` (each session's ids), ``row`` (the table's row).

    Raises
    ------
    ValueError
        Naming the column: a missing column or value, a click not 0 / 1, a non-finite feature, a
        position below ``first_position`` or not an integer, a position twice in one session, a
        gap in a session's positions, a session with one row (no pair to learn from).

    Examples
    --------
    >>> import pandas as pd
    >>> from customobj.data import read_click_log
    >>> table = pd.DataFrame({"qid": [7, 7, 7, 3, 3], "rank": [2, 1, 3, 2, 1], "clicked": [1, 0, 0, 0, 1],
    ...                       "bm25": [0.5, 0.9, 0.1, 0.3, 0.7]})
    >>> d = read_click_log(table, query="qid", position="rank", click="clicked", features=["bm25"],
    ...                    first_position=1)
    >>> d.group.tolist(), d.position.tolist(), d.y.tolist(), d.query.tolist()
    ([2, 3], [0, 1, 0, 1, 2], [1.0, 0.0, 0.0, 1.0, 0.0], [3, 7])
    """
    first = check_int(first_position, "first_position", minimum=0, maximum=MAX_POSITION)
    named = {"query": query, "position": position, "click": click}
    if session is not None:
        named["session"] = session
    if document is not None:
        named["document"] = document
    logger = {a: n for a, n in (("ranker", ranker), ("randomised", randomised), ("logging_prob", logging_prob))
              if n is not None}
    named.update(logger)
    table = _Table(source, [*named.values(), *(features if isinstance(features, Sequence) else [])])
    taken: dict = {}
    for arg, name in named.items():
        table.column(name, arg)  # type and existence, with the argument named
        if name in taken:
            raise ValueError(f"{arg}: column {name!r} is already the {taken[name]} column")
        taken[name] = arg
    q_code, q_ids = _ids(table.column(query, "query"), query, "query")
    if session is None:
        s_code, s_ids = q_code, q_ids
    else:
        s_code, s_ids = _ids(table.column(session, "session"), session, "session")
    pos = _int_array(table.column(position, "position"), f"position: column {position!r}", minimum=first)
    y = _clicks(table.column(click, "click"), click)
    X = _features(table, features, taken)
    if table.n_rows == 0:
        raise ValueError("source has no row")

    order = np.lexsort((pos, s_code, q_code))  # by query, session, then position
    key_q, key_s, p = q_code[order], s_code[order], pos[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (key_q[1:] != key_q[:-1]) | (key_s[1:] != key_s[:-1])
    starts = np.flatnonzero(new)
    ptr = np.append(starts, order.size).astype(np.int64)
    sizes = np.diff(ptr)
    query_ids, session_ids = q_ids[key_q[starts]], s_ids[key_s[starts]]
    expected = row_order_positions(ptr) + first
    wrong = np.flatnonzero(p != expected)
    if wrong.size:  # the first row whose position is not the next one of its session
        r = int(wrong[0])
        s = int(np.searchsorted(ptr, r, side="right") - 1)
        where = _describe(query_ids, session_ids, session is not None, s)
        shown = p[ptr[s]:ptr[s + 1]].tolist()
        if r > ptr[s] and p[r] == p[r - 1]:
            raise ValueError(f"position: {where} shows position {p[r]} twice (column {position!r}: {shown}); "
                             f"each position of a session must be one row")
        raise ValueError(f"position: {where} has positions {shown} (column {position!r}): position {expected[r]} is "
                         f"missing; a session's positions must run {first}, {first + 1}, ... without a gap "
                         "(is first_position right?)")
    if sizes.max() > MAX_POSITION:
        raise ValueError(f"position: a session shows {sizes.max()} rows, more than MAX_POSITION = {MAX_POSITION}")
    single = np.flatnonzero(sizes == 1)
    if single.size:
        where = _describe(query_ids, session_ids, session is not None, int(single[0]))
        raise ValueError(f"{'session' if session is not None else 'query'}: {where} has one row, so its click "
                         f"compares with nothing; {single.size} such session(s): drop them from the table")
    doc = None
    if document is not None:
        d_code, d_ids = _ids(table.column(document, "document"), document, "document")
        doc = d_ids[d_code[order]]
    return ClickData(np.ascontiguousarray(X[order]), y[order], sizes, row_order_positions(ptr), query_ids,
                     session_ids, order.astype(np.int64), doc, **_logger_columns(table, logger, order, ptr))
