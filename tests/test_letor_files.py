"""customobj._letor_files: the Python side of LETOR reading (format detection, fallback for long
numbers, query structure, the dense-memory guard). ``load_letor`` is tested in tests/test_data.py
and tests/test_robust_data.py."""
from __future__ import annotations

import pytest


def test_dense_larger_than_ram_is_a_memory_error():
    from customobj import _letor_files

    with pytest.raises(MemoryError, match=r"10,000,000 rows x 1,000 columns of float32 = 40 GB, more than "
                                          r"this machine's 8.59 GB of RAM: pass sparse=True"):
        _letor_files.check_dense(10_000_000, 1000, max_features=10**6, because="x", memory=8 * 2**30)
    _letor_files.check_dense(1000, 1000, max_features=10**6, because="x", memory=8 * 2**30)  # 4 MB: fine


def test_line_and_column_are_one_based_and_count_bytes():
    from customobj._letor_files import line_and_column

    raw = b"ab\ncd\n\nxyz"
    assert line_and_column(raw, 0) == (1, 1)
    assert line_and_column(raw, 4) == (2, 2)  # "d"
    assert line_and_column(raw, 6) == (3, 1)  # the empty line
    assert line_and_column(raw, 9) == (4, 3)  # "z"


def test_read_bytes_detects_gzip_by_content_and_drops_a_byte_order_mark(tmp_path):
    import gzip

    from customobj._letor_files import read_bytes

    text = b"1 qid:1 1:0.5\n"
    (tmp_path / "plain.gz").write_bytes(text)  # the name says gzip, the content does not
    (tmp_path / "packed.txt").write_bytes(gzip.compress(text))
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbf" + text)
    for name in ("plain.gz", "packed.txt", "bom.txt"):
        assert read_bytes(str(tmp_path / name)) == text, name
    (tmp_path / "nul.txt").write_bytes(b"1 qid:1 1:0.5\n0 q\x00id:1\n")
    with pytest.raises(ValueError, match=r"nul.txt: line 2, column 4: a NUL byte"):
        read_bytes(str(tmp_path / "nul.txt"))


def test_parse_file_groups_from_qid_or_a_query_file(tmp_path):
    from customobj._letor_files import parse_file

    (tmp_path / "q.txt").write_text("2 qid:5 1:1 4:2\n1 qid:5 2:1\n0 qid:9 1:3\n")
    p = parse_file(tmp_path / "q.txt")
    assert p.labels.tolist() == [2.0, 1.0, 0.0] and p.qid.tolist() == [5, 5, 9]
    assert list(p.group) == [2, 1] and p.max_index == 4 and p.max_where.endswith("q.txt: line 1, column 13")
    (tmp_path / "r.txt").write_text("2 1:1\n1 2:1\n0 1:3\n")
    (tmp_path / "r.query").write_text("1\n2\n")
    p = parse_file(tmp_path / "r.txt", query_file=tmp_path / "r.query")
    assert list(p.group) == [1, 2] and p.qid.tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match=r"r.txt: no data rows"):
        (tmp_path / "r.txt").write_text("# only a comment\n\n")
        parse_file(tmp_path / "r.txt")
