"""Noticing that a Dataset's / DMatrix's labels, weights or query groups changed.

The adapters prepare each training / evaluation set once (label pairs, ideal DCG, ...) and reuse
that work every round. ``Dataset.set_label`` / ``set_weight`` / ``set_group`` and
``DMatrix.set_label`` / ``set_weight`` / ``set_group`` change the data behind the same object, so
the cache checks a :class:`Stamp` of the fields every call and rebuilds when it differs.

What a stamp compares, and why it is cheap (microseconds per round, whatever the size):

- LightGBM keeps the fields as Python attributes and ``set_*`` on a constructed Dataset replaces
  them with a fresh array (``self.label = self.get_field("label")``), so *identity* of the arrays
  ``get_label()`` / ``get_weight()`` / ``get_group()`` return catches every ``set_*`` call. The
  stamp keeps the arrays, so an id cannot be reused while it is cached. Editing such an array
  in place changes nothing LightGBM trains on (it holds its own copy), and nothing here either.
- XGBoost hands back a fresh copy on every ``get_label()`` (an O(n) copy, ~0.1 ms for 240k rows),
  so identity means nothing there; :func:`xgboost_fields` reads zero-copy views of XGBoost's own
  buffers instead (the legacy ``XGDMatrixGet*Info`` C calls; public getters as a fallback) and
  the stamp compares a *sample hash*: length, dtype and a hash of about :data:`SAMPLE_ROWS` rows
  taken at a fixed stride (the last row included). It catches every ``set_*`` that changes the length
  or one of the sampled rows; a change that leaves both equal is not seen (build a new DMatrix
  for such data).
"""
from __future__ import annotations

import ctypes

import numpy as np

__all__ = ["SAMPLE_ROWS", "sample_hash", "Stamp", "lightgbm_fields", "xgboost_fields"]

#: Rows hashed per field (at a stride of ``n // SAMPLE_ROWS``): ~1 us per field; a label change
#: touching a fraction ``p`` of the rows escapes with probability ``(1 - p) ** SAMPLE_ROWS``.
SAMPLE_ROWS = 1024


def sample_hash(a):
    """``(length, dtype, hash of a strided sample ending at the last row)``; ``None`` for ``None``."""
    if a is None:
        return None
    a = np.asarray(a)
    n = a.shape[0] if a.ndim else 1
    if n == 0:
        return (0, a.dtype.char)
    step = max(1, n // SAMPLE_ROWS)
    # One slice, one copy, one hash (each numpy call costs ~1 us): the rows (n-1) % step,
    # ..., n-1, so the last row is always in the sample.
    return (n, a.dtype.char, hash(a[(n - 1) % step::step].tobytes()))


class Stamp:
    """What a cached state was built from.

    ``by="identity"`` (LightGBM): the field arrays themselves are kept and compared with ``is``
    (kept, so no id can be reused while cached). ``by="content"`` (XGBoost): their sample hashes.
    """

    __slots__ = ("arrays", "hashes")

    def __init__(self, arrays, *, by):
        if by not in ("identity", "content"):
            raise ValueError(f"by must be 'identity' or 'content', got {by!r}")
        self.arrays = tuple(arrays) if by == "identity" else None
        self.hashes = None if by == "identity" else tuple(sample_hash(a) for a in arrays)

    def matches(self, arrays):
        if self.arrays is not None:
            return len(arrays) == len(self.arrays) and all(a is b for a, b in zip(self.arrays, arrays))
        return self.hashes == tuple(sample_hash(a) for a in arrays)


def lightgbm_fields(dataset, *, weight=True):
    """``(label, weight, group sizes)`` arrays as a constructed LightGBM Dataset keeps them
    (cached attributes: no copy, no C call once read)."""
    label = dataset.get_label()
    w = dataset.get_weight() if weight else None
    return (label, w, dataset.get_group())


_XGB_UNSET = object()
_xgb_api = _XGB_UNSET


def _xgboost_c_api():
    """``(_LIB, c_str, _check_call, bst_ulong)`` of the installed XGBoost, or None."""
    global _xgb_api
    if _xgb_api is _XGB_UNSET:
        try:
            from xgboost.core import _LIB, _check_call, c_str

            if not (hasattr(_LIB, "XGDMatrixGetFloatInfo") and hasattr(_LIB, "XGDMatrixGetUIntInfo")):
                raise ImportError
            _xgb_api = (_LIB, c_str, _check_call, ctypes.c_uint64)
        except ImportError:
            _xgb_api = None
    return _xgb_api


#: ``__array_interface__`` type strings (native byte order), computed once: ``np.dtype(...)`` costs ~5 us.
_TYPESTR = {ctypes.c_float: np.dtype(np.float32).str, ctypes.c_uint: np.dtype(ctypes.c_uint).str}


class _Buffer:
    """A zero-copy numpy view of ``n`` items at ``address`` (through ``__array_interface__``:
    ~1 us, against ~12 us for ``np.ctypeslib.as_array``)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, address, n, typestr):
        self.__array_interface__ = {"data": (address, True), "shape": (n,), "typestr": typestr, "version": 3}


def _xgb_view(api, dmat, field, ctype, function):
    lib, c_str, check, ulong = api
    length = ulong()
    ptr = ctypes.POINTER(ctype)()
    check(getattr(lib, function)(dmat.handle, c_str(field), ctypes.byref(length), ctypes.byref(ptr)))
    if length.value == 0 or not ptr:
        return None
    return np.asarray(_Buffer(ctypes.addressof(ptr.contents), length.value, _TYPESTR[ctype]))


def xgboost_fields(dmat, *, weight=True):
    """``(label, weight, group_ptr)`` of a DMatrix as views of XGBoost's buffers (valid only
    until the DMatrix changes: hash them at once, never keep them), or copies through the public
    getters if the C calls are unavailable."""
    api = _xgboost_c_api()
    if api is None:
        return (dmat.get_label(), dmat.get_weight() if weight else None, dmat.get_uint_info("group_ptr"))
    return (
        _xgb_view(api, dmat, "label", ctypes.c_float, "XGDMatrixGetFloatInfo"),
        _xgb_view(api, dmat, "weight", ctypes.c_float, "XGDMatrixGetFloatInfo") if weight else None,
        _xgb_view(api, dmat, "group_ptr", ctypes.c_uint, "XGDMatrixGetUIntInfo"),
    )
