"""Robustness of the data layer (issue 7): malformed LETOR input names file and line, nothing is
silently skipped; query structures and label pairs reject bad input clearly."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from customobj import label_pairs
from customobj.data import load_letor, load_letor_folds, synthetic
from customobj.groups import Groups, as_groups

MALFORMED = [
    ("bad feature token", "2 qid:1 1:0.5\n0 qid:1 1:0.5 foo\n", 2, r"bad feature token"),
    ("feature value not a number", "2 qid:1 1:abc\n", 1, r"feature value is not a number"),
    ("missing qid", "2 qid:1 1:0.5\n1 1:0.3\n", 2, r"line has no qid but earlier lines have one"),
    ("unexpected qid", "2 1:0.5\n1 qid:1 1:0.3\n", 2, r"line has a qid but earlier lines have none"),
    ("duplicate feature index", "0 qid:1 1:1\n2 qid:1 3:0.5 1:0.7 3:1\n", 2, r"the same feature index appears twice"),
    ("bad qid", "2 qid:x 1:0.5\n", 1, r"bad qid token"),
    ("qid overflow", "1 qid:99999999999999999999 1:5\n", 1, r"bad qid token"),
    ("label not a number", "1 qid:1 1:1\nx qid:1 1:0.5\n", 2, r"the label is not a number"),
    ("NaN label", "nan qid:1 1:0.5\n", 1, r"the label must be finite"),
    ("overflowing label", "# header\n1e400 qid:1 1:0.5\n", 2, r"the label must be finite"),
    ("feature index 0", "1 qid:1 0:1\n", 1, r"feature index 0"),
    ("qid after a feature", "1 1:1 qid:1\n", 1, r"bad feature token"),
    ("empty index", "1 qid:1 :5\n", 1, r"bad feature token"),
    ("space after colon", "1 qid:1 1: 5\n", 1, r"feature value is not a number"),
    ("binary garbage", "1 qid:1 1:5\n\x00\x01\n", 2, r"the label is not a number"),
    ("non-contiguous qid", "1 qid:1 1:1\n1 qid:2 1:1\n1 qid:1 1:1\n", 3, r"qid 1 reappears after another query"),
]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name,text,line,msg", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_letor_names_file_and_line(tmp_path, name, text, line, msg, gz):
    path = tmp_path / ("bad.txt.gz" if gz else "bad.txt")
    data = text.encode("latin-1")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(ValueError, match=rf"{path.name}: line {line}: {msg}"):
        load_letor(path)


def test_index_above_n_features(tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text("1 qid:1 1:1 7:2\n")
    with pytest.raises(ValueError, match=r"wide.txt: line 1: feature index exceeds n_features=5"):
        load_letor(path, n_features=5)


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "broken.txt.gz"
    path.write_bytes(gzip.compress(b"1 qid:1 1:1\n" * 100)[:40])
    with pytest.raises(ValueError, match=r"broken.txt.gz: not a valid gzip file"):
        load_letor(path)


def test_query_file_errors(tmp_path):
    data = tmp_path / "rank.train"
    data.write_text("1 1:1\n0 1:2\n1 1:3\n")
    (tmp_path / "rank.train.query").write_text("2\nx\n")
    with pytest.raises(ValueError, match=r"rank.train.query: line 2: expected a non-negative query size, got 'x'"):
        load_letor(data)
    (tmp_path / "rank.train.query").write_text("2\n2\n")
    with pytest.raises(ValueError, match=r"query sizes sum to 4 but the data file has 3 rows"):
        load_letor(data)
    (tmp_path / "rank.train.query").write_text("2\n1\n")
    assert load_letor(data).group.tolist() == [2, 1]


def test_qid_and_query_file_disagree(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("1 qid:1 1:1\n0 qid:1 1:2\n1 qid:2 1:3\n")
    (tmp_path / "d.txt.query").write_text("1\n2\n")
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
