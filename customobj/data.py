"""Learning-to-rank data: LETOR / SVMlight files and a LETOR-like synthetic generator.

``load_letor`` reads ``<label> [qid:<q>] <j>:<v> ... [# comment]`` lines (plain or gzip) with a numba
parser (``customobj._letor_parser``); ``load_letor_folds`` reads a ``Fold1..Fold5`` tree;
``synthetic`` makes graded, query-structured data with a non-linear relevance function.
"""
from __future__ import annotations

import gzip
import os
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba import njit

from . import _letor_parser as _p
from ._validation import check_int, check_nonnegative

__all__ = ["LetorData", "LetorFold", "load_letor", "load_letor_folds", "synthetic"]


class _LetorFields(NamedTuple):
    X: object
    y: np.ndarray
    group: object


class LetorData(_LetorFields):
    """``(X, y, group)``: features, graded labels (float64) and int64 query sizes.

    Unpacks as a 3-tuple. The per-row query ids are kept in the attribute ``qid`` (int64; for data
    whose groups came from a LightGBM ``.query`` file they are ``0, 1, 2, ...`` per query).
    ``group`` and ``qid`` are ``None`` for a file with neither qids nor a query file.
    """

    qid = None  # default for instances made by tuple machinery (``_make``)

    def __new__(cls, X, y, group, qid=None):
        self = super().__new__(cls, X, y, group)
        self.qid = qid
        return self

    def __getnewargs__(self):
        return (*tuple(self), self.qid)

    def _replace(self, **kwargs):
        qid = kwargs.pop("qid", self.qid)
        return LetorData(*super()._replace(**kwargs), qid=qid)

    @property
    def n_features(self):
        return int(self.X.shape[1])

    def __repr__(self):
        ng = "None" if self.group is None else len(self.group)
        kind = "csr" if not isinstance(self.X, np.ndarray) else "dense"
        return f"LetorData(n_rows={self.X.shape[0]}, n_features={self.X.shape[1]}, n_queries={ng}, X={kind})"


class LetorFold(NamedTuple):
    """One cross-validation fold: its number and the three splits."""

    fold: int
    train: LetorData
    vali: LetorData
    test: LetorData


_ERRORS = {
    _p.BAD_LABEL: "the label is not a number",
    _p.BAD_QID: "bad qid token (expected qid:<integer>)",
    _p.MISSING_QID: "line has no qid but earlier lines have one",
    _p.UNEXPECTED_QID: "line has a qid but earlier lines have none",
    _p.BAD_INDEX: "bad feature token (expected <index>:<value>; a qid must directly follow the label)",
    _p.BAD_VALUE: "feature value is not a number",
    _p.DUPLICATE_INDEX: "the same feature index appears twice",
    _p.INDEX_TOO_LARGE: "feature index exceeds n_features",
    _p.INDEX_ZERO: "feature index 0 (LETOR feature indices start at 1)",
    _p.LABEL_NOT_FINITE: "the label must be finite",
}


def _read_bytes(path):
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ValueError(f"{path}: not a valid gzip file ({exc})") from None
    if raw[:3] == b"\xef\xbb\xbf":  # UTF-8 byte-order mark written by some editors
        raw = raw[3:]
    return raw


def _line_text(buf, line):
    """The text of 1-based ``line`` (for error messages), shortened."""
    lines = bytes(buf).split(b"\n", line)
    text = lines[line - 1] if len(lines) >= line else b""
    text = text.decode("utf-8", "replace").rstrip("\r")
    return text if len(text) <= 80 else text[:77] + "..."


class _Parsed(NamedTuple):
    path: str
    labels: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    max_index: int
    group: object
    qid: object


def _parse_file(path, *, n_features=None, query_file=None):
    path = os.fspath(path)
    raw = _read_bytes(path)
    buf = np.frombuffer(raw, dtype=np.uint8)
    n_newlines, n_colons = _p.count_bytes(buf)
    limit = -1 if n_features is None else n_features
    cap = 1024
    while True:
        (labels, qids, indptr, indices, values, row_line, n_rows, nnz, max_index, has_qid,
         fallback, n_fb, err, err_line) = _p.parse_letor(buf, n_newlines + 1, n_colons, limit, cap)
        if err != _p.OK:
            what = _ERRORS[err]
            if err == _p.INDEX_TOO_LARGE:
                what = f"feature index exceeds n_features={n_features}" if n_features is not None else \
                    f"feature index above the supported maximum {_p.MAX_INDEX}"
            raise ValueError(f"{path}: line {err_line}: {what}: {_line_text(buf, err_line)!r}")
        if n_fb <= cap:
            break
        cap = int(n_fb)  # many tokens need Python's float: parse again with room for all of them
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
    elif n_rows == 0:
        group = np.zeros(0, dtype=np.int64)
        qid = np.zeros(0, dtype=np.int64)
    return _Parsed(path, labels, indptr, indices, values, int(max_index), group, qid)


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
                    raise ValueError(f"{path}: line {line[k]}: the label must be finite, got {token!r}")
                labels[pos[mask]] = parsed
            else:
                with np.errstate(over="ignore"):  # beyond float32 range: inf, as the kernel's cast
                    values[pos[mask]] = parsed.astype(np.float32)
    special = ~plain  # nan / inf feature values (the kernel checked the words)
    if special.any():
        values[pos[special]] = [float(raw[a:b]) for a, b in zip(start[special].tolist(), end[special].tolist())]


def _groups_from_qid(path, qid, row_line):
    if qid.size == 0:
        return np.zeros(0, dtype=np.int64)
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
    text = _read_bytes(qpath).decode("ascii", "replace")
    sizes = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if not s.isdigit():
            raise ValueError(f"{qpath}: line {lineno}: expected a non-negative query size, got {s!r}")
        sizes.append(int(s))
    sizes = np.asarray(sizes, dtype=np.int64)
    if int(sizes.sum()) != n_rows:
        raise ValueError(f"{qpath}: query sizes sum to {int(sizes.sum())} but the data file has {n_rows} rows")
    return sizes


def _finish(parsed, n_cols, sparse):
    n_rows = parsed.labels.size
    if sparse:
        import scipy.sparse as sp

        X = sp.csr_matrix((parsed.values, parsed.indices, parsed.indptr), shape=(n_rows, n_cols))
        if not X.has_sorted_indices:
            X.sort_indices()
    else:
        X = _p.csr_to_dense(parsed.indptr, parsed.indices, parsed.values, n_rows, n_cols)
    return LetorData(X, parsed.labels, parsed.group, qid=parsed.qid)


def load_letor(path, *, sparse=False, n_features=None, query_file=None):
    """Read a LETOR / SVMlight ranking file (plain or gzip) into ``LetorData(X, y, group)``.

    Lines are ``<label> [qid:<q>] <j>:<v> ... [# comment]``; feature ``j`` (1-based, as in LETOR)
    goes to column ``j - 1``; absent features are 0 in the dense matrix and absent from the CSR one.
    Blank and comment-only lines are ignored; anything else malformed raises ``ValueError`` naming the
    file and the 1-based line. Queries come from the ``qid:`` tokens (each query's rows must be
    contiguous) or, for files without qids, from a LightGBM query file: ``query_file=`` or
    ``<path>.query[.gz]`` beside the data (``rank.train.gz`` also finds ``rank.train.query[.gz]``).

    Parameters
    ----------
    path : str or path-like. ``.gz`` is detected from the content.
    sparse : return ``X`` as a float32 ``scipy.sparse.csr_matrix`` instead of a dense float32 array.
    n_features : width of ``X``; a larger index in the file is an error. Default: the largest index.
    query_file : explicit LightGBM query file (one query size a line).

    Returns
    -------
    LetorData with ``X`` float32, ``y`` float64, ``group`` int64 query sizes (or ``None`` without
    any query information) and the per-row ``qid`` attribute. Values equal ``float(token)`` (cast to
    float32 for ``X``).
    """
    n_features = check_int(n_features, "n_features", minimum=0, allow_none=True)
    parsed = _parse_file(path, n_features=n_features, query_file=query_file)
    return _finish(parsed, parsed.max_index if n_features is None else n_features, sparse)


def _split_file(folder, name):
    for cand in (folder / f"{name}.txt", folder / f"{name}.txt.gz"):
        if cand.is_file():
            return cand
    return None


def load_letor_folds(path, folds=None, *, sparse=False, n_features=None):
    """Read ``<path>/Fold<k>/{train,vali,test}.txt[.gz]`` into a list of ``LetorFold``.

    ``folds``: fold numbers to read (default: every ``Fold<k>`` present, in order). Within a fold the
    three splits share one width (the largest feature index of the three, or ``n_features``).
    """
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory")
    present = sorted(int(m.group(1)) for d in root.iterdir()
                     if d.is_dir() and (m := re.fullmatch(r"Fold(\d+)", d.name)))
    layout = f"expected {root}/Fold<k>/{{train,vali,test}}.txt[.gz]"
    if folds is None:
        if not present:
            hint = " (it holds train files itself: use load_letor on them)" if _split_file(root, "train") else ""
            raise ValueError(f"no Fold<k> subfolders in {root}{hint}; {layout}")
        folds = present
    else:
        folds = [check_int(f, "folds[]", minimum=1) for f in folds]
        missing = [f for f in folds if f not in present]
        if missing:
            raise ValueError(f"fold(s) {missing} not found in {root} (present: {present}); {layout}")
    n_features = check_int(n_features, "n_features", minimum=0, allow_none=True)
    out = []
    for k in folds:
        folder = root / f"Fold{k}"
        files = {name: _split_file(folder, name) for name in ("train", "vali", "test")}
        lacking = [name for name, f in files.items() if f is None]
        if lacking:
            raise ValueError(f"{folder} lacks {', '.join(n + '.txt[.gz]' for n in lacking)}; {layout}")
        parsed = {name: _parse_file(f, n_features=n_features) for name, f in files.items()}
        width = n_features if n_features is not None else max(p.max_index for p in parsed.values())
        out.append(LetorFold(k, *(_finish(parsed[name], width, sparse) for name in ("train", "vali", "test"))))
    return out


# --------------------------------------------------------------------------------------------------
# synthetic LETOR-like data
# --------------------------------------------------------------------------------------------------
@njit(cache=True)
def _synthetic_fill(X, ptr, kinds, qshift, cols, qeff, eps):
    """Relevance of every row from its raw Gaussian features, then the features' observed form.

    Relevance (before query effect and noise) mixes a linear term, a threshold, a product, an AND
    of two thresholds and a non-monotone square, so a linear ranker misses most of it. The observed
    feature is ``kind``-transformed ``z + qshift[q, j]``: 0 Gaussian, 1 squashed to (0, 1), 2 sparse
    non-negative (about 30% non-zero), like LETOR's mix of scores, ratios and counts.
    """
    n_q = ptr.size - 1
    n_f = X.shape[1]
    s = np.empty(X.shape[0], dtype=np.float64)
    for q in range(n_q):
        for r in range(ptr[q], ptr[q + 1]):
            z0 = np.float64(X[r, cols[0]])
            z1 = np.float64(X[r, cols[1]])
            z2 = np.float64(X[r, cols[2]])
            z3 = np.float64(X[r, cols[3]])
            z4 = np.float64(X[r, cols[4]])
            z5 = np.float64(X[r, cols[5]])
            z6 = np.float64(X[r, cols[6]])
            z7 = np.float64(X[r, cols[7]])
            v = 0.6 * z0 + 1.0 * (z1 > 0.5) + 0.8 * z2 * z3 + 0.9 * ((z4 > 0.0) and (z5 > -0.3))
            v += -0.4 * z6 * z6 + 0.5 * np.tanh(2.0 * z7)
            s[r] = v + qeff[q] + eps[r]
            for j in range(n_f):
                z = X[r, j] + qshift[q, j]
                k = kinds[j]
                if k == 1:
                    z = np.float32(1.0) / (np.float32(1.0) + np.exp(np.float32(-1.5) * z))
                elif k == 2:
                    z = max(z - np.float32(0.5), np.float32(0.0))
                X[r, j] = z
    return s


def synthetic(n_queries=200, docs_per_query=40, n_features=20, *, seed=0, max_grade=4, noise=0.5,
              query_effect=0.5, feature_shift=0.3, min_docs=None, grade_ratio=0.45):
    """Deterministic LETOR-like ranking data: ``LetorData(X float32, y float64 grades, group)``.

    Query sizes are ``min_docs + Poisson(lam)`` with ``lam`` gamma-distributed around
    ``docs_per_query - min_docs`` (so the mean is ``docs_per_query``); ``min_docs`` defaults to 2
    (1 when ``docs_per_query < 2``). Each row's relevance is a
    non-linear function of 8 features at seeded random columns (threshold, product, AND, square,
    tanh and a linear term; see ``_synthetic_fill``) plus a per-query offset ``N(0, query_effect)``
    and noise ``N(0, noise)``. Grades ``0..max_grade`` cut the relevance at global quantiles with
    proportions ``grade_ratio**g`` (normalised): most rows 0, few ``max_grade``, and some queries
    without any relevant row, as in real data. Features also get a per-query shift
    ``N(0, feature_shift)`` and three kinds of marginals. Same arguments give the same bytes.
    """
    n_queries = check_int(n_queries, "n_queries", minimum=1)
    n_features = check_int(n_features, "n_features", minimum=1)
    max_grade = check_int(max_grade, "max_grade", minimum=1)
    docs = check_nonnegative(docs_per_query, "docs_per_query")
    if min_docs is None:
        min_docs = 2 if docs >= 2 else 1
    min_docs = check_int(min_docs, "min_docs", minimum=1)
    if docs < min_docs:
        raise ValueError(f"docs_per_query must be >= min_docs={min_docs}, got {docs_per_query}")
    noise = check_nonnegative(noise, "noise")
    query_effect = check_nonnegative(query_effect, "query_effect")
    feature_shift = check_nonnegative(feature_shift, "feature_shift")
    grade_ratio = check_nonnegative(grade_ratio, "grade_ratio")
    if not 0 < grade_ratio <= 1:
        raise ValueError(f"grade_ratio must be in (0, 1], got {grade_ratio}")
    rng = np.random.default_rng(seed)
    lam = (docs - min_docs) * rng.gamma(4.0, 0.25, n_queries)
    sizes = (min_docs + rng.poisson(lam)).astype(np.int64)
    ptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    n = int(ptr[-1])
    cols = rng.permutation(n_features)[np.arange(8) % n_features].astype(np.int64)
    kinds = rng.integers(0, 3, n_features).astype(np.int64)
    qeff = rng.normal(0.0, query_effect, n_queries)
    qshift = (rng.standard_normal((n_queries, n_features), dtype=np.float32) * np.float32(feature_shift))
    X = rng.standard_normal((n, n_features), dtype=np.float32)
    eps = rng.normal(0.0, noise, n)
    s = _synthetic_fill(X, ptr, kinds, qshift, cols, qeff, eps)
    props = grade_ratio ** np.arange(max_grade + 1)
    cuts = np.quantile(s, np.cumsum(props / props.sum())[:-1]) if n else np.zeros(max_grade)
    y = np.searchsorted(cuts, s, side="right").astype(np.float64)
    qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
    return LetorData(X, y, sizes, qid=qid)
