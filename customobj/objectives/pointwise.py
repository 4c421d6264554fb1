"""Pointwise losses (SPEC.md section 1): one term per row, no query structure needed."""
from __future__ import annotations

import numpy as np

from .base import Objective
from . import _pointwise_kernels as K

__all__ = ["SquaredError"]

_EMPTY = np.zeros(0, dtype=np.float64)


def _weights(prep):
    """(weights array, use_weights flag) in the form the kernels take."""
    return (prep.weight, True) if prep.weight is not None else (_EMPTY, False)


class SquaredError(Objective):
    """``L = sum_i w_i (s_i - y_i)^2 / 2``: least squares on the labels (MART / GBT).

    grad ``s - y``, hess ``1`` (times the row weight). Friedman (2001); the GBT baseline of
    Zheng et al. (2007).
    """

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        w, use_w = _weights(prep)
        K.squared_error_grad_hess(scores, prep.labels, w, use_w, out_grad, out_hess)

    def _loss(self, scores, prep, state):
        w, use_w = _weights(prep)
        return K.squared_error_loss(scores, prep.labels, w, use_w)
