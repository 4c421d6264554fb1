"""Tests of customobj/compare/click_log.py: ``customobj compare --click-log`` on a Parquet log written
from a simulated MQ2008 log as a team's table (1-based positions, rows shuffled), end to end with a
tiny --rounds, the IPS click metric driving every trainer's early stopping, and the refusals."""
from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest

import customobj
import customobj.adapters  # noqa: F401  (before lightgbm: OpenMP wait policy)
from customobj._cli_errors import UsageError
from customobj.cli import main
from customobj.compare.click_log import parse_click_columns
from customobj.compare.clicks import ESTIMATOR_NOTE
from customobj.compare.trainers import Settings, Split, train, validation_score

pytest.importorskip("pyarrow")
N_QUERIES = 120  # of MQ2008 Fold1's training queries: enough for a validation and a test share


@pytest.fixture(scope="module")
def mq2008_log(mq2008_fold1, tmp_path_factory):
    """(path of the Parquet log, test file): 2 sessions per query on a weak ranker's top 10, as a table
    with query, session, rank (1-based), clicked and f1..f46, rows shuffled."""
    import pandas as pd

    X, y, group = mq2008_fold1["train"]
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    sizes = np.asarray(group.sizes if hasattr(group, "sizes") else group)[:N_QUERIES]
    n = int(sizes.sum())
    log = customobj.data.simulate_clicks((X[:n], y[:n], sizes), ranker=X[:n, 0], sessions=2, seed=0)
    table = pd.DataFrame({"query": log.qid, "session": np.repeat(np.arange(log.group.size), log.group),
                          "rank": log.position + 1, "clicked": log.y.astype(np.int64),
                          **{f"f{j + 1}": log.X[:, j] for j in range(X.shape[1])}})
    path = tmp_path_factory.mktemp("clicklog") / "log.parquet"
    table.sample(frac=1.0, random_state=1).to_parquet(path)  # rows in any order; pandas stores its index too
    return path, table


def _run(log, out, *extra):
    return main(["compare", "--click-log", str(log), "--click-columns", "position=rank,click=clicked",
                 "--rounds", "3", "--out", str(out), "--quiet", *extra])


def test_parse_click_columns():
    assert parse_click_columns("") == {}
    assert parse_click_columns(" query = q , features = a:b* ") == {"query": "q", "features": ["a", "b*"]}
    for bad, match in (("rank", "key=column"), ("pos=rank", "key=column"), ("query=", "key=column"),
                       ("query=a,query=b", "twice")):
        with pytest.raises(UsageError, match=match):
            parse_click_columns(bad)


def test_compare_on_a_real_log_tested_on_labels(mq2008_log, data_dir, tmp_path, capsys):
    path, _ = mq2008_log
    out = tmp_path / "r"
    methods = ["lgb:LambdaRank", "lgb:Unbiased(objective=LambdaRank)", "lgb:RegressionEM(n_iter=1)",
               "xgb:rank:ndcg(lambdarank_unbiased=true)"]
    assert _run(path, out, "--test", str(data_dir / "mq2008" / "Fold1"), "--methods", ",".join(methods)) == 0
    meta = json.loads((out / "results.json").read_text())
    assert "positions from 1" in meta["data"] and "240 sessions of 120 queries, 46 features" in meta["data"]
    assert "validated on the IPS click NDCG@10 of 24 held-out queries" in meta["data"]
    rho = meta["click_metric"]["propensity"]
    assert len(rho) == 10 and rho[0] == 1.0 and meta["click_metric"]["test"] == "labels"
    assert meta["settings"]["valid_propensity"] == rho
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["method"] for r in rows] == methods
    assert all(0.0 < float(r["ndcg@10"]) <= 1.0 and 0.0 < float(r["valid_ips_ndcg@10"]) <= 1.0 for r in rows)
    with open(out / "position_bias.csv", newline="") as fh:
        bias = list(csv.DictReader(fh))
    assert {r["method"] for r in bias} == {"lgb:Unbiased(objective=LambdaRank)", "lgb:RegressionEM(n_iter=1)",
                                           "xgb:rank:ndcg(lambdarank_unbiased=true)"}
    assert {r["quantity"] for r in bias} == {"examination"} and all(r["true"] == "" for r in bias)
    for name in ("curves.png", "position_bias.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"


def test_compare_on_a_real_log_without_labels(mq2008_log, tmp_path, capsys):
    path, _ = mq2008_log
    out = tmp_path / "r"
    assert main(["compare", "--click-log", str(path), "--click-columns", "position=rank,click=clicked,features=f*",
                 "--rounds", "3", "--out", str(out), "--no-plot", "--methods", "lgb:LambdaRank,ole:LambdaRank[ole]"]) == 0
    said = capsys.readouterr().out
    assert "no --test: the test columns are IPS click metrics" in said and "IPS_NDCG@10" in said
    assert "on test IPS_NDCG@10 (" in said and " sessions pooled over folds" in said
    meta = json.loads((out / "results.json").read_text())
    assert meta["click_metric"]["test"] == "ips click metrics" and "no --test" in meta["data"]
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert header[3:9] == ["ips_ndcg@1", "ips_ndcg@3", "ips_ndcg@5", "ips_ndcg@10", "ips_dcg@10", "valid_ips_ndcg@10"]
    assert "mean_diff_ips_ndcg@10" in (out / "paired.csv").read_text().splitlines()[0]
    assert not (out / "position_bias.csv").exists()  # no method here estimates a curve


def test_the_default_methods_of_a_click_log_are_the_click_methods(mq2008_log, tmp_path):
    from customobj.compare.command import CLICK_LOG_METHODS

    path, _ = mq2008_log
    out = tmp_path / "r"
    assert _run(path, out, "--no-plot") == 0
    meta = json.loads((out / "results.json").read_text())
    assert ",".join(meta["methods"]) == CLICK_LOG_METHODS and "lgb:RegressionEM" in meta["position_bias"]["estimated"]


def _small_click_splits():
    d = customobj.data.synthetic(60, 12, 5, seed=3)
    log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=2, seed=0)
    cut = int(log.group[:80].sum())
    train_ = Split(log.X[:cut], log.y[:cut], log.group[:80], log.position[:cut])
    valid = Split(log.X[cut:], log.y[cut:], log.group[80:], log.position[cut:])
    return train_, valid


@pytest.mark.parametrize("method", ["lgb:LambdaRank", "xgb:rank:ndcg", "ole:LambdaRank[ole]", "lgb:RegressionEM(n_iter=2)"])
def test_the_click_metric_drives_every_trainers_early_stopping(method):
    """With Settings.valid_propensity each trainer's validation curve is the IPS click NDCG@10 (not the
    library's NDCG on clicks): the kept round's value is the IPS metric of the kept model's scores."""
    from customobj.compare.methods import parse_method

    train_, valid = _small_click_splits()
    rho = tuple(1.0 / np.arange(1, 11))
    st = Settings(rounds=6, num_leaves=7, jobs=1, early_stopping=2, valid_propensity=rho)
    res = train(parse_method(method), st, train_, valid, valid)
    ips = customobj.metrics.ips_ndcg(res.valid_scores, valid.y, valid.sizes, 10, propensity=rho)
    assert validation_score(st, res.valid_scores, valid) == pytest.approx(ips, abs=1e-12)
    assert res.curve[res.best_round - 1] == pytest.approx(ips, abs=1e-6)
    naive = customobj.metrics.ndcg(res.valid_scores, valid.y, valid.sizes, 10)
    assert abs(naive - ips) > 1e-3  # the two metrics differ here, so the check above can fail


@pytest.mark.parametrize("extra, match", [
    (["--click-columns", "click=clicked"], "no position column 'position' (the default position column"),
    (["--click-columns", "position=rank,click=nope"], "no click column 'nope'; the table's columns"),
    (["--click-columns", "position=rank,click=clicked,features=g*"], "no column 'g*'"),
    (["--click-columns", "position=rank,click=clicked,features=f1:f2:query", "--test", "TEST"],
     "features: column 'query' is the query column"),
    (["--click-columns", "position=rank,click=clicked", "--first-position", "0"], "position 0 is missing"),
    (["--click-columns", "position=rank,click=clicked", "--clicks", "pbm"], "drop --clicks"),
    (["--click-columns", "position=rank,click=clicked", "--methods", "cb:YetiRank"], "CatBoost cannot validate"),
    (["--click-columns", "position=rank,click=clicked", "--methods", "ens:lgb:LambdaRank+lgb:RankNet"],
     "list its members as methods of their own"),
    (["--click-columns", "position=rank,click=clicked", "--test", "NOFILE"], "no such file"),
])
def test_compare_click_log_refusals(mq2008_log, data_dir, tmp_path, capsys, extra, match):
    path, _ = mq2008_log
    extra = [str(data_dir / "mq2008" / "Fold1" / "test.txt.gz") if e == "TEST" else
             str(tmp_path / "none.txt") if e == "NOFILE" else e for e in extra]
    out = tmp_path / "r"
    assert main(["compare", "--click-log", str(path), "--rounds", "2", "--out", str(out), "--quiet", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and match in err, err
    assert not out.exists()


def test_compare_click_log_refuses_a_bad_table(mq2008_log, tmp_path, capsys):
    _, table = mq2008_log
    bad = table.copy()
    bad.loc[5, "clicked"] = 2
    log = tmp_path / "bad.csv"
    bad.to_csv(log, index=False)
    for args, match in (([], "click: column 'clicked' must hold clicks 0 or 1"),
                        (["--first-position", "0"], "--click-log")):
        assert _run(log, tmp_path / "r", *args) == 2
        assert match in capsys.readouterr().err
    few = tmp_path / "few.csv"
    table[table["query"] < 2].to_csv(few, index=False)
    assert _run(few, tmp_path / "r") == 2 and "2 queries, too few" in capsys.readouterr().err
    assert _run(tmp_path / "log.txt", tmp_path / "r") == 2 and "no such file" in capsys.readouterr().err
    assert main(["compare", "--click-columns", "query=q", "--out", str(tmp_path / "r")]) == 2
    assert "describe --click-log" in capsys.readouterr().err


def _args(log, **kw):
    import argparse

    return argparse.Namespace(**{"click_log": str(log), "click_columns": "position=rank,click=clicked",
                                 "first_position": None, "seed": 0, "test": None, **kw})


def test_test_features_are_matched_to_the_log_columns_by_name(mq2008_log, data_dir, tmp_path):
    """Issue 39: with two feature columns swapped in the table, --test paired them with the wrong features
    (test NDCG@10 .89 -> .24, below random) and the run looked normal."""
    from customobj.compare.click_log import load_click_log
    from customobj.data import load_letor

    _, table = mq2008_log
    names = list(table.columns)
    i, j = names.index("f1"), names.index("f40")
    names[i], names[j] = names[j], names[i]
    swapped = tmp_path / "swapped.parquet"
    table[names].to_parquet(swapped)
    test_file = data_dir / "mq2008" / "Fold1" / "test.txt.gz"
    letor = load_letor(test_file)
    X = letor.X.toarray() if hasattr(letor.X, "toarray") else np.asarray(letor.X)
    (_, train, _, test), = load_click_log(_args(swapped, test=str(test_file)))[0]
    assert np.array_equal(test.X[:, 0], X[:, 39]) and np.array_equal(test.X[:, 39], X[:, 0])
    assert np.array_equal(test.X[:, 1:39], X[:, 1:39])
    (_, train0, _, test0), = load_click_log(_args(mq2008_log[0], test=str(test_file)))[0]
    assert np.array_equal(train.X[:, 0], train0.X[:, 39])  # the log's own order, and the test file's follows it
    assert np.array_equal(test0.X, X)


@pytest.mark.parametrize("columns, match", [
    ("features=f1:abc", "'abc' carry no number"),
    ("features=f1:f01", "'f1', 'f01' name the same feature 1"),
    ("features=f46:f47", "has 46 features but the click log's feature columns 'f47' name features beyond them"),
])
def test_test_features_that_cannot_be_matched_are_refused(mq2008_log, data_dir, tmp_path, columns, match):
    from customobj.compare.click_log import load_click_log

    _, table = mq2008_log
    extra = table.assign(abc=table["f2"], f01=table["f3"], f47=table["f4"])
    log = tmp_path / "extra.parquet"
    extra.to_parquet(log)
    test_file = data_dir / "mq2008" / "Fold1" / "test.txt.gz"
    with pytest.raises(UsageError, match=match):
        load_click_log(_args(log, test=str(test_file), click_columns=f"position=rank,click=clicked,{columns}"))


def test_a_log_no_tree_can_split_is_refused_in_customobjs_words(mq2008_log, tmp_path, capsys):
    """Issue 39: constant features (or too few rows for LightGBM) exited 1 with LightGBM's 'Check failed'."""
    _, table = mq2008_log
    three = table[table["query"].isin(np.unique(table["query"])[:3])]
    flat = three.assign(**{f"f{j + 1}": 1.0 for j in range(46)})
    for name, frame, match in (("flat", flat, "is constant over the 2 training sessions: no tree can split"),
                               ("few", three, "LightGBM finds no feature it can split in the")):
        log = tmp_path / f"{name}.parquet"
        frame.to_parquet(log)
        assert _run(log, tmp_path / "r") == 2
        err = capsys.readouterr().err
        assert match in err and "Check failed" not in err, err


def test_paths_that_are_not_regular_files_are_called_what_they_are(mq2008_log, tmp_path, capsys):
    """Issue 39: an existing FIFO or directory was called 'no such file'."""
    path, _ = mq2008_log
    folder = tmp_path / "dir.parquet"
    folder.mkdir()
    assert _run(folder, tmp_path / "r") == 2
    assert f"--click-log: {folder} is not a regular file (a directory)" in capsys.readouterr().err
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.csv")
        assert _run(tmp_path / "pipe.csv", tmp_path / "r") == 2
        assert "is not a regular file (a FIFO)" in capsys.readouterr().err
        os.mkfifo(tmp_path / "test.txt")
        assert _run(path, tmp_path / "r", "--test", str(tmp_path / "test.txt")) == 2
        assert f"--test: {tmp_path / 'test.txt'} is not a regular file (a FIFO)" in capsys.readouterr().err
    empty = tmp_path / "empty.parquet"
    empty.write_bytes(b"")
    assert _run(empty, tmp_path / "r") == 2
    assert f"source '{empty}' is empty (0 bytes)" in capsys.readouterr().err


def test_a_feature_that_is_the_click_column_is_refused_not_dropped(mq2008_log, tmp_path, capsys):
    """Issue 39: --click-columns features=f1:clicked trained on f1 alone, dropping 'clicked' silently."""
    path, _ = mq2008_log
    assert _run(path, tmp_path / "r", "--click-columns", "position=rank,click=clicked,features=f1:clicked") == 2
    err = capsys.readouterr().err
    assert "features: column 'clicked' is the click column" in err, err


def test_missing_feature_values_train_every_backend(mq2008_log, tmp_path, capsys):
    """Issue 39: missing feature values were refused although LightGBM and XGBoost take NaN."""
    _, table = mq2008_log
    holes = table.copy()
    rows = np.random.default_rng(0).random(len(holes)) < 0.2
    holes.loc[rows, "f3"] = np.nan
    holes.loc[~rows, "f7"] = None
    log = tmp_path / "holes.parquet"
    holes.to_parquet(log)
    out = tmp_path / "r"
    methods = "lgb:Unbiased(objective=LambdaRank),xgb:rank:ndcg(lambdarank_unbiased=true)"
    assert main(["compare", "--click-log", str(log), "--click-columns", "position=rank,click=clicked", "--rounds", "3",
                 "--out", str(out), "--no-plot", "--methods", methods]) == 0
    summary = (out / "summary.csv").read_text()
    assert all(m.split("(")[0] in summary for m in methods.split(",")) and "nan" not in summary.lower()
    # issue 39: the output says which of the reported position-bias curves to trust, and why
    assert ESTIMATOR_NOTE in capsys.readouterr().out
