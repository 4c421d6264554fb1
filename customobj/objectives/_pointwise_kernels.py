"""Numba kernels of the pointwise losses (docs/formulas.md, "Pointwise"). Each adds into out_grad / out_hess.

The per-row math lives in ``_pointwise_terms``, shared with the GPU kernels (``_pointwise_cuda``); these are
the CPU loops over the rows: one row driver for the losses of a ``RowKind`` (as on the GPU), McRank's own."""
import numpy as np
from numba import njit

from ._pointwise_terms import RowKind, mcrank_row_class, row_loss, row_terms, row_weight


@njit(cache=True, inline="always")
def _rows_of(kind, scores, labels, weights, use_weights, param, out_grad, out_hess):
    """The row loop for one ``kind`` and one weighting, both constants where :func:`rows_grad_hess`
    inlines it: the loop then has no per-row switch on the loss or on the weights."""
    for i in range(scores.shape[0]):
        adds, g, h = row_terms(kind, scores[i], labels[i], row_weight(weights, use_weights, i), param)
        if adds:
            out_grad[i] += g
            out_hess[i] += h


@njit(cache=True, inline="always")
def rows_grad_hess(kind, scores, labels, weights, use_weights, param, out_grad, out_hess):
    """Each row's gradient and hessian of the loss ``kind`` (``_pointwise_terms.row_terms``: a
    ``RowKind`` code and its parameter) added into the outputs: the CPU twin of
    ``_pointwise_cuda.pointwise_rows``. Called from Python with the loss's code, and inlined into
    :func:`squared_error_grad_hess`, where the code is a constant. The switches on ``kind`` and
    ``use_weights`` sit outside the row loop (one loop per case): with them inside, SquaredHinge's
    pass took 1.3-1.7 ms against 0.3-0.4 ms (benchmarks/objectives.py --only SquaredHinge, 4
    interleaved runs; 0.4-0.6 ms with this)."""
    if kind == RowKind.SQUARED_ERROR:
        if use_weights:
            _rows_of(RowKind.SQUARED_ERROR, scores, labels, weights, True, param, out_grad, out_hess)
        else:
            _rows_of(RowKind.SQUARED_ERROR, scores, labels, weights, False, param, out_grad, out_hess)
    elif kind == RowKind.LOGISTIC:
        if use_weights:
            _rows_of(RowKind.LOGISTIC, scores, labels, weights, True, param, out_grad, out_hess)
        else:
            _rows_of(RowKind.LOGISTIC, scores, labels, weights, False, param, out_grad, out_hess)
    elif kind == RowKind.SQUARED_HINGE:
        if use_weights:
            _rows_of(RowKind.SQUARED_HINGE, scores, labels, weights, True, param, out_grad, out_hess)
        else:
            _rows_of(RowKind.SQUARED_HINGE, scores, labels, weights, False, param, out_grad, out_hess)
    else:  # an unknown code: row_terms' NaN in every row, as before
        _rows_of(kind, scores, labels, weights, use_weights, param, out_grad, out_hess)


@njit(cache=True, inline="always")
def rows_loss(kind, scores, labels, weights, use_weights, param):
    """The loss ``kind`` summed over the rows (``_pointwise_terms.row_loss``), as :func:`rows_grad_hess`."""
    total = 0.0
    for i in range(scores.shape[0]):
        total += row_loss(kind, scores[i], labels[i], row_weight(weights, use_weights, i), param)
    return total


# The least-squares terms inside other losses' kernels (QBRank's, the click losses' labelled rows).
@njit(cache=True)
def squared_error_grad_hess(scores, labels, weights, use_weights, out_grad, out_hess):
    rows_grad_hess(RowKind.SQUARED_ERROR, scores, labels, weights, use_weights, 0.0, out_grad, out_hess)


@njit(cache=True)
def squared_error_loss(scores, labels, weights, use_weights):
    return rows_loss(RowKind.SQUARED_ERROR, scores, labels, weights, use_weights, 0.0)


# --- McRank: softmax over K outputs per row ----------------------------------------------------------
@njit(cache=True)
def _softmax_row(f, out_p):
    # The GPU's softmax_top_z and softmax_p in one pass over the row (same bits: exp(f_k - top) / z):
    # measured, evaluating each exp twice (for the sum, then for p) cost McRank 14% CPU.
    top = f[0]
    for k in range(1, f.shape[0]):
        top = max(top, f[k])
    z = 0.0
    for k in range(f.shape[0]):
        out_p[k] = np.exp(f[k] - top)
        z += out_p[k]
    for k in range(f.shape[0]):
        out_p[k] /= z
    return top + np.log(z)  # log-sum-exp


@njit(cache=True)
def mcrank_grad_hess(scores, labels, weights, use_weights, out_grad, out_hess):
    n, kk = scores.shape
    p = np.empty(kk)
    for i in range(n):
        w = row_weight(weights, use_weights, i)
        _softmax_row(scores[i], p)
        y = int(labels[i])
        for k in range(kk):
            g, h = mcrank_row_class(p[k], k, y, w)
            out_grad[i, k] += g
            out_hess[i, k] += h


@njit(cache=True)
def mcrank_loss(scores, labels, weights, use_weights):
    n, kk = scores.shape
    p = np.empty(kk)
    total = 0.0
    for i in range(n):
        w = row_weight(weights, use_weights, i)
        lse = _softmax_row(scores[i], p)
        total += w * (lse - scores[i, int(labels[i])])
    return total


@njit(cache=True)
def mcrank_expected_grade(scores, out):
    n, kk = scores.shape
    p = np.empty(kk)
    for i in range(n):
        _softmax_row(scores[i], p)
        acc = 0.0
        for k in range(kk):
            acc += k * p[k]
        out[i] = acc
