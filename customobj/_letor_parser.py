"""Numba kernels that parse LETOR / SVMlight text held in a uint8 buffer.

``parse_letor`` makes one pass over the bytes and fills CSR arrays sized by upper bounds that
``count_bytes`` gives (rows <= newlines + 1, stored values <= colons). Numbers are parsed by hand:
a decimal token with at most 18 digits and a power of ten in 10^-22..10^22 is exactly
``m * 10^e`` or ``m / 10^-e`` with both operands exact doubles, so IEEE arithmetic rounds it
correctly (Clinger's fast path). Any other numeric token (longer mantissa, larger exponent, nan,
inf) is recorded as a *fallback* and parsed by Python's ``float`` afterwards, so every value equals
``float(token)`` bit for bit. Errors are returned as ``(code, line)``; Python raises them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# error codes (messages live in customobj.data._ERRORS)
OK = 0
BAD_LABEL = 1
BAD_QID = 2
MISSING_QID = 3
UNEXPECTED_QID = 4
BAD_INDEX = 5
BAD_VALUE = 6
DUPLICATE_INDEX = 7
INDEX_TOO_LARGE = 8
INDEX_ZERO = 9
LABEL_NOT_FINITE = 10

# value parse status
_NUM_OK = 0
_NUM_FALLBACK = 1
_NUM_BAD = 2
_NUM_SPECIAL = 3  # starts with a letter after the sign: valid only as nan / inf / infinity

# fallback kinds
FB_LABEL = 0
FB_VALUE = 1
FB_SPECIAL = 2  # added to the kind of a nan / inf feature value

_POW10 = np.array([10.0 ** k for k in range(23)], dtype=np.float64)
_MAX_EXACT = 2 ** 53
MAX_INDEX = 2 ** 31 - 2


@njit(cache=True)
def _is_space(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True)
def _is_end(c):
    # a number or token may end at whitespace, a newline or a comment
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12 or c == 10 or c == 35


@njit(cache=True)
def count_bytes(buf):
    """(number of b'\\n', number of b':') in the buffer: upper bounds for rows and stored values."""
    nl = 0
    colon = 0
    for i in range(buf.size):
        c = buf[i]
        if c == 10:
            nl += 1
        elif c == 58:
            colon += 1
    return nl, colon


@njit(cache=True)
def count_data_lines(buf):
    """Lines whose first non-blank byte is neither ``#`` nor the newline: exactly the lines
    ``parse_letor`` turns into rows (or rejects).

    Sizing the row arrays by newlines costs 32 bytes per newline, so a file of blank lines would
    ask for 32x its size; the caller uses this exact count when lines are short. It is not the
    default: this branchy loop takes ~8x as long as ``count_bytes`` (about 4 ms vs 0.5 ms on
    MQ2008 Fold1 train, 5.9 MB).
    """
    rows = 0
    at_start = True  # no non-blank byte seen yet on this line
    for i in range(buf.size):
        c = buf[i]
        if c == 10:
            at_start = True
        elif at_start and not _is_space(c):
            at_start = False
            if c != 35:
                rows += 1
    return rows


@njit(cache=True)
def _parse_number(buf, pos, n):
    """Parse a decimal number starting at ``pos``; returns (value, end, status).

    ``status`` is _NUM_OK (value is exact), _NUM_FALLBACK (a valid decimal token ``buf[pos:end]``
    beyond the fast path: let Python parse it), _NUM_SPECIAL (a word such as nan / inf) or
    _NUM_BAD (not a number; ``end`` is where parsing stopped).
    """
    i = pos
    neg = False
    if i < n and (buf[i] == 45 or buf[i] == 43):  # '-' '+'
        neg = buf[i] == 45
        i += 1
    if i < n and ((buf[i] | 32) == 105 or (buf[i] | 32) == 110):  # 'i'/'n': inf, nan
        while i < n and not _is_end(buf[i]):
            i += 1
        return 0.0, i, _NUM_SPECIAL
    # Every digit goes into m; with at most 18 digits m < 10**18 cannot overflow int64 (longer
    # tokens, e.g. with many leading zeros, take the exact Python fallback).
    m = 0
    ndigits = 0
    nfrac = 0
    while i < n and 48 <= buf[i] <= 57:
        m = m * 10 + (buf[i] - 48)
        ndigits += 1
        i += 1
    if i < n and buf[i] == 46:  # '.'
        i += 1
        while i < n and 48 <= buf[i] <= 57:
            m = m * 10 + (buf[i] - 48)
            nfrac += 1
            i += 1
        ndigits += nfrac
    dexp = -nfrac
    if ndigits == 0:
        return 0.0, i, _NUM_BAD
    if i < n and (buf[i] == 101 or buf[i] == 69):  # 'e' 'E'
        i += 1
        eneg = False
        if i < n and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        ev = 0
        ne = 0
        while i < n and 48 <= buf[i] <= 57:
            if ev < 100000:
                ev = ev * 10 + (buf[i] - 48)
            ne += 1
            i += 1
        if ne == 0:
            return 0.0, i, _NUM_BAD
        dexp += -ev if eneg else ev
    if i < n and not _is_end(buf[i]):
        return 0.0, i, _NUM_BAD
    if ndigits > 18:  # m may have wrapped around
        return 0.0, i, _NUM_FALLBACK
    if m == 0:
        v = 0.0
    elif m <= _MAX_EXACT and -22 <= dexp <= 22:
        v = float(m)
        if dexp >= 0:
            v = v * _POW10[dexp]
        else:
            v = v / _POW10[-dexp]
    else:
        return 0.0, i, _NUM_FALLBACK
    if neg:
        v = -v
    return v, i, _NUM_OK


@njit(cache=True)
def _parse_int(buf, pos, n):
    """Parse an optionally signed decimal integer; returns (value, end, ok)."""
    i = pos
    neg = False
    if i < n and (buf[i] == 45 or buf[i] == 43):
        neg = buf[i] == 45
        i += 1
    start = i
    v = 0
    while i < n and 48 <= buf[i] <= 57:
        if i - start >= 18:  # would overflow int64
            return 0, i, False
        v = v * 10 + (buf[i] - 48)
        i += 1
    if i == start:
        return 0, i, False
    return (-v if neg else v), i, True


@njit(cache=True)
def _is_special_word(buf, start, end):
    """True when buf[start:end] is [+-]nan, inf or infinity (any case): what Python's float accepts."""
    if start < end and (buf[start] == 45 or buf[start] == 43):
        start += 1
    size = end - start
    if size == 3:
        a, b, c = buf[start] | 32, buf[start + 1] | 32, buf[start + 2] | 32
        return (a == 110 and b == 97 and c == 110) or (a == 105 and b == 110 and c == 102)
    if size == 8:
        word = (105, 110, 102, 105, 110, 105, 116, 121)  # "infinity"
        for t in range(8):
            if (buf[start + t] | 32) != word[t]:
                return False
        return True
    return False


@njit(cache=True)
def _record(fallback, k, kind, position, start, end, line):
    fallback[k, 0] = kind
    fallback[k, 1] = position
    fallback[k, 2] = start
    fallback[k, 3] = end
    fallback[k, 4] = line


@njit(cache=True)
def _has_index(indices, lo, hi, j):
    for p in range(lo, hi):
        if indices[p] == j:
            return True
    return False


@njit(cache=True)
def parse_letor(buf, max_rows, max_nnz, index_limit, fb_cap):
    """Parse the whole buffer into CSR arrays.

    ``index_limit`` >= 0 makes a feature index above it an error (INDEX_TOO_LARGE); -1: no limit.
    Returns (labels, qids, indptr, indices, values, row_line, n_rows, nnz, max_index, max_pos, has_qid,
    fallback, n_fb, err_code, err_line, err_pos); arrays are sized by the upper bounds and valid up to
    ``n_rows`` / ``nnz``. ``fallback[k] = (kind, position, start, end, line)`` for the first
    ``min(n_fb, fb_cap)`` tokens Python must parse; when ``n_fb > fb_cap`` call again with a larger
    cap. (A fixed-size table keeps array re-binding out of the hot loop, which costs 2x here.)
    ``has_qid`` is -1 when no data line was seen, else 0/1. ``err_pos`` is the byte offset of the
    token in error (for the column in the message), ``max_pos`` that of the largest feature index.
    """
    n = buf.size
    labels = np.empty(max_rows, dtype=np.float64)
    qids = np.zeros(max_rows, dtype=np.int64)
    row_line = np.empty(max_rows, dtype=np.int64)
    indptr = np.zeros(max_rows + 1, dtype=np.int64)
    indices = np.empty(max_nnz, dtype=np.int32)
    values = np.empty(max_nnz, dtype=np.float32)
    fallback = np.empty((fb_cap, 5), dtype=np.int64)
    n_fb = 0
    row = 0
    nnz = 0
    max_index = 0
    max_pos = -1
    err_pos = -1
    has_qid = -1
    line = 0
    i = 0
    err = OK
    while i < n:
        line += 1
        while i < n and _is_space(buf[i]):
            i += 1
        if i >= n:
            break
        c = buf[i]
        if c == 10 or c == 35:  # blank or comment-only line: no data
            while i < n and buf[i] != 10:
                i += 1
            i += 1
            continue
        # label
        v, j, st = _parse_number(buf, i, n)
        if st == _NUM_BAD or (st == _NUM_SPECIAL and not _is_special_word(buf, i, j)):
            err = BAD_LABEL
            err_pos = i
            break
        if st == _NUM_SPECIAL:
            err = LABEL_NOT_FINITE
            err_pos = i
            break
        if st == _NUM_FALLBACK:
            if n_fb < fb_cap:
                _record(fallback, n_fb, FB_LABEL, row, i, j, line)
            n_fb += 1
        labels[row] = v
        row_line[row] = line
        i = j
        first_token = True
        line_has_qid = 0
        row_max = -1
        first_pos = -1  # where the first token after the label starts (qid errors point there)
        while True:
            while i < n and _is_space(buf[i]):
                i += 1
            if first_token:
                first_pos = i
            if i >= n or buf[i] == 10 or buf[i] == 35:
                break
            if first_token and i + 4 <= n and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100 and buf[i + 3] == 58:
                q, j, ok = _parse_int(buf, i + 4, n)
                if not ok or (j < n and not _is_end(buf[j])):
                    err = BAD_QID
                    err_pos = i
                    break
                qids[row] = q
                line_has_qid = 1
                first_token = False
                i = j
                continue
            first_token = False
            # feature index
            idx = 0
            j = i
            while j < n and 48 <= buf[j] <= 57:
                if idx <= MAX_INDEX:
                    idx = idx * 10 + (buf[j] - 48)
                j += 1
            err_pos = i  # set for every error below; OK overrides nothing
            if j == i or j >= n or buf[j] != 58:
                err = BAD_INDEX
                break
            if idx == 0:
                err = INDEX_ZERO
                break
            if idx > MAX_INDEX or (index_limit >= 0 and idx > index_limit):
                err = INDEX_TOO_LARGE
                break
            if idx - 1 <= row_max:  # not above every earlier index of the row: may be a duplicate
                if _has_index(indices, indptr[row], nnz, idx - 1):
                    err = DUPLICATE_INDEX
                    break
            else:
                row_max = idx - 1
            v, k, st = _parse_number(buf, j + 1, n)
            if st == _NUM_BAD or (st == _NUM_SPECIAL and not _is_special_word(buf, j + 1, k)):
                err = BAD_VALUE
                err_pos = j + 1
                break
            if st == _NUM_FALLBACK or st == _NUM_SPECIAL:
                if n_fb < fb_cap:
                    _record(fallback, n_fb, FB_VALUE + FB_SPECIAL * (st == _NUM_SPECIAL), nnz, j + 1, k, line)
                n_fb += 1
            indices[nnz] = idx - 1
            values[nnz] = np.float32(v)
            nnz += 1
            if idx > max_index:
                max_index = idx
                max_pos = i
            i = k
        if err != OK:
            break
        if has_qid == -1:
            has_qid = line_has_qid
        elif has_qid == 1 and line_has_qid == 0:
            err = MISSING_QID
            err_pos = first_pos
            break
        elif has_qid == 0 and line_has_qid == 1:
            err = UNEXPECTED_QID
            err_pos = first_pos
            break
        row += 1
        indptr[row] = nnz
        while i < n and buf[i] != 10:  # rest of the line is a comment (or nothing)
            i += 1
        i += 1
    return (labels, qids, indptr, indices, values, row_line, row, nnz, max_index, max_pos, has_qid,
            fallback, n_fb, err, line, err_pos)


@njit(cache=True)
def csr_fill_dense(indptr, indices, values, out):
    """Write CSR rows into the zeroed dense matrix ``out`` (allocated by the caller, who checks its size)."""
    for r in range(out.shape[0]):
        for p in range(indptr[r], indptr[r + 1]):
            out[r, indices[p]] = values[p]
