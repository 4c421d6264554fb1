"""Robustness of the command line (issues 7 and 13): every failure is one line on stderr, no
traceback, exit status 2 for bad arguments or data (found before training) and 1 for a failure
while running; bad data files are named with line and column; nothing is trained on bad input."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does; else a warning joins stderr)
from customobj.cli import main


pytestmark = pytest.mark.usefixtures("in_empty_folder")  # conftest: compare's default --out lands there


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    assert len(out.err.splitlines()) == 1, out.err  # the one-line rule
    return code, out.out + out.err


def _cli(args, cwd, timeout=300):
    """Run the real console entry point in a fresh process: (exit status, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if k != "CUSTOMOBJ_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "customobj.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def _files(tmp_path, bad_line="0 qid:1 1:0.5 2:x\n"):
    good = "2 qid:1 1:0.5 2:1\n0 qid:1 1:0.1 2:0\n1 qid:2 1:0.3 2:1\n0 qid:2 1:0.2 2:0\n"
    paths = []
    for name, text in (("train.txt", good + bad_line), ("vali.txt", good), ("test.txt", good)):
        p = tmp_path / name
        p.write_text(text)
        paths.append(str(p))
    return paths


CASES = [
    ("no command", [], r"usage: customobj"),
    ("unknown option for info", ["info", "--bogus"], r"unrecognized arguments: --bogus"),
    ("rounds zero", ["compare", "--rounds", "0"], r"--rounds: .*expected a positive integer <= 2147483647, got 0"),
    ("rounds beyond int32", ["compare", "--rounds", str(2**40)], r"--rounds: .*expected a positive integer"),
    ("negative seed", ["compare", "--seed", "-1"], r"--seed: expected an integer in 0..2147483647, got -1"),
    ("one leaf", ["compare", "--num-leaves", "1"], r"--num-leaves: expected an integer in 2..131072, got 1"),
    ("jobs zero", ["compare", "--jobs", "0"], r"--jobs: expected an integer in 1..1024, got 0"),
    ("learning rate nan", ["compare", "--learning-rate", "nan"], r"--learning-rate: .*positive finite number"),
    ("bad folds", ["compare", "--folds", "1,x"], r"--folds: .*expected comma-separated fold numbers"),
    ("folds duplicate", ["compare", "--folds", "1,1"], r"--folds: .*distinct fold numbers"),
    ("train without valid", ["compare", "--train", "a.txt"], r"missing --valid, --test"),
    ("missing letor dir", ["compare", "--letor", "/nonexistent/letor"], r"--letor: no such directory"),
    ("unknown method", ["compare", "--methods", "nosuchmethod"], r"nosuchmethod.*--help lists the valid names"),
    ("int beyond int64 in a method", ["compare", "--methods", "lgb:LambdaRank(k=1180591620717411303424)"],
     r"option 'k': integer 1180591620717411303424 is outside the 64-bit range"),
    ("non-finite option", ["compare", "--methods", "lgb:RankNet(sigma=1e999)"], r"option 'sigma': number '1e999' is not finite"),
]


@pytest.mark.parametrize("name,argv,msg", CASES, ids=[c[0] for c in CASES])
def test_bad_arguments_exit_2_with_message(name, argv, msg, capsys):
    code, text = _run(argv, capsys)
    assert code == 2
    assert re.search(msg, text), text


def test_malformed_training_file_names_file_and_line(tmp_path, capsys):
    train, vali, test = _files(tmp_path)
    code, text = _run(["compare", "--train", train, "--valid", vali, "--test", test, "--out", str(tmp_path / "o"),
                       "--quiet", "--no-plot", "--rounds", "1"], capsys)
    assert code == 2
    assert "--train " in text and "train.txt: line 5, column 17: feature value is not a number" in text
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def _compare_with_line(tmp_path, capsys, line, *options):
    """``customobj compare`` (quiet, no plot, output in ``o``) on the small files of :func:`_files`, the
    training file ending in ``line``; ``(exit code, output)``."""
    train, vali, test = _files(tmp_path, line)
    return _run(["compare", "--train", train, "--valid", vali, "--test", test, "--quiet", "--no-plot",
                 "--out", str(tmp_path / "o"), *options], capsys)


@pytest.mark.parametrize("bad_line,msg", [
    ("1 1:0.5\n", r"line 5, column 3: line has no qid but earlier lines have one"),
    ("1 qid:2 1:0.5 1:0.7\n", r"line 5, column 15: the same feature index appears twice"),
    ("1 qid:1 1:0.5\n", r"line 5: qid 1 reappears after another query"),
])
def test_malformed_letor_lines_reported(tmp_path, capsys, bad_line, msg):
    code, text = _compare_with_line(tmp_path, capsys, bad_line)
    assert code == 2 and re.search(msg, text), text


def test_letor_dir_without_folds(tmp_path, capsys):
    code, text = _run(["compare", "--letor", str(tmp_path), "--quiet", "--no-plot"], capsys)
    assert code == 2 and "no Fold<k> subfolders" in text


@pytest.mark.parametrize("method", [
    "lgb:RankNet",
    "lgb:lambdarank",
])
def test_negative_labels_rejected_before_training(tmp_path, capsys, method):
    code, text = _compare_with_line(tmp_path, capsys, "-1 qid:3 1:0.5\n", "--methods", method, "--rounds", "1")
    assert code == 2 and "labels must be non-negative" in text and "row 4" in text, text


@pytest.mark.parametrize("line, msg", [
    ("31 qid:3 1:0.5\n", r"integer grades 0..30 .*found 31 at row 4"),
    ("1.5 qid:3 1:0.5\n", r"integer grades 0..30 .*found 1.5 at row 4"),
    ("1 qid:3 1:inf\n", r"feature 1 of row 4 \(0-based\) is inf; XGBoost refuses infinite features"),
])
def test_labels_and_features_compare_cannot_train_on(tmp_path, capsys, line, msg):
    code, text = _compare_with_line(tmp_path, capsys, line, "--methods", "lgb:lambdarank", "--rounds", "1")
    assert code == 2 and re.search(r"--train .*train.txt: labels must be|--train .*train.txt: feature", text), text
    assert re.search(msg, text), text


# --- the console script in a fresh process: exactly one stderr line, never a traceback ------------
TINY = ["--synthetic-queries", "20", "--synthetic-docs", "5", "--rounds", "1", "--methods", "lgb:lambdarank",
        "--quiet", "--no-plot"]


def _subprocess_cases(tmp_path):
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "ok.txt").write_text("1 qid:1 1:1\n0 qid:1 1:0\n")
    (tmp_path / "wide.txt").write_text("1 qid:1 2000000000:1\n0 qid:1 1:1\n")
    old = tmp_path / "old-results"
    old.mkdir()
    (old / "results.json").write_text("{}")
    files = ["--valid", "ok.txt", "--test", "ok.txt", "--methods", "lgb:lambdarank", "--quiet", "--out", "o"]
    return [
        ("out is a file", ["compare", *TINY, "--out", "afile"], 2, r"--out afile: exists and is not a folder"),
        ("out below a file", ["compare", *TINY, "--out", "afile/sub"], 2, r"--out afile/sub: .*afile is a file, not a folder"),
        ("empty train file", ["compare", "--train", "empty.txt", *files], 2,
         r"--train empty.txt: no data rows \(the file is empty"),
        ("feature index 2e9", ["compare", "--train", "wide.txt", *files], 2,
         r"wide.txt: line 1, column 9: feature index 2000000000 makes a dense X of 2 rows x 2,000,000,000 columns "
         r"of float32 = 16 GB"),
        ("int beyond int64", ["compare", *TINY, "--methods", "lgb:LambdaRank(k=1180591620717411303424)"], 2,
         r"invalid method 'lgb:LambdaRank\(k=1180591620717411303424\)': option 'k'"),
        ("earlier results", ["compare", *TINY, "--out", "old-results"], 2,
         r"--out old-results already holds compare results \(results.json\); pass --overwrite"),
    ]


def test_console_failures_are_one_line_without_traceback(tmp_path):
    for name, args, code, msg in _subprocess_cases(tmp_path):
        status, out, err = _cli(args, tmp_path)
        assert status == code, (name, status, err)
        assert "Traceback" not in err and "Traceback" not in out, name
        assert len(err.splitlines()) == 1, (name, err)
        assert err.startswith("customobj"), (name, err)
        assert re.search(msg, err), (name, err)
    assert (tmp_path / "afile").read_text() == "not a folder"
    assert sorted(p.name for p in (tmp_path / "old-results").iterdir()) == ["results.json"]
    assert not (tmp_path / "o").exists()
