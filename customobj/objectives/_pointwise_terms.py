"""The scalar math of one row of the pointwise losses, shared by the CPU and the GPU kernels.

Design note: as in ``_pairwise_terms`` (which says what the terms modules share and why), each
function is one row's gradient and hessian, written once with ``math.*``; the CPU loops of
``_pointwise_kernels`` and the one-thread-per-row kernels of ``_pointwise_cuda`` (through
``customobj._cuda_runtime.device_function``) both call it and add its result into the outputs.
What stays per target is only the loop over rows (and, for McRank, where the probabilities are
kept: a scratch row on the CPU, recomputed per class on the GPU, which has no per-thread array of
a run-time size; ``exp(f_k - top) / z`` has the same bits either way, and the CPU loop spells the
sum out to keep its one ``exp`` per class).

Examples
--------
>>> squared_error_row(1.5, 1.0, 2.0)
(1.0, 2.0)
>>> logistic_row(0.0, 1.0, 1.0, 1.0)
(-1.0, 1.0)
"""
import math
from enum import IntEnum

from numba import njit


class RowKind(IntEnum):
    """The pointwise loss of a row, as :func:`row_terms` and :func:`row_loss` take it (the row drivers:
    ``_pointwise_kernels.rows_grad_hess`` on the CPU, ``_pointwise_cuda.pointwise_rows`` on the GPU)."""

    SQUARED_ERROR = 0
    LOGISTIC = 1  # param: sigma
    SQUARED_HINGE = 2  # param: C


@njit(cache=True)
def row_weight(weights, use_weights, i):
    """Row ``i``'s weight (1 without weights: ``weights`` is then a stand-in never read)."""
    return weights[i] if use_weights else 1.0


@njit(cache=True)
def squared_error_row(s, y, w):
    """``(grad, hess)`` of ``w (s - y)^2 / 2``."""
    return w * (s - y), w


@njit(cache=True)
def logistic_row(s, y, w, sigma):
    """``(grad, hess)`` of ``w log(1 + exp(-2 t sigma s))``, ``t = 2 y - 1`` (labels 0/1), without overflow."""
    t = 2.0 * y - 1.0
    z = 2.0 * t * sigma * s
    # p = 1 / (1 + exp(z)) and p (1 - p) without overflow.
    e = math.exp(-abs(z))
    inv = 1.0 / (1.0 + e)
    p = e * inv if z >= 0.0 else inv
    u = 2.0 * t * sigma * p
    return -w * u, w * 4.0 * sigma * sigma * e * inv * inv


@njit(cache=True)
def squared_hinge_margin(s, y):
    """``m = 1 - t s`` (``t = 2 y - 1``): the row adds terms only when ``m > 0``."""
    return 1.0 - (2.0 * y - 1.0) * s


@njit(cache=True)
def squared_hinge_row(s, y, w, c):
    """``(grad, hess)`` of ``c w max(0, 1 - t s)^2`` for a row with ``squared_hinge_margin > 0``."""
    t = 2.0 * y - 1.0
    m = 1.0 - t * s
    return -2.0 * c * w * t * m, 2.0 * c * w


@njit(cache=True)
def softmax_top_z(f):
    """``(top, z)`` of the softmax over the row ``f``: its maximum and ``sum exp(f_k - top)``;
    the probability of class ``k`` is ``exp(f_k - top) / z`` (:func:`softmax_p`). The CPU loop
    keeps the exps it sums (one pass, a scratch row); a GPU thread has no scratch row of a run-time
    size and evaluates them again in :func:`softmax_p`."""
    top = f[0]
    for k in range(1, f.shape[0]):
        top = max(top, f[k])
    z = 0.0
    for k in range(f.shape[0]):
        z += math.exp(f[k] - top)
    return top, z


@njit(cache=True)
def softmax_p(f, k, top, z):
    """Class ``k``'s softmax probability of the row ``f`` (``top``, ``z`` from :func:`softmax_top_z`)."""
    return math.exp(f[k] - top) / z


@njit(cache=True)
def mcrank_row_class(p, k, y, w):
    """``(grad, hess)`` of the multiclass log loss at class ``k`` of a row of label ``y`` whose
    class ``k`` has probability ``p``."""
    return w * (p - (1.0 if k == y else 0.0)), w * p * (1.0 - p)


@njit(cache=True)
def row_terms(kind, s, y, w, param):
    """``(adds, grad, hess)`` of one row of the loss ``kind`` (a :class:`RowKind` code, ``param`` its
    parameter); ``adds`` is False for a squared-hinge row outside the margin (it adds nothing), and
    an unknown code gives NaN (its route never passes one)."""
    if kind == RowKind.SQUARED_ERROR:
        g, h = squared_error_row(s, y, w)
        return True, g, h
    if kind == RowKind.LOGISTIC:
        g, h = logistic_row(s, y, w, param)
        return True, g, h
    if kind == RowKind.SQUARED_HINGE:
        if squared_hinge_margin(s, y) > 0.0:
            g, h = squared_hinge_row(s, y, w, param)
            return True, g, h
        return False, 0.0, 0.0
    return True, math.nan, math.nan


@njit(cache=True)
def row_loss(kind, s, y, w, param):
    """One row's loss of ``kind`` (codes and ``param`` as :func:`row_terms`): ``w (s - y)^2 / 2``,
    ``w softplus(-2 t sigma s)`` or ``C w max(0, 1 - t s)^2``; an unknown code gives NaN."""
    if kind == RowKind.SQUARED_ERROR:
        d = s - y
        return 0.5 * w * d * d
    if kind == RowKind.LOGISTIC:
        z = -2.0 * (2.0 * y - 1.0) * param * s
        return w * (max(z, 0.0) + math.log1p(math.exp(-abs(z))))  # softplus(z)
    if kind == RowKind.SQUARED_HINGE:
        m = squared_hinge_margin(s, y)
        return param * w * m * m if m > 0.0 else 0.0
    return math.nan
