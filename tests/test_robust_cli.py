"""Robustness of the command line (issue 7): bad arguments and bad data files end with exit code 2
and a message naming the argument or the file and line; nothing is trained on bad input."""
from __future__ import annotations

import pytest

from customobj.cli import main

compare = pytest.importorskip("customobj.compare.command")


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out + out.err


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
    ("rounds zero", ["compare", "--rounds", "0"], r"--rounds: .*expected a positive integer, got 0"),
    ("learning rate nan", ["compare", "--learning-rate", "nan"], r"--learning-rate: .*positive finite number"),
    ("bad folds", ["compare", "--folds", "1,x"], r"--folds: .*expected comma-separated fold numbers"),
    ("folds duplicate", ["compare", "--folds", "1,1"], r"--folds: .*distinct fold numbers"),
    ("train without valid", ["compare", "--train", "a.txt"], r"missing --valid, --test"),
    ("missing letor dir", ["compare", "--letor", "/nonexistent/letor"], r"--letor: no such directory"),
    ("unknown method", ["compare", "--methods", "nosuchmethod"], r"nosuchmethod"),
]


@pytest.mark.parametrize("name,argv,msg", CASES, ids=[c[0] for c in CASES])
def test_bad_arguments_exit_2_with_message(name, argv, msg, capsys):
    code, text = _run(argv, capsys)
    assert code == 2
    assert __import__("re").search(msg, text), text


def test_malformed_training_file_names_file_and_line(tmp_path, capsys):
    train, vali, test = _files(tmp_path)
    code, text = _run(["compare", "--train", train, "--valid", vali, "--test", test, "--out", str(tmp_path / "o"),
                       "--quiet", "--no-plot", "--rounds", "1"], capsys)
    assert code == 2
    assert "train.txt: line 5: feature value is not a number" in text
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.parametrize("bad_line,msg", [
    ("1 1:0.5\n", r"line 5: line has no qid but earlier lines have one"),
    ("1 qid:2 1:0.5 1:0.7\n", r"line 5: the same feature index appears twice"),
    ("1 qid:1 1:0.5\n", r"line 5: qid 1 reappears after another query"),
])
def test_malformed_letor_lines_reported(tmp_path, capsys, bad_line, msg):
    train, vali, test = _files(tmp_path, bad_line)
    code, text = _run(["compare", "--train", train, "--valid", vali, "--test", test, "--quiet", "--no-plot",
                       "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and __import__("re").search(msg, text), text


def test_letor_dir_without_folds(tmp_path, capsys):
    code, text = _run(["compare", "--letor", str(tmp_path), "--quiet", "--no-plot"], capsys)
    assert code == 2 and "no Fold<k> subfolders" in text


@pytest.mark.parametrize("method", [
    "lgb:RankNet",
    "lgb:lambdarank",
])
def test_negative_labels_rejected_before_training(tmp_path, capsys, method):
    train, vali, test = _files(tmp_path, "-1 qid:3 1:0.5\n")
    code, text = _run(["compare", "--train", train, "--valid", vali, "--test", test, "--quiet", "--no-plot",
                       "--out", str(tmp_path / "o"), "--methods", method, "--rounds", "1"], capsys)
    assert code == 2 and "labels must be non-negative" in text and "row 4" in text, text
