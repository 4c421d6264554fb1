"""The combination of the per-label gradients (tested through ``tests/test_multi_objective.py``).

``parts`` holds one row per label (``m x n`` float64); the combined gradient (or hessian) is added
into ``out``, as every objective adds into its outputs.

Serial on purpose: a pass over ``m x n`` values is microseconds, while a parallel region between the
libraries' OpenMP regions waited for its pool's threads (``prange``: 8 ms a call on MQ2008 Fold 1, as
long as a LambdaRank pass; serial: 26 us), which made a cost-reading round 2.3x ``m`` single rounds
(``python benchmarks/multi_objective.py rounds``, docs/multi-objective.md).
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["add_weighted", "add_picked", "weighted_row", "gram_two"]


@njit(cache=True, inline="always")
def weighted_row(parts: np.ndarray, weights: np.ndarray, i: int) -> float:  # pragma: no cover - numba
    """``sum_k weights[k] * parts[k, i]``, added in label order (the GPU's ``_combine_cuda`` calls it too:
    the same bits)."""
    acc = 0.0
    for k in range(parts.shape[0]):
        acc += weights[k] * parts[k, i]
    return acc


@njit(cache=True)
def add_weighted(parts: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i] += sum_k weights[k] * parts[k, i]`` (linear scalarisation and every weighted method)."""
    for i in range(parts.shape[1]):
        out[i] += weighted_row(parts, weights, i)


@njit(cache=True)
def add_picked(parts: np.ndarray, row_label: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i] += parts[row_label[i], i]`` (stochastic label aggregation: each row's query's label)."""
    n = parts.shape[1]
    for i in range(n):
        out[i] += parts[row_label[i], i]


@njit(cache=True)
def gram_two(parts: np.ndarray) -> np.ndarray:  # pragma: no cover - numba
    """``parts @ parts.T`` for two labels (``parts``: 2 x n), in one pass over the rows, each entry added in row
    order: 12 us against numpy's 25 us at 2 x 9,630 (a call on a transposed view; issue 41's round cost). More
    labels take numpy's product (BLAS: 40 us at 4 x 9,630, where a loop here took 270)."""
    s00 = s01 = s11 = 0.0
    for i in range(parts.shape[1]):
        a, b = parts[0, i], parts[1, i]
        s00 += a * a
        s01 += a * b
        s11 += b * b
    out = np.empty((2, 2))
    out[0, 0], out[0, 1], out[1, 0], out[1, 1] = s00, s01, s01, s11
    return out
