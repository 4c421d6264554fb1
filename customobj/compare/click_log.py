"""``customobj compare --click-log FILE``: every method trained on a real click log.

The log (Parquet or CSV, one row per shown document: query id, display position, click, features;
optionally session and document ids) is read with :func:`customobj.data.read_click_log`. Its queries
are shuffled (seeded by ``--seed``) and cut: :data:`VALID_SHARE` of them validate (early stopping and
``--tune`` on the IPS click NDCG@10, :func:`customobj.metrics.ips_ndcg`), the rest train; every session
of a query goes to the same part, so no query-document is trained and validated on. The IPS metric's
propensities are estimated once, on the training part, by ``Unbiased(LambdaRank())`` through LightGBM
(``--rounds`` rounds, the run's leaves and learning rate): one estimate for every method, so their
validation scores compare. ``--test LETOR_FILE_OR_DIR`` scores on graded labels (each feature column
is matched to the test file's feature by the number ending its name, :func:`feature_numbers`; a column
without one is refused); without it :data:`TEST_SHARE` more of the log's queries are
held out and scored with the IPS click metrics, which the output says.

Examples
--------
>>> parse_click_columns("query=qid,click=clicked,features=f1:f2")
{'query': 'qid', 'click': 'clicked', 'features': ['f1', 'f2']}
"""
from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Any

import numpy as np

from .._cli_errors import UsageError, one_line, stderr_held
from .report import LABELS, Scoring
from .trainers import CLICK_CURVE_METRIC, Settings, Split

__all__ = ["parse_click_columns", "load_click_log", "feature_numbers", "unlearnable", "estimate_propensity", "click_scoring", "refuse_methods", "VALID_SHARE",
           "TEST_SHARE", "COLUMN_DEFAULTS", "OPTIONAL_COLUMNS"]

#: Shares of the log's queries held out to validate, and to test when there is no --test.
VALID_SHARE = 0.2
TEST_SHARE = 0.2
#: Column names used when --click-columns does not name them.
COLUMN_DEFAULTS = {"query": "query", "position": "position", "click": "click"}
#: Columns read when the table has a column of that name and --click-columns does not say otherwise.
OPTIONAL_COLUMNS = ("session", "document")
_KEYS = (*COLUMN_DEFAULTS, "features", *OPTIONAL_COLUMNS)
#: The IPS click metrics of a test part without labels: (column, click_metric name).
CLICK_TEST_METRICS = (("ips_ndcg@1", "ips_ndcg@1"), ("ips_ndcg@3", "ips_ndcg@3"), ("ips_ndcg@5", "ips_ndcg@5"),
                      ("ips_ndcg@10", "ips_ndcg@10"), ("ips_dcg@10", "ips_dcg@10"))
VALID_COLUMN = f"valid_{CLICK_CURVE_METRIC}"


def parse_click_columns(text: str) -> dict[str, Any]:
    """``--click-columns``: ``key=column`` pairs joined by commas; ``features`` lists its columns
    joined by ``:`` and may use shell patterns (``features=f*``)."""
    out: dict[str, Any] = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        key, eq, value = (t.strip() for t in item.partition("="))
        if not eq or key not in _KEYS or not value:
            raise UsageError(f"--click-columns: expected key=column with key one of {', '.join(_KEYS)}, got {item!r}")
        if key in out:
            raise UsageError(f"--click-columns: {key} is given twice")
        out[key] = [v.strip() for v in value.split(":") if v.strip()] if key == "features" else value
    return out


def _read_table(path: Path):
    """The whole table of a Parquet or CSV file (:func:`customobj.clicks.reader.read_log_file`), its
    refusals as usage errors naming ``--click-log``."""
    from .._extras import MissingExtraError, install_hint
    from ..clicks.reader import read_log_file

    _check_path(path, "--click-log")
    try:
        return read_log_file(path)
    except MissingExtraError:
        raise UsageError(f"--click-log needs pyarrow, an optional extra: {install_hint('parquet')}") from None
    except (ValueError, TypeError) as exc:  # an unknown suffix, not a regular file
        raise UsageError(f"--click-log: {one_line(str(exc))}") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors (ArrowInvalid, OSError): a file it cannot read
        raise UsageError(f"--click-log {path}: cannot be read: {one_line(str(exc))}") from None


def _check_path(path: Path, option: str, folder: bool = False) -> None:
    """``option``'s path exists and is a regular file (or a folder, when ``folder``): "no such file" only
    when nothing is there; a FIFO or a directory is called what it is."""
    import os
    import stat

    from ..clicks.reader import _file_type

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UsageError(f"{option}: no such file: {path}") from None
    except OSError as exc:
        raise UsageError(f"{option}: {path} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(mode) and not (folder and stat.S_ISDIR(mode)):
        raise UsageError(f"{option}: {path} is not a regular file ({_file_type(mode)})")


def _columns(given: dict, names: list, index: tuple = ()) -> dict:
    """read_click_log's column keywords: the given names, the defaults, optional columns present, and
    as features every other column but the ``index`` columns pandas stored (or the --click-columns
    features, patterns expanded in table order)."""
    cols = {key: given.get(key, default) for key, default in COLUMN_DEFAULTS.items()}
    for key in OPTIONAL_COLUMNS:
        if key in given or key in names:
            cols[key] = given.get(key, key)
    for key, name in cols.items():
        if name not in names:
            how = "" if key in given else f" (the default {key} column; name yours with --click-columns {key}=...)"
            raise UsageError(f"--click-log: no {key} column {name!r}{how}; the table's columns: {', '.join(names)}")
    taken = set(cols.values())
    if "features" in given:
        features: list = []
        for pattern in given["features"]:
            hits = [n for n in names if fnmatch.fnmatchcase(n, pattern)] if any(c in pattern for c in "*?[") \
                else [pattern]
            if not hits or (len(hits) == 1 and hits[0] not in names):
                raise UsageError(f"--click-columns features: the table has no column {pattern!r}; its columns: "
                                 f"{', '.join(names)}")
            if pattern in taken:  # named outright: refused, never dropped (a pattern's matches skip these)
                role = next(k for k, v in cols.items() if v == pattern)
                raise UsageError(f"--click-columns features: column {pattern!r} is the {role} column; a feature "
                                 "cannot be it (drop it from features=)")
            features += [h for h in hits if h not in features and h not in taken]
    else:
        features = [n for n in names if n not in taken and n not in index]
    if not features:
        raise UsageError("--click-log: no feature column left (name them with --click-columns features=a:b:c)")
    cols["features"] = features
    return cols


def _first_position(table, column: str, given: int | None) -> int:
    """--first-position, or the table's smallest position when it is 0 or 1 (a wrong guess cannot pass
    silently: read_click_log then finds a gap or a position below the first in every session)."""
    if given is not None:
        return given
    values = np.asarray(table.column(column).to_numpy())
    if values.dtype.kind not in "iuf" or not values.size:
        return 0  # read_click_log refuses the column, naming it
    low = values.min()
    if low not in (0, 1):
        raise UsageError(f"--click-log: column {column!r}'s smallest position is {low}: give --first-position N, "
                         "the number the top position carries in the table")
    return int(low)


def _split(data, sessions: np.ndarray) -> Split:
    rows = np.repeat(sessions, data.group)
    return Split(data.X[rows], data.y[rows], data.group[sessions], data.position[rows])


def feature_numbers(names: list) -> tuple[np.ndarray, str]:
    """``(column of a LETOR file's X per feature column, how)``: the number that ends each feature
    column's name is its LETOR feature (``f1``, ``feature_1`` or ``1`` = feature 1; when a name
    ends in 0, as ``f0``, the names count from 0). A name without a number, or two names of one
    number, is refused naming the columns: a test file's features have no other name to match.

    Examples
    --------
    >>> feature_numbers(["f2", "f1", "f3"])[0].tolist()
    [1, 0, 2]
    >>> feature_numbers(["f0", "f1"])[0].tolist()
    [0, 1]
    """
    found = [re.fullmatch(r"\D*?(\d+)", str(n)) for n in names]
    bare = [str(n) for n, m in zip(names, found) if m is None]
    if bare:
        raise UsageError(f"--test: the log's feature columns are matched to the test file's features by the number "
                         f"ending their names (f1 or 1 = feature 1); {', '.join(map(repr, bare[:5]))} carry no "
                         "number: rename them, or choose numbered ones with --click-columns features=...")
    numbers = np.array([int(m.group(1)) for m in found if m is not None], dtype=np.int64)
    values, counts = np.unique(numbers, return_counts=True)
    if (counts > 1).any():
        twice = [str(n) for n, k in zip(names, numbers) if k == values[counts > 1][0]]
        raise UsageError(f"--test: feature columns {', '.join(map(repr, twice))} name the same feature "
                         f"{values[counts > 1][0]}; each feature column must name a feature of its own")
    zero_based = bool((numbers == 0).any())
    return numbers if zero_based else numbers - 1, "counted from 0 (a name ends in 0)" if zero_based else "from 1"


def _test_file(path: Path, names: list) -> tuple[Split, str]:
    """The labelled test part: a LETOR file, or a folder holding test.txt[.gz]; its features are
    matched to the log's feature columns by name (:func:`feature_numbers`), in the log's order."""
    from ..data import _split_file, load_letor
    from .folds import _check_split

    _check_path(path, "--test", folder=True)
    file = _split_file(path, "test") if path.is_dir() else path
    if file is None:
        raise UsageError(f"--test {path}: the folder holds no test.txt[.gz]")
    _check_path(file, "--test")
    columns, how = feature_numbers(names)
    try:
        split = Split.from_data(load_letor(file))
    except (ValueError, TypeError, OSError) as exc:
        raise UsageError(f"--test {file}: {one_line(str(exc))}") from None
    beyond = [str(n) for n, c in zip(names, columns) if c >= split.X.shape[1]]
    if beyond:
        raise UsageError(f"--test {file} has {split.X.shape[1]} features but the click log's feature columns "
                         f"{', '.join(map(repr, beyond[:5]))} name features beyond them (feature numbers {how}); "
                         "choose the log's features with --click-columns features=a:b:c")
    split = Split(np.ascontiguousarray(split.X[:, columns]), split.y, split.sizes)
    shown = ", ".join(f"{n}={c + 1}" for n, c in list(zip(names, columns))[:3]) + (", ..." if len(names) > 3 else "")
    return _check_split(split, f"--test {file}"), f"feature columns matched to its features by name ({shown})"


def unlearnable(X: np.ndarray) -> bool:
    """Whether no tree can split ``X``: every column constant (NaN, LightGBM's missing value, aside)."""
    with np.errstate(invalid="ignore"):
        low, high = np.nanmin(X, axis=0, initial=np.inf), np.nanmax(X, axis=0, initial=-np.inf)
    return bool(X.size == 0 or not (high > low).any())


def load_click_log(args) -> tuple[list, str, bool]:
    """``([(1, train, valid, test)], description, labelled)``: the log read and cut by query (module doc);
    ``labelled`` says whether the test part has graded labels (``--test``) or clicks."""
    from ..data import read_click_log

    path = Path(args.click_log)
    table = _read_table(path)
    meta = table.schema.pandas_metadata or {}  # a DataFrame's index written beside its columns is no feature
    index = tuple(c for c in meta.get("index_columns", []) if isinstance(c, str))
    cols = _columns(parse_click_columns(args.click_columns or ""), list(table.column_names), index)
    first = _first_position(table, cols["position"], args.first_position)
    try:
        data = read_click_log(table, first_position=first, **cols)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--click-log {path}: {one_line(str(exc))}") from None
    queries = np.unique(data.query)
    test_share = 0.0 if args.test else TEST_SHARE
    n_valid, n_test = (int(np.ceil(share * queries.size)) for share in (VALID_SHARE, test_share))
    if queries.size < n_valid + n_test + 1:
        raise UsageError(f"--click-log {path}: {queries.size} queries, too few to hold out "
                         f"{'validation and test queries' if n_test else 'validation queries'} and train on the rest")
    order = np.random.default_rng(args.seed).permutation(queries.size)
    part = np.zeros(queries.size, dtype=np.int64)  # 0 train, 1 validation, 2 test
    part[order[:n_valid]], part[order[n_valid:n_valid + n_test]] = 1, 2
    of_session = part[np.searchsorted(queries, data.query)]
    train, valid, held = (_split(data, of_session == k) for k in range(3))
    desc = (f"click log {path} ({data.group.size} sessions of {queries.size} queries, {len(cols['features'])} "
            f"features, positions from {first}); validated on the IPS click NDCG@10 of {n_valid} held-out queries")
    if unlearnable(train.X):
        raise UsageError(f"--click-log {path}: every feature column ({', '.join(cols['features'][:5])}"
                         f"{', ...' if len(cols['features']) > 5 else ''}) is constant over the "
                         f"{train.sizes.size} training sessions: no tree can split them, so no method can learn "
                         "a ranking (add features that vary, or more queries)")
    if args.test:
        test, matched = _test_file(Path(args.test), cols["features"])
        return [(1, train, valid, test)], desc + f"; tested on the labels of {args.test} ({matched})", True
    desc += (f"; no --test: tested on the IPS click metrics of {n_test} more held-out queries' sessions "
             "(no labels)")
    return [(1, train, valid, held)], desc, False


def estimate_propensity(train: Split, settings: Settings, longest: int) -> np.ndarray:
    """The IPS metric's propensities: ``Unbiased(LambdaRank())``'s ``position_bias_`` trained through
    LightGBM on ``train``; positions beyond its estimate (down to ``longest``) take its last value."""
    import lightgbm as lgb

    from .. import LambdaRank, Unbiased
    from ..adapters import lightgbm_objective

    f = lightgbm_objective(Unbiased(LambdaRank()))
    params = {"objective": f, "num_leaves": settings.num_leaves, "learning_rate": settings.learning_rate,
              "seed": settings.seed, "deterministic": True, "force_row_wise": True, "num_threads": settings.jobs,
              "verbosity": -1}
    data = lgb.Dataset(train.X, train.y, group=train.sizes, position=train.position)
    try:
        with stderr_held():  # LightGBM prints its fatal errors to descriptor 2 too
            lgb.train(params, data, settings.rounds)
    except lgb.basic.LightGBMError as exc:
        if "num_features" not in str(exc):
            raise
        raise UsageError(f"--click-log: LightGBM finds no feature it can split in the {train.y.size} training rows "
                         "(each feature constant or its values too few for min_data_in_leaf = 20): nothing to "
                         "learn from; log more queries or features") from None
    bias = np.asarray(f.fitted_attributes(data)["position_bias_"], dtype=np.float64)
    return np.concatenate([bias, np.full(max(0, longest - bias.size), bias[-1])])


def refuse_methods(specs: list) -> None:
    """The methods a click log cannot validate: CatBoost's (its early stopping takes no custom metric
    here) and ``ens:`` ensembles (their combination is chosen on graded validation labels)."""
    from .ensemble import EnsembleSpec, member_specs

    for s in specs:
        if isinstance(s, EnsembleSpec):
            raise UsageError(f"{s.label}: an ensemble's combination is chosen on graded validation labels, which "
                             "--click-log does not have; list its members as methods of their own")
    for s in member_specs(specs):
        if s.backend == "cb":
            raise UsageError(f"{s.label}: CatBoost cannot validate on the click metric of --click-log; "
                             "use lgb:, xgb: or ole: methods")


def click_scoring(labelled: bool, propensity: np.ndarray) -> Scoring:
    """The run's :class:`~customobj.compare.report.Scoring`: graded test labels or the IPS click metrics with
    ``propensity``; the validation column is the IPS click NDCG@10 either way."""
    from ..metrics import click_metric

    if labelled:
        return LABELS._replace(valid=VALID_COLUMN)
    metrics = tuple((col, click_metric(name, propensity=propensity)) for col, name in CLICK_TEST_METRICS)
    return Scoring(metrics, CLICK_CURVE_METRIC, VALID_COLUMN, "sessions")
