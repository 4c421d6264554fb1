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
from ._label_columns import check_column_names, check_label_names, label_columns

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
    labels: Optional[np.ndarray] = None  # (rows, k): the further label columns (``labels=``), for MultiObjective


# ------------------------------------------------------------------------------------------------
# the table: column name -> (values, null mask)
# ------------------------------------------------------------------------------------------------
def _file_kind(path: str) -> str:
    lower = path.lower()
    for suffix, kind in sorted(CLICK_LOG_SUFFIXES.items(), key=lambda kv: -len(kv[0])):
        if lower.endswith(suffix):
            return kind
    raise ValueError(f"source {path!r}: read_click_log reads {', '.join(CLICK_LOG_SUFFIXES)} files")


def _file_type(mode: int) -> str:
    """What a path that is not a regular file is, in words."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def read_log_file(source: Any, wanted: Optional[list] = None) -> Any:
    """The pyarrow Table of a Parquet or CSV click-log file (checked to be a regular file with a known
    suffix); of a Parquet file only the ``wanted`` columns that exist, all of them for None."""
    path = os.fspath(source)
    if isinstance(path, bytes):
        raise TypeError("source must be a str or os.PathLike path, a pandas DataFrame or a pyarrow Table, got bytes")
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ValueError(f"source {path!r} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):  # a directory, FIFO or device would hang or read garbage
        raise ValueError(f"source {path!r} is not a regular file ({_file_type(info.st_mode)})")
    kind = _file_kind(path)
    require("pyarrow", "read_click_log on a file")
    if info.st_size == 0:
        raise ValueError(f"source {path!r} is empty (0 bytes): no {kind} table in it")
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            if wanted is None:
                return pq.read_table(path)
            names = set(pq.read_schema(path).names)
            return pq.read_table(path, columns=[c for c in wanted if c in names])  # only the columns asked for
        import pyarrow.csv as pcsv

        return pcsv.read_csv(path)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow's ArrowInvalid / OSError: a corrupt file, named here
        text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        raise ValueError(f"source {path!r} cannot be read as a {kind} file (corrupt or not {kind}?): "
                         f"{type(exc).__name__}: {text}") from None


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

    def column(self, name: str, arg: str, *, nulls: bool = False) -> np.ndarray:
        """The column's values; a missing value is refused unless ``nulls`` (the features: NaN)."""
        if not isinstance(name, str):
            raise TypeError(f"{arg} must be a column name (str), got {type(name).__name__}")
        if name not in self.names:
            raise ValueError(f"{arg}: the table has no column {name!r}; its columns: {', '.join(map(str, self.names))}")
        values, null = self._get(name)
        if values.ndim != 1:
            raise ValueError(f"{arg}: column {name!r} must hold one value per row")
        if null.any() and not nulls:
            bad = np.flatnonzero(null)
            raise ValueError(f"{arg}: column {name!r} has a missing value at {_rows(bad)}")
        return values


def _rows(bad: np.ndarray) -> str:
    """``row 4``, or ``rows 4, 9, 17 (3 rows)``: the first few of every row with a defect."""
    if bad.size == 1:
        return f"row {int(bad[0])}"
    more = ", ..." if bad.size > _SHOWN else ""
    return f"rows {', '.join(str(int(r)) for r in bad[:_SHOWN])}{more} ({bad.size} rows)"


#: Rows (or sessions) named per defect; the count says how many there are.
_SHOWN = 5


class _Defects:
    """Every defect of a table, reported together in one error, so that a dirty log is fixed in
    one round: each check runs through :meth:`check`; :meth:`raise_any` raises what was found (one
    defect as its own ValueError / TypeError, several as one ValueError listing them)."""

    def __init__(self) -> None:
        self.found: list = []

    def check(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            self.found.append(exc)
            return None

    def raise_any(self) -> None:
        if len(self.found) == 1:
            raise self.found[0]
        if self.found:
            kind = TypeError if all(isinstance(e, TypeError) for e in self.found) else ValueError
            raise kind(f"the table has {len(self.found)} defects: " +
                       " | ".join(f"({k + 1}) {e}" for k, e in enumerate(self.found)))


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
        raise ValueError(f"click: column {name!r} must hold clicks 0 or 1; found {values[bad[0]]} at {_rows(bad)}")
    return out


def _features(table: _Table, features: Any, taken: dict, defects: _Defects) -> Optional[np.ndarray]:
    """The feature matrix; a missing value (null or NaN) is NaN, LightGBM's and XGBoost's missing value.
    Each bad column is a defect of its own."""
    check_column_names(features, "features", taken, "a feature")
    X = np.empty((table.n_rows, len(features)), dtype=np.float64)
    ok = True
    for j, f in enumerate(features):
        column = defects.check(_feature, table, f, X, j)
        ok = ok and column is not None
    return X if ok else None


def _feature(table: _Table, name: str, X: np.ndarray, j: int) -> bool:
    values, null = table.column(name, "features", nulls=True), None
    if values.dtype.kind == "O":  # pandas' object column of numbers and None: the Nones are missing values
        null = np.array([v is None for v in values])
        values = np.where(null, np.nan, values)
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"features: column {name!r} must be numeric, got dtype object") from None
    if values.dtype.kind not in "biuf":
        raise TypeError(f"features: column {name!r} must be numeric, got dtype {values.dtype}")
    X[:, j] = values
    bad = np.flatnonzero(np.isinf(X[:, j]))
    if bad.size:
        raise ValueError(f"features: column {name!r} holds {X[bad[0], j]} at {_rows(bad)}; a feature must be finite "
                         "or missing (NaN)")
    return True


def _check_positions(p: np.ndarray, ptr: np.ndarray, first: int, column: str, ids: tuple) -> None:
    """Each session's positions (rows sorted) run ``first, first + 1, ...``: the first session that
    does not is described, and how many more do not."""
    expected = row_order_positions(ptr) + first
    wrong = np.flatnonzero(p != expected)
    if not wrong.size:
        return
    bad = np.unique(np.searchsorted(ptr, wrong, side="right") - 1)
    r = int(wrong[0])
    s = int(bad[0])
    where = _where(ids, s)
    shown = p[ptr[s]:ptr[s + 1]].tolist()
    more = "" if bad.size == 1 else (f"; {bad.size} sessions in all, e.g. " +
                                     ", ".join(f"({_where(ids, int(k))})" for k in bad[1:_SHOWN]))
    if r > ptr[s] and p[r] == p[r - 1]:
        raise ValueError(f"position: {where} shows position {p[r]} twice (column {column!r}: {shown}); "
                         f"each position of a session must be one row{more}")
    raise ValueError(f"position: {where} has positions {shown} (column {column!r}): position {expected[r]} is "
                     f"missing; a session's positions must run {first}, {first + 1}, ... without a gap "
                     f"(is first_position right?){more}")


def _where(ids: tuple, s: int) -> str:
    """:func:`_describe` of session ``s``, ``ids`` = (query ids, session ids, has a session column)."""
    return _describe(ids[0], ids[1], ids[2], s)


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
                   logging_prob: Optional[str] = None, labels: Optional[Sequence[str]] = None) -> ClickData:
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
        file, read with pyarrow (``pip install '.[parquet]'``); a path must be a regular file.
    query, position, click : str
        Column names: the query id (integers or strings), the display position (integers), the click
        (0 / 1 or booleans).
    features : list of str
        The feature columns (numeric), in the order of ``X``'s columns. A missing value (null or
        NaN) is NaN in ``X``, the missing value LightGBM, XGBoost and ``TreeBooster`` take; an
        infinite one is refused.
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
    labels : list of str, optional
        Further label columns (a purchase, a dwell time: numeric, finite, >= 0 on every row), returned
        as ``labels`` (rows x k) for ``MultiObjective(..., labels=[None, d.labels[:, 0], ...])``.

    Returns
    -------
    ClickData
        :class:`customobj.clicks.reader.ClickData`: ``X``, ``y``, ``group``, ``position`` (what the
        click methods take), ``query`` and ``session`` (each session's ids), ``row`` (the table's row).

    Raises
    ------
    ValueError
        Naming the column: a missing column, a missing id, position or click, a click not 0 / 1, an
        infinite feature, a position below ``first_position`` or not an integer, a position twice in
        one session, a gap in a session's positions, a session with one row (no pair to learn
        from). Every defect of the table is in the one error, each with its rows (or sessions)
        counted, so that a dirty log is fixed in one round.

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
    label_names = check_label_names(labels, {n: a for a, n in named.items()}, features)
    table = _Table(source, [*named.values(), *(features if isinstance(features, Sequence) else []), *(label_names or [])])
    for arg, name in named.items():
        if not isinstance(name, str):
            raise TypeError(f"{arg} must be a column name (str), got {type(name).__name__}")
    taken: dict = {}
    for arg, name in named.items():
        if name in taken:
            raise ValueError(f"{arg}: column {name!r} is already the {taken[name]} column")
        taken[name] = arg
    defects = _Defects()  # every defect of the table in one error (module doc of _Defects)
    q = defects.check(lambda: _ids(table.column(query, "query"), query, "query"))
    s = q if session is None else defects.check(lambda: _ids(table.column(session, "session"), session, "session"))
    pos = defects.check(lambda: _int_array(table.column(position, "position"), f"position: column {position!r}",
                                           minimum=first))
    y = defects.check(lambda: _clicks(table.column(click, "click"), click))
    X = _features(table, features, taken, defects)
    Y = label_columns(table, label_names, defects, _rows)
    doc_ids = None if document is None else defects.check(
        lambda: _ids(table.column(document, "document"), document, "document"))
    if table.n_rows == 0:
        raise ValueError("source has no row")
    if q is None or s is None or pos is None:  # no sessions to check: report the columns' defects
        defects.raise_any()
    (q_code, q_ids), (s_code, s_ids) = q, s

    order = np.lexsort((pos, s_code, q_code))  # by query, session, then position
    key_q, key_s, p = q_code[order], s_code[order], pos[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (key_q[1:] != key_q[:-1]) | (key_s[1:] != key_s[:-1])
    starts = np.flatnonzero(new)
    ptr = np.append(starts, order.size).astype(np.int64)
    sizes = np.diff(ptr)
    query_ids, session_ids = q_ids[key_q[starts]], s_ids[key_s[starts]]
    ids = (query_ids, session_ids, session is not None)
    defects.check(_check_positions, p, ptr, first, position, ids)
    if sizes.max() > MAX_POSITION:
        defects.found.append(ValueError(f"position: a session shows {sizes.max()} rows, more than MAX_POSITION = "
                                        f"{MAX_POSITION}"))
    single = np.flatnonzero(sizes == 1)
    if single.size:
        where = _where(ids, int(single[0]))
        defects.found.append(ValueError(
            f"{'session' if session is not None else 'query'}: {where} has one row, so its click compares with "
            f"nothing; {single.size} such session(s): drop them from the table"))
    defects.raise_any()
    assert X is not None and y is not None  # what raise_any leaves
    doc = None
    if doc_ids is not None:
        d_code, d_ids = doc_ids
        doc = d_ids[d_code[order]]
    return ClickData(np.ascontiguousarray(X[order]), y[order], sizes, row_order_positions(ptr), query_ids,
                     session_ids, order.astype(np.int64), doc, **_logger_columns(table, logger, order, ptr),
                     labels=None if Y is None else np.ascontiguousarray(Y[order]))
