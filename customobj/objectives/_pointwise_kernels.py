"""Numba kernels of the pointwise losses (docs/formulas.md, "Pointwise"). Each adds into out_grad / out_hess."""
import numpy as np
from numba import njit


@njit(cache=True)
def squared_error_grad_hess(scores, labels, weights, use_weights, out_grad, out_hess):
    for i in range(scores.shape[0]):
        w = weights[i] if use_weights else 1.0
        out_grad[i] += w * (scores[i] - labels[i])
        out_hess[i] += w


@njit(cache=True)
def squared_error_loss(scores, labels, weights, use_weights):
    total = 0.0
    for i in range(scores.shape[0]):
        w = weights[i] if use_weights else 1.0
        d = scores[i] - labels[i]
        total += 0.5 * w * d * d
    return total


# --- binary classification: labels are 0/1 here (t = 2 y - 1) ---------------------------------------
@njit(cache=True)
def logistic_grad_hess(scores, labels, weights, use_weights, sigma, out_grad, out_hess):
    for i in range(scores.shape[0]):
        w = weights[i] if use_weights else 1.0
        t = 2.0 * labels[i] - 1.0
        z = 2.0 * t * sigma * scores[i]
        # p = 1 / (1 + exp(z)) and p (1 - p) without overflow.
        e = np.exp(-abs(z))
        inv = 1.0 / (1.0 + e)
        p = e * inv if z >= 0.0 else inv
        u = 2.0 * t * sigma * p
        out_grad[i] += -w * u
        out_hess[i] += w * 4.0 * sigma * sigma * e * inv * inv


@njit(cache=True)
def logistic_loss(scores, labels, weights, use_weights, sigma):
    total = 0.0
    for i in range(scores.shape[0]):
        w = weights[i] if use_weights else 1.0
        z = -2.0 * (2.0 * labels[i] - 1.0) * sigma * scores[i]
        total += w * (max(z, 0.0) + np.log1p(np.exp(-abs(z))))  # softplus(z)
    return total


@njit(cache=True)
def squared_hinge_grad_hess(scores, labels, weights, use_weights, c, out_grad, out_hess):
    for i in range(scores.shape[0]):
        t = 2.0 * labels[i] - 1.0
        m = 1.0 - t * scores[i]
        if m > 0.0:
            w = weights[i] if use_weights else 1.0
            out_grad[i] += -2.0 * c * w * t * m
            out_hess[i] += 2.0 * c * w


@njit(cache=True)
def squared_hinge_loss(scores, labels, weights, use_weights, c):
    total = 0.0
    for i in range(scores.shape[0]):
        m = 1.0 - (2.0 * labels[i] - 1.0) * scores[i]
        if m > 0.0:
            w = weights[i] if use_weights else 1.0
            total += c * w * m * m
    return total


# --- McRank: softmax over K outputs per row ----------------------------------------------------------
@njit(cache=True)
def _softmax_row(f, out_p):
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
        w = weights[i] if use_weights else 1.0
        _softmax_row(scores[i], p)
        y = int(labels[i])
        for k in range(kk):
            out_grad[i, k] += w * (p[k] - (1.0 if k == y else 0.0))
            out_hess[i, k] += w * p[k] * (1.0 - p[k])


@njit(cache=True)
def mcrank_loss(scores, labels, weights, use_weights):
    n, kk = scores.shape
    p = np.empty(kk)
    total = 0.0
    for i in range(n):
        w = weights[i] if use_weights else 1.0
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
