"""customobj/clicks/reader.py (``customobj.data.read_click_log``): a Parquet / CSV / pandas / pyarrow
click log with 1-based positions and shuffled rows gives the hand-built layout and the same model;
each defect is refused with a message naming the column."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import customobj
from customobj import adapters  # noqa: F401  (before lightgbm: OpenMP wait policy)
from customobj.data import read_click_log

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import lightgbm as lgb  # noqa: E402

FEATURES = [f"f{j}" for j in range(4)]


@pytest.fixture(scope="module")
def log():
    d = customobj.data.synthetic(25, 8, 4, seed=1, max_grade=2)
    return customobj.data.simulate_clicks(d, ranker=d.X[:, 0], shown=6, sessions=3, seed=2)


def _table(log, seed=0):
    """The log as a user's table: query and session ids, 1-based positions, rows shuffled."""
    session = np.repeat(np.arange(len(log.group)), log.group)
    frame = pd.DataFrame({"query": log.qid, "session": session * 10, "rank": log.position + 1,
                          "clicked": log.y.astype(np.int64), **{f: log.X[:, j] for j, f in enumerate(FEATURES)}})
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


ARGS = dict(query="query", session="session", position="rank", click="clicked", features=FEATURES, first_position=1)


def _train(X, y, group, position):
    obj = customobj.Unbiased(customobj.LambdaRank(), position=position)
    ds = lgb.Dataset(X, y, group=group)
    f = adapters.lightgbm_objective(obj)
    booster = lgb.train({"objective": f, "verbose": -1, "num_threads": 1,
                         "deterministic": True, "min_data_in_leaf": 5}, ds, 5)
    return booster.predict(X), f.fitted_attributes(ds)["position_bias_"]


def test_a_parquet_log_with_1_based_shuffled_rows_gives_the_hand_built_layout_and_model(log, tmp_path):
    path = tmp_path / "clicks.parquet"
    pq.write_table(pa.Table.from_pandas(_table(log)), path)
    d = read_click_log(path, **ARGS)
    assert np.array_equal(d.X, log.X) and np.array_equal(d.y, log.y)
    assert np.array_equal(d.group, log.group) and np.array_equal(d.position, log.position)
    assert np.array_equal(d.query, np.unique(log.qid).repeat(3)) and d.session.tolist() == list(range(0, 10 * d.group.size, 10))
    pred, bias = _train(d.X, d.y, d.group, d.position)
    pred_hand, bias_hand = _train(log.X, log.y, log.group, log.position)
    np.testing.assert_array_equal(pred, pred_hand)
    np.testing.assert_array_equal(bias, bias_hand)
    assert bias[1] < 1.0  # the debiasing ran: an estimate below the top position's


def test_csv_pandas_and_pyarrow_sources_agree(log, tmp_path):
    table = _table(log, seed=3)
    ref = read_click_log(table, **ARGS)
    table.to_csv(tmp_path / "clicks.csv", index=False)
    for source in (pa.Table.from_pandas(table), str(tmp_path / "clicks.csv")):
        d = read_click_log(source, **ARGS)
        assert all(np.array_equal(a, b) for a, b in zip(d[1:], ref[1:]))
        np.testing.assert_allclose(d.X, ref.X, rtol=1e-6)  # CSV: float32 features printed shortest, read as float64
    assert np.array_equal(ref.X[np.argsort(ref.row)], table[FEATURES].to_numpy())  # row: the table's row


def test_without_a_session_column_each_query_is_a_session_and_string_ids_work():
    table = pd.DataFrame({"q": ["b", "a", "b", "a", "a"], "p": [0, 2, 1, 0, 1], "c": [False, True, True, False, False],
                          "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    d = read_click_log(table, query="q", position="p", click="c", features=["x"], first_position=0)
    assert d.query.tolist() == ["a", "b"] and d.session.tolist() == ["a", "b"]
    assert d.X[:, 0].tolist() == [4.0, 5.0, 2.0, 1.0, 3.0] and d.y.tolist() == [0, 0, 1, 0, 1]
    assert d.position.tolist() == [0, 1, 2, 0, 1] and d.group.tolist() == [3, 2]


def test_a_document_column_comes_back_in_row_order_and_is_none_without_one():
    table = pd.DataFrame({"q": ["b", "a", "b", "a", "a"], "p": [0, 2, 1, 0, 1], "c": [0, 1, 1, 0, 0],
                          "doc": ["u", "v", "w", "x", "y"], "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    args = dict(query="q", position="p", click="c", features=["x"], first_position=0)
    d = read_click_log(table, document="doc", **args)
    assert d.document.tolist() == ["x", "y", "v", "u", "w"] and d.X[:, 0].tolist() == [4.0, 5.0, 2.0, 1.0, 3.0]
    assert read_click_log(table, **args).document is None
    with pytest.raises(ValueError, match="document: the table has no column 'id'"):
        read_click_log(table, document="id", **args)
    with pytest.raises(ValueError, match="features: column 'doc' is the document column"):
        read_click_log(table, **dict(args, document="doc", features=["x", "doc"]))


def _bad(**change):
    frame = pd.DataFrame({"q": [1, 1, 1, 2, 2], "p": [1, 2, 3, 1, 2], "c": [0, 1, 0, 1, 0],
                          "f": [0.1, 0.2, 0.3, 0.4, 0.5], "g": [1.0, 2.0, 3.0, 4.0, 5.0]})
    for column, (row, value) in change.items():
        frame[column] = frame[column].astype(object if value is None else type(value))
        frame.loc[row, column] = value
    return frame


@pytest.mark.parametrize("frame, kwargs, exc, match", [
    (_bad(p=(1, 1)), {}, ValueError, r"position: query 1 shows position 1 twice \(column 'p'"),
    (_bad(p=(2, 4)), {}, ValueError, r"position: query 1 has positions \[1, 2, 4\] \(column 'p'\): position 3 is missing"),
    (_bad(p=(0, 2)), {}, ValueError, r"position 1 is missing"),  # a session without its top row
    (_bad(p=(0, 0)), {}, ValueError, r"position: column 'p' must be >= 1; found 0 at position 0"),
    (_bad(p=(0, 1.5)), {}, TypeError, r"position: column 'p' must hold integers; found 1.5 at position 0"),
    (_bad(p=(0, True)), {}, TypeError, r"position: column 'p' must be an array of integers"),
    (_bad(c=(2, 2)), {}, ValueError, r"click: column 'c' must hold clicks 0 or 1; found 2 at row 2"),
    (_bad(f=(3, np.inf)), {}, ValueError, r"features: column 'f' holds inf at row 3; a feature must be finite or"),
    (_bad(q=(4, None)), {}, ValueError, r"query: column 'q' has a missing value at row 4"),
    (_bad(q=(2, 3), p=(2, 1)), {}, ValueError, r"query: query 3 has one row.*1 such session"),
    (_bad(), dict(query="qid"), ValueError, r"query: the table has no column 'qid'; its columns: q, p, c, f, g"),
    (_bad(), dict(features=["f", "zz"]), ValueError, r"features: the table has no column 'zz'"),
    (_bad(), dict(features=["f", "c"]), ValueError, r"features: column 'c' is the click column"),
    (_bad(), dict(features=["f", "f"]), ValueError, r"features names a column twice"),
    (_bad(), dict(features="f"), TypeError, r"features must be a non-empty list"),
    (_bad(), dict(position="q"), ValueError, r"position: column 'q' is already the query column"),
    (_bad(), dict(first_position=-1), ValueError, r"first_position"),
    (_bad(), dict(click=3), TypeError, r"click must be a column name"),
])
def test_each_defect_is_refused_naming_the_column(frame, kwargs, exc, match):
    args = dict(dict(query="q", position="p", click="c", features=["f", "g"], first_position=1), **kwargs)
    with pytest.raises(exc, match=match):
        read_click_log(frame, **args)


def test_a_session_of_one_row_names_the_session_column():
    frame = pd.DataFrame({"q": [1, 1, 1], "s": [5, 5, 6], "p": [1, 2, 1], "c": [0, 1, 0], "f": [0.1, 0.2, 0.3]})
    with pytest.raises(ValueError, match=r"session: query 1, session 6 has one row"):
        read_click_log(frame, query="q", session="s", position="p", click="c", features=["f"], first_position=1)


def test_paths_must_be_regular_files_of_a_known_kind(tmp_path):
    kw = dict(query="q", position="p", click="c", features=["f"], first_position=1)
    with pytest.raises(ValueError, match=r"is not a regular file \(a directory\)"):
        read_click_log(tmp_path, **kw)
    with pytest.raises(ValueError, match="cannot be read"):
        read_click_log(tmp_path / "missing.parquet", **kw)
    (tmp_path / "log.json").write_text("{}")
    with pytest.raises(ValueError, match=r"reads \.parquet, \.pq, \.csv"):
        read_click_log(tmp_path / "log.json", **kw)
    with pytest.raises(TypeError, match="pandas DataFrame, a pyarrow Table"):
        read_click_log({"q": [1]}, **kw)
    with pytest.raises(TypeError, match="got bytes"):
        read_click_log(b"log.csv", **kw)


def test_every_defect_of_a_table_is_reported_together():
    """Issue 39: a dirty log took four fix-and-rerun rounds, one defect each."""
    frame = _bad(c=(2, 2), f=(3, np.inf))
    frame.loc[4, "c"] = 5
    frame.loc[0, "g"] = -np.inf
    frame.loc[1, "p"] = 3  # query 1 now shows 1, 3, 3
    with pytest.raises(ValueError) as info:
        read_click_log(frame, query="q", position="p", click="c", features=["f", "g"], first_position=1)
    text = str(info.value)
    assert text.startswith("the table has 4 defects: "), text
    for part in ("click: column 'c' must hold clicks 0 or 1; found 2 at rows 2, 4 (2 rows)",
                 "features: column 'f' holds inf at row 3", "features: column 'g' holds -inf at row 0",
                 "position: query 1 has positions [1, 3, 3] (column 'p'): position 2 is missing"):
        assert part in text, (part, text)
    missing = _bad().drop(columns=["p"])
    missing.loc[1, "q"] = None
    with pytest.raises(ValueError, match=r"2 defects: \(1\) query: column 'q' has a missing value at row 1 \| "
                                         r"\(2\) position: the table has no column 'p'"):
        read_click_log(missing, query="q", position="p", click="c", features=["f"], first_position=1)


def test_every_session_with_a_gap_is_counted():
    frame = pd.DataFrame({"q": [1, 1, 2, 2, 3, 3], "p": [1, 3, 1, 3, 1, 2], "c": [0, 1, 0, 1, 1, 0],
                          "f": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]})
    with pytest.raises(ValueError, match=r"query 1 has positions \[1, 3\].*; 2 sessions in all, e.g. \(query 2\)"):
        read_click_log(frame, query="q", position="p", click="c", features=["f"], first_position=1)


@pytest.mark.parametrize("kind", ["pandas", "pyarrow"])
def test_missing_feature_values_are_nan_as_lightgbm_takes_them(kind):
    """Issue 39: NaN features were refused although LightGBM (and XGBoost, TreeBooster) handle them."""
    frame = _bad(g=(1, None))
    frame["g"] = frame["g"].astype(float)
    frame.loc[3, "f"] = np.nan
    source = frame if kind == "pandas" else pa.Table.from_pandas(frame)
    d = read_click_log(source, query="q", position="p", click="c", features=["f", "g"], first_position=1)
    assert np.isnan(d.X).sum() == 2
    assert np.isnan(d.X[d.row == 1, 1]).all() and np.isnan(d.X[d.row == 3, 0]).all()
    finite = d.X[~np.isnan(d.X)]
    assert np.allclose(np.sort(finite), np.sort(np.r_[frame["f"].dropna(), frame["g"].dropna()]))
    ds = lgb.Dataset(d.X, d.y, group=d.group, position=d.position)
    f = adapters.lightgbm_objective(customobj.Unbiased(customobj.LambdaRank()))
    booster = lgb.train({"objective": f, "verbose": -1, "min_data_in_leaf": 1, "min_data_in_bin": 1}, ds, 2)
    assert np.isfinite(booster.predict(d.X)).all()


def test_corrupt_and_empty_files_are_refused_naming_the_path(tmp_path):
    """Issue 39: pyarrow's own error reached the user without the file's path."""
    kw = dict(query="q", position="p", click="c", features=["f"], first_position=1)
    empty, corrupt, csv = tmp_path / "empty.parquet", tmp_path / "bad.parquet", tmp_path / "bad.csv"
    empty.write_bytes(b"")
    corrupt.write_bytes(b"PAR1 not a parquet file at all")
    csv.write_bytes(b"q,p\n1,2,3,4\n")
    with pytest.raises(ValueError, match=f"source '{re.escape(str(empty))}' is empty"):
        read_click_log(empty, **kw)
    for path, kind in ((corrupt, "parquet"), (csv, "csv")):
        with pytest.raises(ValueError, match=f"source '{re.escape(str(path))}' cannot be read as a {kind} file"):
            read_click_log(path, **kw)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.csv"
        os.mkfifo(fifo)
        with pytest.raises(ValueError, match=r"is not a regular file \(a FIFO\)"):
            read_click_log(fifo, **kw)


# --- the logger's columns (issue 43) -------------------------------------------------------------
def _logger_table():
    import pandas as pd

    return pd.DataFrame({"qid": [7, 7, 7, 3, 3], "rank": [2, 1, 3, 2, 1], "clicked": [1, 0, 0, 0, 1],
                         "bm25": [0.5, 0.9, 0.1, 0.3, 0.7], "rk": [1, 1, 1, 0, 0], "rand": [True, True, True, False, False],
                         "p": [0.5, 0.25, 1.0, 1.0, 0.5]})


def test_logger_columns_are_read_in_session_order():
    from customobj.data import read_click_log

    d = read_click_log(_logger_table(), query="qid", position="rank", click="clicked", features=["bm25"],
                       first_position=1, ranker="rk", randomised="rand", logging_prob="p")
    assert d.ranker_id.tolist() == [0, 0, 1, 1, 1] and d.randomised.tolist() == [False, False, True, True, True]
    assert d.logging_prob.tolist() == [0.5, 1.0, 0.25, 0.5, 1.0]  # rows by query, then position
    plain = read_click_log(_logger_table(), query="qid", position="rank", click="clicked", features=["bm25"],
                           first_position=1)
    assert plain.ranker_id is None and plain.randomised is None and plain.logging_prob is None


@pytest.mark.parametrize("column, values, exc, match", [
    ("p", [0.5, 0.0, 1.0, 1.0, 0.5], ValueError, "logging_prob"),
    ("p", [0.5, 1.5, 1.0, 1.0, 0.5], ValueError, "logging_prob"),
    ("rk", [1, 2, 1, 0, 0], ValueError, "differs within session"),
    ("rk", [1, 1, 1, -1, -1], ValueError, "ranker"),
    ("rk", [0.5, 0.5, 0.5, 0, 0], TypeError, "ranker"),
    ("rand", [2, 2, 2, 0, 0], ValueError, "randomised"),
])
def test_bad_logger_columns_are_refused(column, values, exc, match):
    from customobj.data import read_click_log

    table = _logger_table()
    table[column] = values
    with pytest.raises(exc, match=match):
        read_click_log(table, query="qid", position="rank", click="clicked", features=["bm25"], first_position=1,
                       ranker="rk", randomised="rand", logging_prob="p")
