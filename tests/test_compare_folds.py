"""The data compare trains on (customobj/compare/folds.py): synthetic folds rotated as LETOR's, files
and LETOR folders checked before any training, and the user's likely mistakes named."""
import argparse

import numpy as np
import pytest

import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does; else a warning joins stderr)
from customobj._cli_errors import UsageError
from customobj.cli import main as cli_main
from customobj.compare.folds import MAX_GRADE, N_PARTS, _check_split, load_folds, parse_folds
from customobj.compare.trainers import Split


def _args(**kw):
    base = dict(train=None, valid=None, test=None, letor=None, folds=None, synthetic_queries=30,
                synthetic_docs=4, seed=3)
    base.update(kw)
    return argparse.Namespace(**base)


def test_synthetic_folds_rotate_disjoint_parts_that_cover_every_query():
    folds, desc = load_folds(_args())
    assert [f[0] for f in folds] == list(range(1, N_PARTS + 1)) and "30 queries x 4 docs" in desc
    every = frozenset(tuple(r) for s in folds[0][1:] for r in s.X)
    for _, train, valid, test in folds:
        assert train.sizes.size + valid.sizes.size + test.sizes.size == 30
        rows = [tuple(r) for s in (train, valid, test) for r in s.X]
        assert len(set(rows)) == len(rows)  # no document in two parts of one fold
    # each query part is the test part of exactly one fold
    tests = [frozenset(tuple(r) for r in f[3].X) for f in folds]
    assert len(set(tests)) == N_PARTS and frozenset().union(*tests) == every


def test_synthetic_folds_are_seeded():
    a, _ = load_folds(_args(folds=[2]))
    b, _ = load_folds(_args(folds=[2]))
    c, _ = load_folds(_args(folds=[2], seed=4))
    assert np.array_equal(a[0][3].X, b[0][3].X) and not np.array_equal(a[0][3].X, c[0][3].X)


@pytest.mark.parametrize("text, ok", [("1,2", [1, 2]), ("3", [3]), ("1,1", None), ("0", None), ("a", None), ("", None)])
def test_parse_folds(text, ok):
    if ok is None:
        with pytest.raises(argparse.ArgumentTypeError):
            parse_folds(text)
    else:
        assert parse_folds(text) == ok


@pytest.mark.parametrize("label", [-1.0, 0.5, MAX_GRADE + 1.0, np.nan])
def test_check_split_refuses_labels_that_are_not_grades(label):
    y = np.array([1.0, label])
    with pytest.raises(UsageError, match=r"where: labels must be non-negative integer grades .* at row 1"):
        _check_split(Split(np.zeros((2, 1)), y, np.array([2])), "where")


def test_check_split_refuses_infinite_features_and_keeps_nan():
    X = np.array([[0.0, np.nan], [1.0, 2.0]])
    split = Split(X.copy(), np.array([0.0, MAX_GRADE]), np.array([2]))
    assert _check_split(split, "w") is split
    X[1, 1] = -np.inf
    with pytest.raises(UsageError, match="feature 2 of row 1"):
        _check_split(Split(X, np.array([0.0, 1.0]), np.array([2])), "w")


def test_letor_on_one_folds_folder_suggests_train_valid_test(tmp_path, capsys):
    fold = tmp_path / "Fold1"
    fold.mkdir()
    for name in ("train", "vali", "test"):
        (fold / f"{name}.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    assert cli_main(["compare", "--letor", str(fold), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert (f"--letor {fold} holds one fold's files itself, not Fold<k> subfolders: run that fold with "
            f"--train {fold / 'train.txt'} --valid {fold / 'vali.txt'} --test {fold / 'test.txt'}") in err
    assert "load_letor" not in err


@pytest.mark.parametrize("data", [["--letor", "DIR"], ["--train", "F", "--valid", "F", "--test", "F"]])
@pytest.mark.parametrize("synthetic", [["--synthetic-queries", "50"], ["--synthetic-docs", "5"]])
def test_synthetic_sizes_with_real_data_are_an_error_not_ignored(data, synthetic, tmp_path, capsys):
    (tmp_path / "Fold1").mkdir()
    (tmp_path / "F").write_text("1 qid:1 1:0.5\n")
    argv = [a.replace("DIR", str(tmp_path)).replace("F", str(tmp_path / "F")) if a in ("DIR", "F") else a for a in data]
    assert cli_main(["compare", *argv, *synthetic, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{synthetic[0]} is for the built-in synthetic data, not for {data[0] if data[0] == '--letor' else '--train/--valid/--test'}" in err
