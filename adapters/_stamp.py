"""Noticing that a Dataset's / DMatrix's labels, weights or query groups changed.

The adapters prepare each training / evaluation set once (label pairs, ideal DCG, ...) and reuse
that work every round. ``Dataset.set_label`` / ``set_weight`` / ``set_group`` and
``DMatrix.set_label`` / ``set_weight`` / ``set_group`` change the data behind the same object, so
the cache checks a :class:`Stamp` of the fields every call and rebuilds when it differs.

What a stamp compares, and why it is cheap (a few microseconds per round, whatever the size):

- LightGBM keeps the fields as Python attributes and ``set_*`` on a constructed Dataset replaces
  them with a fresh array (``self.label = self.get_field("label")``), so *identity* of the arrays
  ``get_label()`` / ``get_weight()`` / ``get_group()`` return catches every ``set_*`` call. The
  per-Dataset stamp holds the arrays themselves, so an id cannot be reused while it is cached.
- XGBoost hands back a fresh copy on every ``get_label()`` (an O(n) copy, ~0.1 ms for 240k rows),
  so identity means nothing there; :func:`xgboost_fields` reads zero-copy views of XGBoost's own
  buffers instead (the legacy ``XGDMatrixGet*Info`` C calls; public getters as a fallback).
- On top of identity, a *sample hash*: length, dtype and a hash of about
  :data:`SAMPLE_ROWS` rows taken at a fixed stride (plus the last row). It catches in-place edits
  and every XGBoost ``set_*`` that changes one of the sampled rows or the length. A change that
  leaves the length and every sampled row equal is not seen on XGBoost (on LightGBM identity still
  sees it); build a new DMatrix for such data.
"""
from __future__ import annotations

import ctypes

import numpy as np

__all__ = ["SAMPLE_ROWS", "sample_hash", "Stamp", "lightgbm_fields", "xgboost_fields"]

#: Rows hashed per field (at a stride of ``n // SAMPLE_ROWS``): ~1 us per field; a label change
#: touching a fraction ``p`` of the rows escapes with probability ``(1 - p) ** SAMPLE_ROWS``.
SAMPLE_ROWS = 1024


def sample_hash(a):
    """``(length, dtype, hash of a strided sample and the last row)``; ``None`` for ``None``."""
    if a is None:
        return None
    a = np.asarray(a)
    n = a.shape[0] if a.ndim else 1
    if n == 0:
        return (0, a.dtype.str)
    step = max(1, n // SAMPLE_ROWS)
    return (n, a.dtype.str, hash(a[::step].tobytes()), hash(a[-1:].tobytes()))


class Stamp:
    """What a cached state was built from: the ids of the field arrays (``identity=True``; with
    ``pin=True`` the arrays are also kept, so their ids cannot be reused while cached) and their
    sample hashes."""

    __slots__ = ("ids", "pinned", "hashes")

    def __init__(self, arrays, *, identity, pin=False):
        self.ids = tuple(id(a) for a in arrays) if identity else None
        self.pinned = tuple(arrays) if pin else None
        self.hashes = tuple(sample_hash(a) for a in arrays)

    def matches(self, arrays):
        if self.ids is not None and tuple(id(a) for a in arrays) != self.ids:
            return False
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


def _xgb_view(api, dmat, field, ctype, function):
    lib, c_str, check, ulong = api
    length = ulong()
    ptr = ctypes.POINTER(ctype)()
    check(getattr(lib, function)(dmat.handle, c_str(field), ctypes.byref(length), ctypes.byref(ptr)))
    if length.value == 0 or not ptr:
        return None
    return np.ctypeslib.as_array(ptr, shape=(length.value,))


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
