"""Learning-to-rank data: LETOR / SVMlight files and a LETOR-like synthetic generator.

``load_letor`` reads ``<label> [qid:<q>] <j>:<v> ... [# comment]`` lines (plain or gzip) with a numba
parser (``customobj._letor_parser``); ``load_letor_folds`` reads a ``Fold1..Fold5`` tree;
``synthetic`` makes graded, query-structured data with a non-linear relevance function.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple, Optional

import numpy as np
from numba import njit

from . import _letor_files as _f
from . import _letor_labels as _ll
from . import _letor_parser as _p
from ._validation import check_bool, check_int, check_nonnegative

__all__ = ["LetorData", "LetorFold", "load_letor", "load_letor_folds", "synthetic", "MAX_DENSE_FEATURES",
           "MAX_SYNTHETIC_GRADE", "MAX_SYNTHETIC_SCALE", "SYNTHETIC_TASK_ROWS"]


class _LetorFields(NamedTuple):
    X: Any  # float32 ndarray, or scipy.sparse.csr_matrix with sparse=True
    y: np.ndarray
    group: Optional[np.ndarray]


class LetorData(_LetorFields):
    """``(X, y, group)``: features, graded labels (float64) and int64 query sizes.

    Unpacks as a 3-tuple. The per-row query ids are kept in the attribute ``qid`` (int64; for data
    whose groups came from a LightGBM ``.query`` file they are ``0, 1, 2, ...`` per query).
    ``group`` and ``qid`` are ``None`` for a file with neither qids nor a query file.
    """

    qid: Optional[np.ndarray] = None  # default for instances made by tuple machinery (``_make``)
    #: ``load_letor(label_features=...)``: the moved features' values, one float64 column each
    extra_labels: Optional[np.ndarray] = None

    def __new__(cls, X: Any, y: np.ndarray, group: Optional[np.ndarray], qid: Optional[np.ndarray] = None,
                extra_labels: Optional[np.ndarray] = None) -> LetorData:
        self = super().__new__(cls, X, y, group)
        self.qid = qid
        self.extra_labels = extra_labels
        return self

    def __getnewargs__(self) -> tuple:
        return (*tuple(self), self.qid, self.extra_labels)

    def _replace(self, **kwargs: Any) -> LetorData:
        qid = kwargs.pop("qid", self.qid)
        extra = kwargs.pop("extra_labels", self.extra_labels)
        return LetorData(*super()._replace(**kwargs), qid=qid, extra_labels=extra)

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def __repr__(self) -> str:
        ng = "None" if self.group is None else len(self.group)
        kind = "csr" if not isinstance(self.X, np.ndarray) else "dense"
        return f"LetorData(n_rows={self.X.shape[0]}, n_features={self.X.shape[1]}, n_queries={ng}, X={kind})"


class LetorFold(NamedTuple):
    """One cross-validation fold: its number and the three splits."""

    fold: int
    train: LetorData
    vali: LetorData
    test: LetorData


#: Default ``max_features`` of :func:`load_letor` / :func:`load_letor_folds`: the widest dense ``X``
#: they build. Real LETOR sets have 46 (MQ2008) to 700 (Yahoo!) features; a wider dense matrix comes
#: from a stray or corrupt feature index (one line with index 2,000,000,000 would ask for 8 GB per
#: row) or from data meant to stay sparse. Pass ``sparse=True`` or a larger ``max_features=``.
MAX_DENSE_FEATURES = 100_000


def _check_path(path, name):
    if isinstance(path, (bytes, bytearray)) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or os.PathLike, got {type(path).__name__}")
    return os.fspath(path)


def _check_reader_options(sparse, n_features, max_features):
    sparse = check_bool(sparse, "sparse")
    n_features = check_int(n_features, "n_features", minimum=0, allow_none=True)
    max_features = check_int(max_features, "max_features", minimum=1)
    if n_features is not None and n_features > _p.MAX_INDEX:
        raise ValueError(f"n_features must be <= {_p.MAX_INDEX} (int32 column indices), got {n_features}")
    return sparse, n_features, max_features


def _check_width(parsed, n_rows, width, n_features, max_features):
    """The memory guard of a dense ``X``, naming what set its width: the widest file's largest
    index (with file, line and column) or ``n_features=``."""
    widest = max(parsed, key=lambda p: p.max_index)
    because = (f"n_features={n_features}" if n_features is not None and n_features > widest.max_index
               else f"{widest.max_where}: feature index {widest.max_index}")
    _f.check_dense(n_rows, width, max_features=max_features, because=because)


def _finish(parsed, width, sparse):
    return LetorData(_f.to_matrix(parsed, width, sparse), parsed.labels, parsed.group, qid=parsed.qid)


def load_letor(path: str | os.PathLike, *, sparse: bool = False, n_features: int | None = None,
               query_file: str | os.PathLike | None = None,
               max_features: int = MAX_DENSE_FEATURES, label_features: Iterable[int] | None = None) -> LetorData:
    """Read a LETOR / SVMlight ranking file (plain or gzip) into ``LetorData(X, y, group)``.

    Lines are ``<label> [qid:<q>] <j>:<v> ... [# comment]``; feature ``j`` (1-based, as in LETOR)
    goes to column ``j - 1``; absent features are 0 in the dense matrix and absent from the CSR one.
    Queries come from the ``qid:`` tokens (each query's rows must be contiguous) or, for files
    without qids, from a LightGBM query file: ``query_file=`` or ``<path>.query[.gz]`` beside the
    data (``rank.train.gz`` also finds ``rank.train.query[.gz]``).

    What is checked (``ValueError`` naming the file, and the line and column of the token):
    the path is a regular file (not a folder, device or pipe) of plain text (ASCII/UTF-8, a
    byte-order mark is skipped) or gzip -- other formats and NUL bytes are refused; it holds at
    least one data line (blank and ``#`` comment lines are the only lines skipped); every label is a finite number; a ``qid`` is an integer of at most 18
    digits directly after the label, on every line or on none; feature indices are integers
    ``1..2**31-2``, each at most once per line; values are numbers. Labels are returned as written
    (negative or large grades included): which grades a loss accepts is checked by the loss.
    Feature values ``nan`` (missing, for LightGBM, XGBoost and ``TreeBooster``) and ``inf`` are
    kept, and finite values beyond float32's range become ``±inf`` as numpy's cast makes them.

    Parameters
    ----------
    path : str or os.PathLike
        The file; gzip is detected from the content.
    sparse : bool, default False
        Return ``X`` as a float32 ``scipy.sparse.csr_matrix`` instead of a dense float32 array.
    n_features : int, optional
        Width of ``X``; a larger index in the file is an error. Default: the largest index.
    query_file : str or os.PathLike, optional
        Explicit LightGBM query file (one query size a line).
    max_features : int, default MAX_DENSE_FEATURES (100,000)
        Widest dense ``X`` to build. A wider one (from the file's largest index or ``n_features``)
        is a ``ValueError`` that gives its size, before anything is allocated; a dense ``X`` larger
        than the machine's RAM is a ``MemoryError``. Ignored when ``sparse=True``.
    label_features : list of int, optional
        Feature numbers (1-based, as in the file) that become labels (multi-label learning to rank,
        ``customobj.multi``): they leave ``X`` (the other columns keep their order) and come back as
        ``extra_labels`` (``n x k`` float64, in this order; each value finite).

    Returns
    -------
    LetorData
        ``X`` float32, ``y`` float64, ``group`` int64 query sizes (or ``None`` without any query
        information) and the per-row ``qid`` attribute. Values equal ``float(token)`` (cast to
        float32 for ``X``).

    Examples
    --------
    >>> import customobj as co
    >>> train = co.data.load_letor("../shared/data/mq2008/Fold1/train.txt.gz")  # doctest: +SKIP
    >>> train.X.shape, len(train.group)  # doctest: +SKIP
    ((9630, 46), 471)
    """
    path = _check_path(path, "path")
    if query_file is not None:
        query_file = _check_path(query_file, "query_file")
    sparse, n_features, max_features = _check_reader_options(sparse, n_features, max_features)
    moved = _ll.check_label_features(label_features)
    parsed = _f.parse_file(path, n_features=n_features, query_file=query_file)
    width = parsed.max_index if n_features is None else n_features
    if not sparse:
        _check_width([parsed], parsed.labels.size, width, n_features, max_features)
    data = _finish(parsed, width, sparse)
    if moved is None:
        return data
    X, extra = _ll.move_label_features(data.X, moved)
    return data._replace(X=X, extra_labels=extra)


def _split_file(folder, name):
    for cand in (folder / f"{name}.txt", folder / f"{name}.txt.gz"):
        if cand.is_file():
            return cand
    return None


def load_letor_folds(path: str | os.PathLike, folds: Iterable[int] | None = None, *, sparse: bool = False,
                     n_features: int | None = None, max_features: int = MAX_DENSE_FEATURES) -> list[LetorFold]:
    """Read ``<path>/Fold<k>/{train,vali,test}.txt[.gz]`` into a list of ``LetorFold``.

    ``folds``: fold numbers to read (default: every ``Fold<k>`` present, in order). Within a fold the
    three splits share one width (the largest feature index of the three, or ``n_features``).
    ``sparse``, ``n_features`` and ``max_features`` and every check on the files are as in
    :func:`load_letor`.
    """
    root = Path(_check_path(path, "path"))
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory")
    if folds is not None:
        if isinstance(folds, (str, bytes)) or not isinstance(folds, Iterable):
            raise TypeError(f"folds must be a list of fold numbers, got {type(folds).__name__}")
        folds = [check_int(f, "folds[]", minimum=1) for f in folds]
        if not folds:
            raise ValueError("folds must name at least one fold (or be None for every fold present)")
        if len(set(folds)) != len(folds):
            raise ValueError(f"folds lists a fold more than once: {folds}")
    sparse, n_features, max_features = _check_reader_options(sparse, n_features, max_features)
    present = sorted(int(m.group(1)) for d in root.iterdir()
                     if d.is_dir() and (m := re.fullmatch(r"Fold(\d+)", d.name)))
    layout = f"expected {root}/Fold<k>/{{train,vali,test}}.txt[.gz]"
    if folds is None:
        if not present:
            hint = " (it holds train files itself: use load_letor on them)" if _split_file(root, "train") else ""
            raise ValueError(f"no Fold<k> subfolders in {root}{hint}; {layout}")
        folds = present
    else:
        missing = [f for f in folds if f not in present]
        if missing:
            raise ValueError(f"fold(s) {missing} not found in {root} (present: {present}); {layout}")
    out = []
    for k in folds:
        folder = root / f"Fold{k}"
        files = {name: _split_file(folder, name) for name in ("train", "vali", "test")}
        lacking = [name for name, f in files.items() if f is None]
        if lacking:
            raise ValueError(f"{folder} lacks {', '.join(n + '.txt[.gz]' for n in lacking)}; {layout}")
        parsed = {name: _f.parse_file(f, n_features=n_features) for name, f in files.items()}
        width = n_features if n_features is not None else max(p.max_index for p in parsed.values())
        if not sparse:  # the three matrices are held together: check their total size
            rows = sum(p.labels.size for p in parsed.values())
            _check_width(list(parsed.values()), rows, width, n_features, max_features)
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


#: Second word of the task stream's seed, ``default_rng([task_seed, _TASK_STREAM])``: the task's draws
#: never coincide with a sample's ``default_rng(seed)`` stream of the same number.
_TASK_STREAM = 0x7A5C

#: Largest ``max_grade`` of :func:`synthetic`: LightGBM's default ``label_gain`` covers grades
#: 0..30 and exponential gains ``2**y - 1`` of XGBoost's NDCG stop at 31.
MAX_SYNTHETIC_GRADE = 30
#: Largest ``noise``, ``query_effect`` and ``feature_shift`` of :func:`synthetic`. The relevance
#: terms are of order 1, so a scale of 1e6 already leaves grades that are pure noise; larger ones
#: would also push float32 features toward overflow.
MAX_SYNTHETIC_SCALE = 1e6


def _check_scale(value, name):
    v = check_nonnegative(value, name, maximum=None) + 0.0  # -0.0 -> 0.0 (numpy refuses a negative zero scale)
    if v > MAX_SYNTHETIC_SCALE:
        raise ValueError(f"{name} must be <= {MAX_SYNTHETIC_SCALE:g} (customobj.data.MAX_SYNTHETIC_SCALE), got {value}")
    return v


def _check_synthetic_memory(n_rows, n_features):
    """MemoryError before drawing anything when X (float32) and the float64 row arrays exceed RAM."""
    nbytes = n_rows * (4 * n_features + 40)
    memory = _f.physical_memory()
    if memory is not None and nbytes > memory:
        raise MemoryError(
            f"synthetic data of {n_rows:,.0f} rows x {n_features:,} features needs about {nbytes / 1e9:.3g} GB, "
            f"more than this machine's {memory / 1e9:.3g} GB of RAM: lower n_queries, docs_per_query or n_features")


def _task_cuts(rng, cols, levels, noise, query_effect):
    """Grade cut points of a task: quantiles of the relevance on :data:`SYNTHETIC_TASK_ROWS` rows of
    the task's own draw. The relevance of a row is the same function of 8 standard-normal features
    plus ``N(0, query_effect)`` and ``N(0, noise)``, whatever the query structure, so every sample of
    the task grades it by the same cuts."""
    used, inv = np.unique(cols, return_inverse=True)  # fewer than 8 features: columns repeat
    m = SYNTHETIC_TASK_ROWS
    Z = rng.standard_normal((m, used.size), dtype=np.float32)
    eps = rng.normal(0.0, float(np.hypot(noise, query_effect)), m)
    s = _synthetic_fill(Z, np.array([0, m], dtype=np.int64), np.zeros(used.size, dtype=np.int64),
                        np.zeros((1, used.size), dtype=np.float32), inv.astype(np.int64), np.zeros(1), eps)
    return np.quantile(s, levels)


#: Rows of the relevance draw that sets a task's grade cuts (``synthetic(task_seed=...)``).
SYNTHETIC_TASK_ROWS = 100_000


def synthetic(n_queries: int = 200, docs_per_query: float = 40, n_features: int = 20, *, seed: int = 0,
              task_seed: int | None = None, max_grade: int = 4, noise: float = 0.5, query_effect: float = 0.5,
              feature_shift: float = 0.3, min_docs: int | None = None, grade_ratio: float = 0.45) -> LetorData:
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

    The task and the sample: ``task_seed`` draws the task -- which 8 columns the relevance reads,
    each feature's marginal and the grade cut points (quantiles of the task's relevance
    distribution) -- and ``seed`` the sample of it: query sizes, per-query offsets and shifts,
    features and noise. Training, validation and test data of one task share ``task_seed`` and
    differ in ``seed``: ``synthetic(200, seed=0, task_seed=7)`` and ``synthetic(80, seed=1,
    task_seed=7)``. With ``task_seed=None`` (the default; the behaviour before it existed, same bytes)
    everything comes from ``seed`` and the task changes with every argument: ``synthetic(seed=1)`` is
    another task than ``synthetic(seed=0)``, not held-out data of it, and the grade cuts are the
    sample's own quantiles. To hold out data there, split one call's queries.

    Every argument is checked first (``TypeError`` / ``ValueError`` naming it): ``n_queries``,
    ``n_features``, ``min_docs`` integers >= 1; ``docs_per_query`` a finite number >= ``min_docs``;
    ``seed`` and ``task_seed`` integers >= 0; ``max_grade`` an integer in ``1..MAX_SYNTHETIC_GRADE`` (30);
    ``noise``, ``query_effect``, ``feature_shift`` in ``[0, MAX_SYNTHETIC_SCALE]`` (1e6);
    ``grade_ratio`` in ``(0, 1]``. Data larger than the machine's RAM is a ``MemoryError``
    raised before anything is drawn.

    Examples
    --------
    >>> from customobj.data import synthetic
    >>> d = synthetic(20, 10, 5, seed=1)
    >>> d.X.shape[1], len(d.group), int(d.y.max()) <= 4
    (5, 20, True)
    >>> train, valid = synthetic(100, 10, 5, seed=0, task_seed=3), synthetic(40, 10, 5, seed=1, task_seed=3)
    """
    n_queries = check_int(n_queries, "n_queries", minimum=1)
    n_features = check_int(n_features, "n_features", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    task_seed = check_int(task_seed, "task_seed", minimum=0, allow_none=True)
    max_grade = check_int(max_grade, "max_grade", minimum=1)
    if max_grade > MAX_SYNTHETIC_GRADE:
        raise ValueError(f"max_grade must be <= {MAX_SYNTHETIC_GRADE} (customobj.data.MAX_SYNTHETIC_GRADE), "
                         f"got {max_grade}")
    docs = check_nonnegative(docs_per_query, "docs_per_query")
    if min_docs is None:
        min_docs = 2 if docs >= 2 else 1
    min_docs = check_int(min_docs, "min_docs", minimum=1)
    if docs < min_docs:
        raise ValueError(f"docs_per_query must be >= min_docs={min_docs}, got {docs_per_query}")
    noise = _check_scale(noise, "noise")
    query_effect = _check_scale(query_effect, "query_effect")
    feature_shift = _check_scale(feature_shift, "feature_shift")
    grade_ratio = check_nonnegative(grade_ratio, "grade_ratio")
    if not 0 < grade_ratio <= 1:
        raise ValueError(f"grade_ratio must be in (0, 1], got {grade_ratio}")
    _check_synthetic_memory(n_queries * docs, n_features)
    rng = np.random.default_rng(seed)
    lam = (docs - min_docs) * rng.gamma(4.0, 0.25, n_queries)
    sizes = (min_docs + rng.poisson(lam)).astype(np.int64)
    ptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    n = int(ptr[-1])
    _check_synthetic_memory(n, n_features)  # the Poisson draw can exceed the mean
    # the task's draws: from the sample's own stream without task_seed (the outputs from before it existed)
    task_rng = rng if task_seed is None else np.random.default_rng([task_seed, _TASK_STREAM])
    cols = task_rng.permutation(n_features)[np.arange(8) % n_features].astype(np.int64)
    kinds = task_rng.integers(0, 3, n_features).astype(np.int64)
    qeff = rng.normal(0.0, query_effect, n_queries)
    qshift = (rng.standard_normal((n_queries, n_features), dtype=np.float32) * np.float32(feature_shift))
    X = rng.standard_normal((n, n_features), dtype=np.float32)
    eps = rng.normal(0.0, noise, n)
    s = _synthetic_fill(X, ptr, kinds, qshift, cols, qeff, eps)
    props = grade_ratio ** np.arange(max_grade + 1)
    # cumulative proportions can round a hair above 1, which np.quantile refuses
    levels = np.minimum(np.cumsum(props / props.sum())[:-1], 1.0)
    if task_seed is not None:
        cuts = _task_cuts(task_rng, cols, levels, noise, query_effect)
    else:
        cuts = np.quantile(s, levels) if n else np.zeros(max_grade)
    y = np.searchsorted(cuts, s, side="right").astype(np.float64)
    qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
    return LetorData(X, y, sizes, qid=qid)


# Click logs simulated from graded data live in their own module; re-exported here, next to the loaders.
from .clicks.simulation import simulate_clicks  # noqa: E402
from .clicks.reader import read_click_log  # noqa: E402  (a click log of one's own: a table)

__all__ += ["simulate_clicks", "read_click_log"]
