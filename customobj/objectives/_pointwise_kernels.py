"""Numba kernels of the pointwise losses (docs/formulas.md, "Pointwise"). Each adds into out_grad / out_hess.

The per-row math lives in ``_pointwise_terms``, shared with the GPU kernels (``_pointwise_cuda``); these are
the CPU loops over the rows."""
import numpy as np
from numba import njit

from ._pointwise_terms import (logistic_row, mcrank_row_class, row_weight, squared_error_row,
                         squared_hinge_margin, squared_hinge_row)


@njit(cache=True)
def squared_error_grad_hess(scores, labels, weights, use_weights, out_grad, out_hess):
    for i in range(scores.shape[0]):
        g, h = squared_error_row(scores[i], labels[i], row_weight(weights, use_weights, i))
        out_grad[i] += g
        out_hess[i] += h


@njit(cache=True)
def squared_error_loss(scores, labels, weights, use_weights):
    total = 0.0
    for i in range(scores.shape[0]):
        w = row_weight(weights, use_weights, i)
        d = scores[i] - labels[i]
        total += 0.5 * w * d * d
    return total


# --- binary classification: labels are 0/1 here (t = 2 y - 1) ---------------------------------------
@njit(cache=True)
def logistic_grad_hess(scores, labels, weights, use_weights, sigma, out_grad, out_hess):
    for i in range(scores.shape[0]):
        g, h = logistic_row(scores[i], labels[i], row_weight(weights, use_weights, i), sigma)
        out_grad[i] += g
        out_hess[i] += h


@njit(cache=True)
def logistic_loss(scores, labels, weights, use_weights, sigma):
    total = 0.0
    for i in range(scores.shape[0]):
        w = row_weight(weights, use_weights, i)
        z = -2.0 * (2.0 * labels[i] - 1.0) * sigma * scores[i]
        total += w * (max(z, 0.0) + np.log1p(np.exp(-abs(z))))  # softplus(z)
    return total


@njit(cache=True)
def squared_hinge_grad_hess(scores, labels, weights, use_weights, c, out_grad, out_hess):
    for i in range(scores.shape[0]):
        if squared_hinge_margin(scores[i], labels[i]) > 0.0:
            g, h = squared_hinge_row(scores[i], labels[i], row_weight(weights, use_weights, i), c)
            out_grad[i] += g
            out_hess[i] += h


@njit(cache=True)
def squared_hinge_loss(scores, labels, weights, use_weights, c):
    total = 0.0
    for i in range(scores.shape[0]):
        m = 1.0 - (2.0 * labels[i] - 1.0) * scores[i]
        if m > 0.0:
            w = row_weight(weights, use_weights, i)
            total += c * w * m * m
    return total


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
