"""Hypothesis strategies for hostile inputs: arrays, labels, weights, groups and hyperparameters.

Everything drawn here is plain Python / numpy (picklable, and nothing from customobj is imported
in the test process). The usual shape of a draw: valid data of ``n`` rows, then at most one
argument mutated in one hostile way, so that each example reaches past the first check and the
error it provokes can be asked to name that argument. Values come from the failure classes of
issue 13: overflow-sized ints, non-finite and extreme floats, odd dtypes and shapes, groups whose
int64 sums wrap, labels beyond what ``2**y`` can represent.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

INT64_MAX = 2**63 - 1

#: Floats no kernel should see unguarded (non-finite, near-overflow, denormal, signed zero).
HOSTILE_FLOATS = (math.nan, math.inf, -math.inf, -0.0, 1e300, -1e300, 1.7e308, -1.7e308, 1e-320,
                  5e-324, 1e100, -1e100, 1.0000001e100, 2.0**1023, 1e308)
#: Ints beyond int64, at its edges, negative, and 2**62-style sizes.
HOSTILE_INTS = (-1, 0, -(2**31), 2**31, 2**32, 2**62, 2**62 + 10, INT64_MAX, 2**63, 2**64, 2**64 + 3,
                2**70, -(2**63), -(2**63) - 1, 10**30, 1180591620717411303424)
#: Labels each gain / objective must refuse or survive: negative, fractional, >= 1024, astronomic.
HOSTILE_LABELS = (-1.0, -0.5, 0.5, 2.5, 1023.0, 1024.0, 1025.0, 2000.0, 1e6, 1e300, 1.7e308, math.nan,
                  math.inf, -0.0, 1e-320)
#: Row weights: extreme, zero, negative, non-finite.
HOSTILE_WEIGHTS = (0.0, -1.0, 1e300, 1.7e308, 1e308, 1e-320, math.nan, math.inf, -0.0, 1e200)
#: Parameter values of the wrong kind or range (numbers, bools, strings, containers, None).
HOSTILE_PARAMS = HOSTILE_INTS + HOSTILE_FLOATS + (True, False, None, "1", "", "ndcg", [1], [], (1, 2),
                                                  {"a": 1}, np.float32("nan"), np.int64(-1), np.uint64(2**64 - 1),
                                                  np.float64(1e300), 1 + 2j, b"1")

ODD_DTYPES = ("float16", "float32", "int8", "uint8", "int32", "uint64", "int64", "bool", "complex128", "object")


def hostile_float():
    return st.sampled_from(HOSTILE_FLOATS) | st.floats(allow_nan=True, allow_infinity=True)


def hostile_int():
    return st.sampled_from(HOSTILE_INTS) | st.integers()


def hostile_param():
    return st.sampled_from(HOSTILE_PARAMS) | st.integers() | st.floats() | st.text(max_size=5)


# --- valid data ------------------------------------------------------------------------------------
def sizes_of(draw, n, max_groups=5):
    """A random composition of ``n`` rows into query sizes (zeros allowed, as LightGBM allows)."""
    if n == 0:
        return draw(st.sampled_from([[], [0], [0, 0]]))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=max_groups - 1)))
    edges = [0, *cuts, n]
    return [b - a for a, b in zip(edges, edges[1:])]


def float_array(draw, n, lo=-5.0, hi=5.0, cols=None):
    shape = (n,) if cols is None else (n, cols)
    vals = draw(st.lists(st.floats(lo, hi, allow_nan=False), min_size=int(np.prod(shape)),
                         max_size=int(np.prod(shape))))
    return np.asarray(vals, dtype=np.float64).reshape(shape)


def grade_array(draw, n, top=4):
    return np.asarray(draw(st.lists(st.integers(0, top), min_size=n, max_size=n)), dtype=np.float64)


# --- mutations ------------------------------------------------------------------------------------
def mutate_array(draw, arr, values=HOSTILE_FLOATS):
    """One hostile variant of a valid array: bad values, dtype, shape, length or container."""
    return mutate_array_how(draw, arr, values)[0]


#: Aliases an error may use instead of the argument's name when the mutation changed the length:
#: a length mismatch is legitimately reported against the argument it was compared with.
LENGTH_WORDS = ("rows", "length", "shape", "entries")


def hostile_arg(draw, arr, values, names):
    """``(value, names)``: a mutated array and the names its error may use."""
    value, how = mutate_array_how(draw, arr, values)
    if np.size(arr) == 0 and how in ("value", "dtype"):
        return value, ()  # nothing hostile in an empty array's dtype: any error may be about the rows
    return value, tuple(names) + (LENGTH_WORDS if how in ("length", "shape") else ())


def mutate_array_how(draw, arr, values=HOSTILE_FLOATS):
    """``(value, how)``: :func:`mutate_array` and which kind of mutation it made."""
    arr = np.asarray(arr)
    how = draw(st.sampled_from(["value", "value", "value", "dtype", "shape", "length", "container"]))
    return _mutate(draw, arr, values, how), how


def _mutate(draw, arr, values, how):
    if how == "value" and arr.size:
        out = arr.astype(np.float64, copy=True)
        flat = out.reshape(-1)
        for pos in draw(st.lists(st.integers(0, flat.size - 1), min_size=1, max_size=3)):
            flat[pos] = draw(st.sampled_from(values) | st.floats())
        return out
    if how == "dtype" or (how == "value" and not arr.size):
        dt = draw(st.sampled_from(ODD_DTYPES))
        if dt == "uint64" and arr.size and draw(st.booleans()):
            return np.full(arr.shape, 2**64 - 1, dtype=np.uint64)
        if dt == "object":
            filler = draw(st.sampled_from([None, "a", 2**70, [1], 1.5]))
            out = arr.astype(object)
            if out.size:
                out.reshape(-1)[draw(st.integers(0, out.size - 1))] = filler
            return out
        if dt == "float16" and arr.size and draw(st.booleans()):
            with np.errstate(over="ignore"):
                return np.full(arr.shape, 70000.0).astype(np.float16)  # overflows to inf in float16
        with np.errstate(all="ignore"):
            return arr.astype(dt)
    if how == "shape":
        return draw(st.sampled_from([
            np.zeros(0), arr.reshape(-1, 1), arr.reshape(1, -1), np.stack([arr, arr], axis=-1),
            np.float64(1.0), arr.reshape(-1)[:1].reshape(()) if arr.size else np.float64(0.0),
        ]))
    if how == "length":
        if arr.ndim == 1 and arr.size and draw(st.booleans()):
            return arr[:-1]
        return np.concatenate([arr, arr[:1] if arr.size else np.zeros((1,) + arr.shape[1:])])
    return draw(st.sampled_from([
        arr.tolist(), tuple(arr.tolist()), None, "abc", {"a": 1},
        [arr.tolist(), [1.0]], [[1.0, 2.0], [3.0]], [float("nan")] * arr.shape[0],
        [2**70] * arr.shape[0], [str(v) for v in arr.reshape(-1).tolist()],
    ]))


def as_array_or_none(x):
    """``np.asarray(x)``, or None for what numpy cannot make an array of (ragged lists)."""
    try:
        return np.asarray(x)
    except ValueError:
        return None


def wrapping_sizes(draw, n):
    """Query sizes, each within int64, whose int64 sum wraps around to exactly ``n``."""
    k = draw(st.sampled_from([4, 8, 16]))
    big = 2**64 // k
    sizes = [big] * (k - 1) + [big + n]
    return draw(st.permutations(sizes))


def hostile_group(draw, n):
    """Hostile query sizes / qids / ptrs for ``n`` rows (plain values or a worker-side spec)."""
    sizes = sizes_of(draw, n)
    how = draw(st.sampled_from(["wrap", "wrap", "big", "negative", "sum", "float", "qid-as-sizes",
                                "array", "qid", "ptr", "beyond-int64"]))
    if how == "wrap":
        return wrapping_sizes(draw, n)
    if how == "big":
        return draw(st.permutations([2**62, 2**62, n])) if draw(st.booleans()) else [INT64_MAX, n]
    if how == "negative":
        return [n + 3, -3] if draw(st.booleans()) else [-(2**63), n]
    if how == "sum":
        return sizes + [draw(st.sampled_from([1, 2, 2**40]))] if draw(st.booleans()) or not sizes \
            else sizes[:-1] + [sizes[-1] - 1]
    if how == "float":
        return [s + draw(st.sampled_from([0.5, math.nan, math.inf, 1e-9])) for s in sizes] or [math.nan]
    if how == "qid-as-sizes":
        return list(np.repeat(np.arange(len(sizes)) + 1, sizes))
    if how == "array":
        return mutate_array(draw, np.asarray(sizes, dtype=np.int64), values=(math.nan, -1.0, 1e300, 0.5))
    if how == "qid":
        qid = np.repeat(np.arange(len(sizes)), sizes)
        bad = draw(st.sampled_from(["unsorted", "nan", "str", "object", "bool", "2d", "short", "huge"]))
        if bad == "unsorted" and n >= 3:
            qid = np.asarray(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
        elif bad == "nan":
            qid = qid.astype(float)
            if n:
                qid[-1] = math.nan
        elif bad == "str":
            qid = qid.astype(str)
        elif bad == "object":
            qid = qid.astype(object)
        elif bad == "bool":
            qid = qid.astype(bool)
        elif bad == "2d":
            qid = qid.reshape(-1, 1)
        elif bad == "short":
            qid = qid[:-1]
        elif bad == "huge":
            qid = np.full(n, 2**64 - 1, dtype=np.uint64)
        return {"__groups__": "from_qid", "arg": qid}
    if how == "ptr":
        ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        bad = draw(st.sampled_from(["start", "decrease", "wrap", "end", "uint64"]))
        if bad == "start":
            ptr = ptr + 1
        elif bad == "decrease" and ptr.size > 2:
            ptr[1], ptr[2] = ptr[2] + 1, ptr[1]
        elif bad == "wrap":
            ptr = np.asarray([0, INT64_MAX, -(2**63) + n + 1, n][: 3 if n == 0 else 4], dtype=np.int64)
        elif bad == "uint64":
            ptr = np.asarray([0, 2**64 - 1, n], dtype=np.uint64)
        else:
            ptr[-1] += 1
        return {"__groups__": "from_ptr", "arg": ptr}
    return [2**64 + n] if draw(st.booleans()) else sizes + [2**70, -(2**70)]


def valid_group(draw, n):
    sizes = sizes_of(draw, n)
    form = draw(st.sampled_from(["list", "int64", "int32", "uint32", "qid"]))
    if form == "list":
        return sizes
    if form == "qid":
        return {"__groups__": "from_qid", "arg": np.repeat(np.arange(len(sizes)) * 7 + 3, sizes)}
    return np.asarray(sizes, dtype=form)


GROUP_NAMES = ("group", "qid", "ptr", "quer", "size")
LABEL_NAMES = ("label", "grade", "gain", "y")
WEIGHT_NAMES = ("weight", "sample_weight")
SCORE_NAMES = ("score", "pred", "margin", "raw")
