"""Array helpers of the objectives: optional weights in kernel form, array options in hashable form,
outputs zeroed by every thread."""
from __future__ import annotations

import functools
import weakref

import numpy as np
from numba import njit, prange

__all__ = ["kernel_weights", "query_sums", "freeze_option", "zero_fill", "PARALLEL_FILL"]

#: From this many elements an output is zeroed by all threads: one thread's fill of a large array is
#: a step that more threads do not shorten (2.4M rows: ~40 MB of gradients and hessians per call);
#: below it a parallel region costs more than the fill.
PARALLEL_FILL = 1 << 17

_NO_WEIGHTS = np.zeros(0, dtype=np.float64)


def kernel_weights(weight: "np.ndarray | None") -> "tuple[np.ndarray, bool]":
    """Optional weights in the form every kernel takes: ``(array, use_weights)``.

    numba kernels cannot take ``None`` without compiling a second specialisation, so "no
    weights" is an empty float64 array with ``use_weights=False``.

    Examples
    --------
    >>> kernel_weights(None)[1], kernel_weights(np.ones(3))[1]
    (False, True)
    """
    return (weight, True) if weight is not None else (_NO_WEIGHTS, False)


def query_sums(sizes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Sum of ``values`` (one per row, rows grouped by query) over each query; 0 for an empty query.

    Examples
    --------
    >>> query_sums(np.array([2, 0, 1]), np.array([1.0, 2.0, 5.0])).tolist()
    [3.0, 0.0, 5.0]
    """
    return np.bincount(np.repeat(np.arange(sizes.size), sizes), weights=values, minlength=sizes.size)


@njit(cache=True, parallel=True)
def _zero_parallel(flat):
    for i in prange(flat.shape[0]):
        flat[i] = 0.0


def zero_fill(out: np.ndarray) -> np.ndarray:
    """``out[...] = 0`` (a writable C-contiguous float64 array), by all threads when it is large; returns it.

    Examples
    --------
    >>> zero_fill(np.ones((2, 3))).tolist()
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    flat = out.reshape(-1)  # C-contiguous: a view
    if flat.size >= PARALLEL_FILL:
        _zero_parallel(flat)
    else:
        flat[:] = 0.0
    return out


#: id(array) -> (weak reference to the array, its frozen form); an entry leaves with its array.
_FROZEN: "dict[int, tuple[weakref.ref[np.ndarray], tuple[object, ...]]]" = {}


def _forget(key: int, _ref: object) -> None:
    """Drop the entry of a collected array (the weak reference's callback)."""
    _FROZEN.pop(key, None)


def freeze_option(v: object) -> object:
    """An option value in hashable form: arrays as ``("nd", shape, bytes)``, computed once per
    read-only array object (see ``Objective._cache_key`` in ``base.py``)."""
    if not isinstance(v, np.ndarray):
        return v
    held = _FROZEN.get(id(v))
    if held is not None and held[0]() is v and not _writeable(v):
        return held[1]
    frozen = ("nd", v.shape, v.tobytes())
    _FROZEN[id(v)] = (weakref.ref(v, functools.partial(_forget, id(v))), frozen)
    return frozen


def _writeable(a: "np.ndarray | None") -> bool:
    """True when ``a`` or any array it views can be written through (its bytes may still change)."""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return True
        a = a.base
    return False
