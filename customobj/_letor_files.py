"""Reading LETOR / SVMlight files: bytes in, checked CSR arrays out (the Python side of the parser).

``customobj.data.load_letor`` and ``load_letor_folds`` are the public entry points; this module
holds what they share: format detection (plain text or gzip, nothing else), the numba parse
(``customobj._letor_parser``), the exact Python fallback for long numbers, query structure from
``qid:`` tokens or a LightGBM ``.query`` file, and the memory guard of the dense matrix. Every
problem is a ``ValueError`` naming the file and, for a line's content, its line and column.
"""
from __future__ import annotations

import gzip
import os
import zlib
from typing import Any, NamedTuple

import numpy as np

from . import _letor_parser as _p
from ._io import read_regular_file

_ERRORS = {
    _p.BAD_LABEL: "the label is not a number",
    _p.BAD_QID: "bad qid token (expected qid:<integer> with at most 18 digits)",
    _p.MISSING_QID: "line has no qid but earlier lines have one",
    _p.UNEXPECTED_QID: "line has a qid but earlier lines have none",
    _p.BAD_INDEX: "bad feature token (expected <index>:<value>; a qid must directly follow the label)",
    _p.BAD_VALUE: "feature value is not a number",
    _p.DUPLICATE_INDEX: "the same feature index appears twice",
    _p.INDEX_TOO_LARGE: "feature index exceeds n_features",
    _p.INDEX_ZERO: "feature index 0 (LETOR feature indices start at 1)",
    _p.LABEL_NOT_FINITE: "the label must be finite",
}

# Leading bytes of formats people mistake for a LETOR file (only plain text and gzip are read).
_OTHER_FORMATS = (
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"PK\x03\x04", "zip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"\xff\xfe", "UTF-16 text"),
    (b"\xfe\xff", "UTF-16 text"),
)


#: Average line length (bytes) below which the row arrays are sized by an exact count of data lines
#: rather than by newlines (32 bytes of row arrays per newline: this caps them at the file's size).
#: LETOR lines are hundreds of bytes long, so real files keep the fast count.
SHORT_LINE = 32


def read_bytes(path: str) -> bytes:
    """The file's text as bytes: gzip is detected from the content, other binary formats refused."""
    raw = read_regular_file(path, reader="load_letor")  # a FIFO would block, /dev/zero never end
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
            raise ValueError(f"{path}: not a valid gzip file ({exc})") from None
    for magic, name in _OTHER_FORMATS:
        if raw.startswith(magic):
            raise ValueError(f"{path}: this is a {name} file; load_letor reads plain text (ASCII/UTF-8) or gzip")
    if raw[:3] == b"\xef\xbb\xbf":  # UTF-8 byte-order mark written by some editors
        raw = raw[3:]
    nul = raw.find(b"\x00")
    if nul >= 0:  # a text file never holds NUL; without this, binary data reads as "label is not a number"
        line, col = line_and_column(raw, nul)
        raise ValueError(f"{path}: line {line}, column {col}: a NUL byte: this is not a text file")
    return raw


def line_and_column(raw: bytes, pos: int) -> tuple[int, int]:
    """1-based (line, column) of byte offset ``pos`` (the column counts bytes)."""
    start = raw.rfind(b"\n", 0, pos) + 1
    return raw.count(b"\n", 0, pos) + 1, pos - start + 1


def _line_text(raw, line):
    """The text of 1-based ``line`` (for error messages), shortened."""
    lines = raw.split(b"\n", line)
    text = lines[line - 1] if len(lines) >= line else b""
    text = text.decode("utf-8", "replace").rstrip("\r")
    return text if len(text) <= 80 else text[:77] + "..."


def _where(path, raw, pos, line):
    if pos < 0:
        return f"{path}: line {line}"
    line, col = line_and_column(raw, pos)
    return f"{path}: line {line}, column {col}"


class Parsed(NamedTuple):
    """One file parsed into CSR arrays, before the dense/sparse matrix is made."""

    path: str
    labels: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    max_index: int
    max_where: str  # "path: line L, column C" of the largest feature index ("" when none)
    group: object
    qid: object


def parse_file(path: str | os.PathLike[str], *, n_features: int | None = None,
               query_file: str | os.PathLike[str] | None = None) -> Parsed:
    """Parse and check one file; raises ``ValueError`` naming file, line and column."""
    path = os.fspath(path)
    raw = read_bytes(path)
    buf = np.frombuffer(raw, dtype=np.uint8)
    n_newlines, n_colons = _p.count_bytes(buf)
    n_rows_max = n_newlines + 1
    if n_rows_max > buf.size // SHORT_LINE:  # short lines on average: count the data lines exactly
        n_rows_max = _p.count_data_lines(buf)
    limit = -1 if n_features is None else n_features
    cap = 1024
    while True:
        (labels, qids, indptr, indices, values, row_line, n_rows, nnz, max_index, max_pos, has_qid,
         fallback, n_fb, err, err_line, err_pos) = _p.parse_letor(buf, n_rows_max, n_colons, limit, cap)
        if err != _p.OK:
            what = _ERRORS[err]
            if err == _p.INDEX_TOO_LARGE:
                what = f"feature index exceeds n_features={n_features}" if n_features is not None else \
                    f"feature index above the supported maximum {_p.MAX_INDEX}"
            raise ValueError(f"{_where(path, raw, err_pos, err_line)}: {what}: {_line_text(raw, err_line)!r}")
        if n_fb <= cap:
            break
        cap = int(n_fb)  # many tokens need Python's float: parse again with room for all of them
    if n_rows == 0:
        raise ValueError(f"{path}: no data rows (the file is empty or holds only blank and comment lines)")
    if n_fb:
        _apply_fallback(path, raw, fallback[:n_fb], labels, values)
    labels = labels[:n_rows].copy()
    row_line = row_line[:n_rows]
    indptr = indptr[: n_rows + 1].copy()
    indices = indices[:nnz].copy()
    values = values[:nnz].copy()
    qid = group = None
    side_file = _find_query_file(path) if query_file is None else os.fspath(query_file)
    if has_qid == 1:
        qid = qids[:n_rows].copy()
        group = _groups_from_qid(path, qid, row_line)
        if query_file is not None:
            raise ValueError(f"{path} has qid: tokens; do not pass query_file= as well")
        if side_file is not None:
            sizes = _read_query_file(side_file, n_rows)
            if not np.array_equal(sizes, group):
                raise ValueError(f"{path}: query sizes from the qid: tokens disagree with {side_file}")
    elif side_file is not None:
        group = _read_query_file(side_file, n_rows)
        qid = np.repeat(np.arange(group.size, dtype=np.int64), group)
    max_where = _where(path, raw, int(max_pos), 0) if max_pos >= 0 else ""
    return Parsed(path, labels, indptr, indices, values, int(max_index), max_where, group, qid)


def _apply_fallback(path, raw, fallback, labels, values):
    """Parse with Python's ``float`` the tokens the kernel left (long mantissas, big exponents, words)."""
    kind, pos, start, end, line = fallback.T
    plain = kind < _p.FB_SPECIAL  # decimal tokens the kernel already validated
    for label, mask in ((True, plain & (kind == _p.FB_LABEL)), (False, plain & (kind == _p.FB_VALUE))):
        if mask.any():
            parsed = np.array([float(raw[a:b]) for a, b in zip(start[mask].tolist(), end[mask].tolist())])
            if label:
                bad = np.flatnonzero(~np.isfinite(parsed))
                if bad.size:  # e.g. 1e400
                    k = np.flatnonzero(mask)[bad[0]]
                    token = raw[start[k]:end[k]].decode("utf-8", "replace")
                    raise ValueError(f"{_where(path, raw, int(start[k]), 0)}: the label must be finite, got {token!r}")
                labels[pos[mask]] = parsed
            else:
                # X is float32: a finite value that rounds beyond its range would silently become inf
                with np.errstate(over="ignore"):
                    cast = parsed.astype(np.float32)
                bad = np.flatnonzero(np.isinf(cast))  # parsed is finite here: the words went to `special`
                if bad.size:  # e.g. 1e39
                    k = np.flatnonzero(mask)[bad[0]]
                    token = raw[start[k]:end[k]].decode("utf-8", "replace")
                    raise ValueError(f"{_where(path, raw, int(start[k]), 0)}: feature value {token!r} is beyond the "
                                     "float32 range of X (|x| <= 3.4e38); write inf if that is what it means")
                values[pos[mask]] = cast
    special = ~plain  # nan / inf feature values (the kernel checked the words)
    if special.any():
        values[pos[special]] = [float(raw[a:b]) for a, b in zip(start[special].tolist(), end[special].tolist())]


def _groups_from_qid(path, qid, row_line):
    starts = np.concatenate(([0], np.flatnonzero(qid[1:] != qid[:-1]) + 1))
    firsts = qid[starts]
    order = np.argsort(firsts, kind="stable")
    repeat = firsts[order][1:] == firsts[order][:-1]
    if repeat.any():
        # among repeated blocks, report the earliest one in the file
        later = order[1:][repeat]
        block = int(later.min())
        earlier = int(order[np.searchsorted(firsts[order], firsts[block])])
        raise ValueError(
            f"{path}: line {row_line[starts[block]]}: qid {int(firsts[block])} reappears after another query "
            f"(first seen at line {row_line[starts[earlier]]}); rows of a query must be contiguous: "
            "sort the file by qid (a stable sort keeps each query's row order)"
        )
    return np.diff(np.append(starts, qid.size)).astype(np.int64)


def _find_query_file(path):
    base = path[:-3] if path.endswith(".gz") else path
    for cand in dict.fromkeys((path + ".query", base + ".query", base + ".query.gz")):
        if os.path.isfile(cand):
            return cand
    return None


def _read_query_file(qpath, n_rows):
    text = read_bytes(qpath).decode("ascii", "replace")
    sizes = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if not s.isdigit() or len(s) > 18:  # 18 digits always fit int64
            raise ValueError(f"{qpath}: line {lineno}: expected a non-negative query size, got {s!r}")
        sizes.append(int(s))
    sizes = np.asarray(sizes, dtype=np.int64)
    total = sum(sizes.tolist())  # Python ints: the sum cannot wrap
    if total != n_rows:
        raise ValueError(f"{qpath}: query sizes sum to {total} but the data file has {n_rows} rows")
    return sizes


def physical_memory() -> int | None:
    """Bytes of RAM of this machine, or None where the OS does not say."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def check_dense(n_rows: int, width: int, *, max_features: int, because: str, memory: int | None = None) -> None:
    """Refuse a dense float32 ``n_rows x width`` matrix wider than ``max_features`` or larger than RAM.

    ``because`` says where the width comes from (the largest index of a file, or ``n_features=``).
    """
    nbytes = 4 * n_rows * width
    size = f"{n_rows:,} rows x {width:,} columns of float32 = {nbytes / 1e9:.3g} GB"
    if width > max_features:
        raise ValueError(
            f"{because} makes a dense X of {size}, wider than max_features={max_features:,} "
            "(customobj.data.MAX_DENSE_FEATURES by default): pass sparse=True to get a CSR matrix that "
            "stores only the values present, or a larger max_features= if you want the dense matrix")
    memory = physical_memory() if memory is None else memory
    if memory is not None and nbytes > memory:
        raise MemoryError(f"{because} makes a dense X of {size}, more than this machine's "
                          f"{memory / 1e9:.3g} GB of RAM: pass sparse=True")


def to_matrix(parsed: Parsed, n_cols: int, sparse: bool) -> Any:
    """``X`` of one parsed file: float32 CSR, or dense after :func:`check_dense` passed."""
    n_rows = parsed.labels.size
    if sparse:
        import scipy.sparse as sp

        X = sp.csr_matrix((parsed.values, parsed.indices, parsed.indptr), shape=(n_rows, n_cols))
        if not X.has_sorted_indices:
            X.sort_indices()
        return X
    try:
        X = np.zeros((n_rows, n_cols), dtype=np.float32)
    except MemoryError:
        raise MemoryError(f"{parsed.path}: cannot allocate a dense X of {n_rows:,} x {n_cols:,} float32 "
                          f"({4 * n_rows * n_cols / 1e9:.3g} GB): pass sparse=True") from None
    _p.csr_fill_dense(parsed.indptr, parsed.indices, parsed.values, X)
    return X
