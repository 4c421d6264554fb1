"""customobj._letor_parser: the numba kernels that parse LETOR / SVMlight bytes (buffer sizing,
numbers, CSR fill). Malformed-input messages are tested through ``load_letor`` in
tests/test_robust_data.py."""
from __future__ import annotations

import numpy as np

from customobj.data import load_letor


def test_blank_lines_do_not_size_row_buffers():
    """Short lines: rows are bounded by data lines, not newlines, so a file of newlines allocates nothing."""
    from customobj import _letor_parser

    buf = np.frombuffer(b"\n" * 1000 + b"  # c: d\n1 qid:1 1:2\n\t\n2 3:1", dtype=np.uint8)
    assert _letor_parser.count_data_lines(buf) == 2
    assert _letor_parser.count_bytes(buf) == (1003, 4)  # newlines, colons


def test_row_buffers_of_a_blank_line_file_are_sized_by_its_data_lines(tmp_path, monkeypatch):
    from customobj import _letor_parser

    seen = []
    real = _letor_parser.parse_letor

    def spy(buf, max_rows, *rest):
        seen.append(max_rows)
        return real(buf, max_rows, *rest)

    monkeypatch.setattr(_letor_parser, "parse_letor", spy)
    path = tmp_path / "blank.txt"
    path.write_bytes(b"\n" * 100_000 + b"1 qid:1 1:1\n")
    assert load_letor(path).X.shape == (1, 1)
    assert seen == [1]  # not 100,002 rows of buffers


def _parse(text: bytes, index_limit: int = -1):
    from customobj import _letor_parser as P

    buf = np.frombuffer(text, dtype=np.uint8)
    n_newlines, n_colons = P.count_bytes(buf)
    return P.parse_letor(buf, n_newlines + 1, n_colons, index_limit, 16)


def test_parse_letor_fills_csr_arrays_with_zero_based_columns():
    from customobj import _letor_parser as P

    (labels, qids, indptr, indices, values, row_line, n_rows, nnz, max_index, max_pos, has_qid,
     fallback, n_fb, err, err_line, err_pos) = _parse(b"2 qid:7 1:0.5 3:-2\n# a comment\n0 qid:7 2:1e-3\n")
    assert err == P.OK and n_rows == 2 and nnz == 3 and has_qid == 1 and n_fb == 0
    assert labels[:2].tolist() == [2.0, 0.0] and qids[:2].tolist() == [7, 7]
    assert indptr[:3].tolist() == [0, 2, 3] and indices[:3].tolist() == [0, 2, 1]  # feature j -> column j - 1
    assert values[:3].tolist() == [np.float32(0.5), np.float32(-2.0), np.float32(1e-3)]
    assert row_line[:2].tolist() == [1, 3]  # the comment line is not a row
    assert max_index == 3 and max_pos == 14  # byte offset of "3:-2"


def test_parse_letor_index_limit_names_line_and_token():
    from customobj import _letor_parser as P

    out = _parse(b"2 qid:7 1:0.5 3:-2\n", index_limit=2)
    err, err_line, err_pos = out[13:16]
    assert (err, err_line, err_pos) == (P.INDEX_TOO_LARGE, 1, 14)
    assert _parse(b"2 qid:7 1:0.5 3:-2\n", index_limit=3)[13] == P.OK


def test_short_decimals_round_like_python():
    """Tokens of at most 18 digits are parsed in the kernel (m * 10^e exactly, one rounding): the
    same float32 as Python's float() followed by the cast."""
    tokens = ["0.1", "123456.789", "-0.000123", "1e-22", "9.999999999e10", "0", "-0", "7", "1E5", "2.5e-3"]
    text = "".join(f"1 qid:1 {j + 1}:{t}\n" for j, t in enumerate(tokens)).encode()
    out = _parse(text)
    values, nnz, n_fb = out[4], out[7], out[12]
    assert nnz == len(tokens) and n_fb == 0
    want = np.array([float(t) for t in tokens], dtype=np.float32)
    assert values[:nnz].tobytes() == want.tobytes()


def test_csr_fill_dense_places_every_value():
    from customobj import _letor_parser as P

    indptr = np.array([0, 2, 2, 3], dtype=np.int64)
    indices = np.array([0, 3, 1], dtype=np.int32)
    values = np.array([1.5, -2.0, 4.0], dtype=np.float32)
    out = np.zeros((3, 4), dtype=np.float32)
    P.csr_fill_dense(indptr, indices, values, out)
    np.testing.assert_array_equal(out, [[1.5, 0, 0, -2.0], [0, 0, 0, 0], [0, 4.0, 0, 0]])


def test_long_or_far_numbers_are_left_to_python():
    """19 digits, or a power of ten beyond 10^22, is not exact in the kernel: recorded for the fallback."""
    text = b"1 qid:1 1:0.1234567890123456789 2:3.4028234e38 3:0.5\n"
    out = _parse(text)
    values, nnz, n_fb, fallback = out[4], out[7], out[12], out[11]
    assert nnz == 3 and n_fb == 2
    assert values[2] == np.float32(0.5)
    # (kind, position, start, end, line): the positions of the two values and their exact bytes
    assert fallback[:2, 1].tolist() == [0, 1] and fallback[:2, 4].tolist() == [1, 1]
    assert [text[a:b] for a, b in fallback[:2, 2:4]] == [b"0.1234567890123456789", b"3.4028234e38"]
