"""The combination of the per-label gradients (tested through ``tests/test_multi_objective.py``).

``parts`` holds one row per label (``m x n`` float64); the combined gradient (or hessian) is added
into ``out``, as every objective adds into its outputs.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["add_weighted", "add_picked"]


@njit(cache=True, parallel=True)
def add_weighted(parts: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i] += sum_k weights[k] * parts[k, i]`` (linear scalarisation and every weighted method)."""
    m, n = parts.shape
    for i in prange(n):
        acc = 0.0
        for k in range(m):
            acc += weights[k] * parts[k, i]
        out[i] += acc


@njit(cache=True, parallel=True)
def add_picked(parts: np.ndarray, row_label: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i] += parts[row_label[i], i]`` (stochastic label aggregation: each row's query's label)."""
    n = parts.shape[1]
    for i in prange(n):
        out[i] += parts[row_label[i], i]
