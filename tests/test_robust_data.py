"""Robustness of the data layer (issue 7): malformed LETOR input names file and line, nothing is
silently skipped; query structures and label pairs reject bad input clearly."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from customobj import label_pairs
from customobj.data import load_letor, load_letor_folds, synthetic
from customobj.groups import Groups, as_groups

MALFORMED = [  # (name, text, "line[, column]" of the token in error, message)
    ("bad feature token", "2 qid:1 1:0.5\n0 qid:1 1:0.5 foo\n", "2, column 15", r"bad feature token"),
    ("feature value not a number", "2 qid:1 1:abc\n", "1, column 11", r"feature value is not a number"),
    ("missing qid", "2 qid:1 1:0.5\n1 1:0.3\n", "2, column 3", r"line has no qid but earlier lines have one"),
    ("unexpected qid", "2 1:0.5\n1 qid:1 1:0.3\n", "2, column 3", r"line has a qid but earlier lines have none"),
    ("duplicate feature index", "0 qid:1 1:1\n2 qid:1 3:0.5 1:0.7 3:1\n", "2, column 21",
     r"the same feature index appears twice"),
    ("bad qid", "2 qid:x 1:0.5\n", "1, column 3", r"bad qid token"),
    ("qid not an integer", "2 qid:1.5 1:0.5\n", "1, column 3", r"bad qid token"),
    ("qid overflow", "1 qid:99999999999999999999 1:5\n", "1, column 3", r"bad qid token"),
    ("label not a number", "1 qid:1 1:1\nx qid:1 1:0.5\n", "2, column 1", r"the label is not a number"),
    ("NaN label", "nan qid:1 1:0.5\n", "1, column 1", r"the label must be finite"),
    ("infinite label", "1 qid:1 1:1\n-inf qid:1 1:0.5\n", "2, column 1", r"the label must be finite"),
    ("overflowing label", "# header\n1e400 qid:1 1:0.5\n", "2, column 1", r"the label must be finite"),
    ("feature index 0", "1 qid:1 0:1\n", "1, column 9", r"feature index 0"),
    ("negative feature index", "1 qid:1 -3:1\n", "1, column 9", r"bad feature token"),
    ("index beyond int32", "1 qid:1 2147483648:1\n", "1, column 9", r"feature index above the supported maximum"),
    ("qid after a feature", "1 1:1 qid:1\n", "1, column 7", r"bad feature token"),
    ("empty index", "1 qid:1 :5\n", "1, column 9", r"bad feature token"),
    ("space after colon", "1 qid:1 1: 5\n", "1, column 11", r"feature value is not a number"),
    ("binary garbage", "1 qid:1 1:5\n\x00\x01\n", "2, column 1", r"a NUL byte: this is not a text file"),
    ("non-contiguous qid", "1 qid:1 1:1\n1 qid:2 1:1\n1 qid:1 1:1\n", "3", r"qid 1 reappears after another query"),
]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name,text,where,msg", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_letor_names_file_line_and_column(tmp_path, name, text, where, msg, gz):
    path = tmp_path / ("bad.txt.gz" if gz else "bad.txt")
    data = text.encode("latin-1")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(ValueError, match=rf"{path.name}: line {where}: {msg}"):
        load_letor(path)


@pytest.mark.parametrize("magic,name", [(b"BZh91AY&SY", "bzip2"), (b"\xfd7zXZ\x00\x00", "xz"),
                                        (b"PK\x03\x04rest", "zip"), (b"\xff\xfe1\x00 \x00", "UTF-16 text")])
def test_other_file_formats_are_named(tmp_path, magic, name):
    path = tmp_path / "data.bin"
    path.write_bytes(magic)
    with pytest.raises(ValueError, match=rf"data.bin: this is a {name} file; load_letor reads plain text"):
        load_letor(path)


def test_folders_devices_and_pipes_are_refused_before_reading(tmp_path):
    """A FIFO would block open() and /dev/zero would be read forever: run in a subprocess with a timeout."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code = ("import sys\nfrom customobj.data import load_letor\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n        load_letor(p)\n    except ValueError as exc:\n        print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code, str(fifo), "/dev/zero", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 3, out.stderr
    for line, path in zip(lines, [str(fifo), "/dev/zero", str(tmp_path)]):
        assert line == f"{path}: not a regular file (a folder, device or pipe); load_letor reads files"


def test_labels_and_feature_values_kept_as_written(tmp_path):
    """Negative and large grades are data (the losses check what they accept); NaN is a missing
    feature value and inf is kept; a finite value beyond float32's range is refused (it would become
    inf in the float32 X without a word)."""
    path = tmp_path / "v.txt"
    path.write_text("-1 qid:1 1:nan 2:inf\n1e300 qid:1 1:-Infinity 2:3e38\n")
    d = load_letor(path)
    assert d.y.tolist() == [-1.0, 1e300]
    assert np.isnan(d.X[0, 0]) and d.X[0, 1] == np.inf and d.X[1, 0] == -np.inf
    assert d.X[1, 1] == np.float32(3e38)
    path.write_text("1 qid:1 1:0.5\n0 qid:1 1:1 2:-1e39\n")
    with pytest.raises(ValueError, match=r"v.txt: line 2, column 15: feature value '-1e39' is beyond the float32 "
                                         r"range of X"):
        load_letor(path)
    path.write_text("1 qid:1 1:3.402823466385289e+38\n")  # above FLT_MAX in float64, rounds to it: kept
    assert load_letor(path).X[0, 0] == np.finfo(np.float32).max


# --- memory guard: a dense X too wide or too large is refused before allocation -------------------
def test_huge_feature_index_refused_dense_with_size(tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text("1 qid:1 2000000000:1\n0 qid:1 1:1\n")
    with pytest.raises(ValueError, match=r"wide.txt: line 1, column 9: feature index 2000000000 makes a dense X "
                                         r"of 2 rows x 2,000,000,000 columns of float32 = 16 GB, wider than "
                                         r"max_features=100,000 .*pass sparse=True"):
        load_letor(path)
    X, y, group = load_letor(path, sparse=True)
    assert X.shape == (2, 2_000_000_000) and X.nnz == 2 and X[0, 1_999_999_999] == 1.0


def test_max_features_keyword(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("1 qid:1 1:1 300:2\n")
    with pytest.raises(ValueError, match=r"w.txt: line 1, column 13: feature index 300 makes .*max_features=100"):
        load_letor(path, max_features=100)
    assert load_letor(path, max_features=300).X.shape == (1, 300)
    with pytest.raises(ValueError, match=r"n_features=500 makes a dense X of 1 rows x 500 columns"):
        load_letor(path, n_features=500, max_features=300)
    with pytest.raises(ValueError, match=r"max_features must be >= 1"):
        load_letor(path, max_features=0)
    with pytest.raises(TypeError, match=r"max_features must be an integer"):
        load_letor(path, max_features=1e6)


def test_folds_guard_names_the_widest_file(tmp_path):
    fold = tmp_path / "Fold1"
    fold.mkdir()
    (fold / "train.txt").write_text("1 qid:1 1:1\n")
    (fold / "vali.txt").write_text("1 qid:2 1:1\n0 qid:2 5:1 999999:3\n")
    (fold / "test.txt").write_text("1 qid:3 2:1\n")
    with pytest.raises(ValueError, match=r"vali.txt: line 2, column 13: feature index 999999 makes a dense X of 4 rows"):
        load_letor_folds(tmp_path)
    (fold_data,) = load_letor_folds(tmp_path, sparse=True)
    assert fold_data.train.X.shape == fold_data.test.X.shape == (1, 999999)


def test_index_above_n_features(tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text("1 qid:1 1:1 7:2\n")
    with pytest.raises(ValueError, match=r"wide.txt: line 1, column 13: feature index exceeds n_features=5"):
        load_letor(path, n_features=5)


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "broken.txt.gz"
    path.write_bytes(gzip.compress(b"1 qid:1 1:1\n" * 100)[:40])
    with pytest.raises(ValueError, match=r"broken.txt.gz: not a valid gzip file"):
        load_letor(path)


def _with_query_file(tmp_path, name, rows, sizes):
    """The data file ``name`` holding ``rows``, beside its LightGBM query file ``name.query`` of ``sizes``."""
    data = tmp_path / name
    data.write_text(rows)
    (tmp_path / (name + ".query")).write_text(sizes)
    return data


def test_query_file_errors(tmp_path):
    data = _with_query_file(tmp_path, "rank.train", "1 1:1\n0 1:2\n1 1:3\n", "2\nx\n")
    with pytest.raises(ValueError, match=r"rank.train.query: line 2: expected a non-negative query size, got 'x'"):
        load_letor(data)
    (tmp_path / "rank.train.query").write_text("2\n2\n")
    with pytest.raises(ValueError, match=r"query sizes sum to 4 but the data file has 3 rows"):
        load_letor(data)
    (tmp_path / "rank.train.query").write_text("2\n1\n")
    assert load_letor(data).group.tolist() == [2, 1]


def test_qid_and_query_file_disagree(tmp_path):
    data = _with_query_file(tmp_path, "d.txt", "1 qid:1 1:1\n0 qid:1 1:2\n1 qid:2 1:3\n", "1\n2\n")
    with pytest.raises(ValueError, match=r"disagree with .*d.txt.query"):
        load_letor(data)


def test_nothing_silently_skipped(tmp_path):
    """Blank and comment lines are the only lines without a row; every other line is a row or an error."""
    path = tmp_path / "ok.txt"
    path.write_text("# header\n\n2 qid:1 1:0.5 2:1 # doc a\n   \n0 qid:1 2:3\r\n1 qid:7 1:-1.5e-3\n")
    d = load_letor(path)
    assert d.y.tolist() == [2.0, 0.0, 1.0] and d.group.tolist() == [2, 1] and d.qid.tolist() == [1, 1, 7]
    np.testing.assert_array_equal(d.X, np.array([[0.5, 1], [0, 3], [-1.5e-3, 0]], dtype=np.float32))


def test_folds_errors(tmp_path):
    with pytest.raises(ValueError, match=r"is not a directory"):
        load_letor_folds(tmp_path / "nope")
    with pytest.raises(ValueError, match=r"no Fold<k> subfolders"):
        load_letor_folds(tmp_path)
    (tmp_path / "Fold1").mkdir()
    (tmp_path / "Fold1" / "train.txt").write_text("1 qid:1 1:1\n")
    with pytest.raises(ValueError, match=r"Fold1 lacks vali.txt\[.gz\], test.txt\[.gz\]"):
        load_letor_folds(tmp_path)
    with pytest.raises(ValueError, match=r"fold\(s\) \[2\] not found"):
        load_letor_folds(tmp_path, folds=[2])


GROUP_ERRORS = [
    (lambda: as_groups([2, 2], 5), ValueError, r"group sizes sum to 4 but data has 5 rows"),
    (lambda: as_groups([2, -1, 4], 5), ValueError, r"group 1 has size -1"),
    (lambda: as_groups([2.0, 3.5], 5), TypeError, r"found 3.5 at position 1"),
    (lambda: as_groups([[2, 3]], 5), ValueError, r"must be 1-D"),
    (lambda: as_groups(np.array(["2", "3"]), 5), TypeError, r"array of integers, got dtype <U1"),
    (lambda: as_groups([True, False], 1), TypeError, r"booleans"),
    (lambda: as_groups(None, 5), TypeError, r"group is required"),
    (lambda: as_groups(5, 5), TypeError, r"got int"),
    (lambda: as_groups(Groups.from_sizes([2, 2]), 5), ValueError, r"group covers 4 rows but data has 5"),
    (lambda: Groups([1, 3]), ValueError, r"ptr must start at 0"),
    (lambda: Groups([0, 3, 2]), ValueError, r"ptr must be non-decreasing; ptr\[2\] = 2 < ptr\[1\] = 3"),
    (lambda: Groups.from_ptr([0, 2, 4], 5), ValueError, r"group ptr ends at 4 but data has 5 rows"),
    (lambda: Groups.from_qid([3, 3, 1, 1, 3]), ValueError, r"qid 3 reappears at row 4 after another query"),
    (lambda: Groups.from_qid(np.array(["a", "b", "a"])), ValueError, r"qid 'a' reappears at row 2"),
    (lambda: Groups.from_qid(np.array([1, 2], dtype=object)), TypeError, r"qid has dtype object"),
    (lambda: Groups.from_qid([1, 1, 2], 4), ValueError, r"qid has 3 rows but data has 4"),
    (lambda: label_pairs([0, 1, 2], [3], max_pairs_per_query=-1), ValueError, r"max_pairs_per_query must be >= 0"),
    (lambda: label_pairs([0, 1, 2], [3], seed=-1), ValueError, r"seed must be >= 0"),
    (lambda: label_pairs([0, np.nan, 2], [3]), ValueError, r"labels must be finite; found nan at position 1"),
    (lambda: label_pairs([0, 1, 2], [2]), ValueError, r"group sizes sum to 2 but data has 3 rows"),
    (lambda: synthetic(n_queries=0), ValueError, r"n_queries must be >= 1"),
    (lambda: synthetic(docs_per_query=-1), ValueError, r"docs_per_query must be >= 0"),
    (lambda: synthetic(grade_ratio=2.0), ValueError, r"grade_ratio must be in \(0, 1\]"),
    (lambda: load_letor("x.txt", n_features=-1), ValueError, r"n_features must be >= 0"),
    (lambda: load_letor("x.txt", n_features=2**40), ValueError, r"n_features must be <= 2147483646"),
    (lambda: load_letor(3), TypeError, r"path must be a str or os.PathLike, got int"),
    (lambda: load_letor("x.txt", sparse="yes"), TypeError, r"sparse must be True or False, got str"),
    (lambda: load_letor("x.txt", query_file=1.5), TypeError, r"query_file must be a str or os.PathLike"),
    (lambda: load_letor_folds(".", folds=1), TypeError, r"folds must be a list of fold numbers, got int"),
    (lambda: load_letor_folds(".", folds=[0]), ValueError, r"folds\[\] must be >= 1"),
    (lambda: load_letor_folds(".", folds=[]), ValueError, r"folds must name at least one fold"),
    (lambda: load_letor_folds(".", folds=[1, 1]), ValueError, r"folds lists a fold more than once: \[1, 1\]"),
    (lambda: synthetic(max_grade=2000), ValueError, r"max_grade must be <= 30 \(customobj.data.MAX_SYNTHETIC_GRADE\)"),
    (lambda: synthetic(max_grade=0), ValueError, r"max_grade must be >= 1"),
    (lambda: synthetic(seed=-1), ValueError, r"seed must be >= 0, got -1"),
    (lambda: synthetic(seed=1.5), TypeError, r"seed must be an integer, got float"),
    (lambda: synthetic(seed=None), TypeError, r"seed must be an integer, got NoneType"),
    (lambda: synthetic(n_features=0), ValueError, r"n_features must be >= 1"),
    (lambda: synthetic(n_queries=True), TypeError, r"n_queries must be an integer, got bool"),
    (lambda: synthetic(docs_per_query=float("inf")), ValueError, r"docs_per_query must be finite"),
    (lambda: synthetic(docs_per_query="40"), TypeError, r"docs_per_query must be a real number, got str"),
    (lambda: synthetic(min_docs=0), ValueError, r"min_docs must be >= 1"),
    (lambda: synthetic(noise=-0.1), ValueError, r"noise must be >= 0"),
    (lambda: synthetic(noise=float("nan")), ValueError, r"noise must be finite"),
    (lambda: synthetic(query_effect=1e300), ValueError, r"query_effect must be <= 1e\+06"),
    (lambda: synthetic(feature_shift=1e7), ValueError, r"feature_shift must be <= 1e\+06"),
    (lambda: synthetic(grade_ratio=0.0), ValueError, r"grade_ratio must be in \(0, 1\]"),
    (lambda: synthetic(n_queries=10**15), MemoryError, r"synthetic data of 40,000,000,000,000,000 rows x 20 "
                                                        r"features needs about .* GB, more than this machine"),
]


@pytest.mark.parametrize("call,exc,msg", GROUP_ERRORS)
def test_structures_reject_bad_input(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_qid_with_nan_is_not_silently_split():
    # NaN != NaN: a float qid holding NaN would otherwise start a new query at every row.
    with pytest.raises(ValueError, match=r"qid must be finite; found nan at row 1"):
        Groups.from_qid([1.0, np.nan, np.nan])


def test_group_containers_agree():
    import pandas as pd

    want = Groups.from_sizes([2, 3])
    for g in ([2, 3], np.array([2, 3], np.int32), np.array([2.0, 3.0]), pd.Series([2, 3]), (2, 3), want):
        assert as_groups(g, 5) == want
    assert Groups.from_qid(pd.Series([7, 7, 1, 1, 1])) == want
    assert Groups.from_qid(np.array(["q7", "q7", "q1", "q1", "q1"])) == want


def test_synthetic_reproducible():
    a, b = synthetic(20, 10, 5, seed=3), synthetic(20, 10, 5, seed=3)
    assert a.X.tobytes() == b.X.tobytes() and a.y.tobytes() == b.y.tobytes()
    np.testing.assert_array_equal(a.group, b.group)


def test_synthetic_takes_a_negative_zero_scale_as_zero():
    """Found by the fuzz campaign: noise=-0.0 passed the >= 0 check, then numpy refused it as
    "scale < 0" without naming the argument."""
    from customobj.data import synthetic

    a, b = synthetic(3, 5, 4, noise=-0.0, seed=1), synthetic(3, 5, 4, noise=0.0, seed=1)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
