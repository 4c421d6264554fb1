"""Numba kernels of the pointwise losses (SPEC.md section 1). Each adds into out_grad / out_hess."""
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
