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

__all__ = ["add_weighted", "add_picked"]


@njit(cache=True)
def add_weighted(parts: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i] += sum_k weights[k] * parts[k, i]`` (linear scalarisation and every weighted method)."""
    m, n = parts.shape
    for i in range(n):
        acc = 0.0
        for k in range(m):
            acc += weights[k] * parts[k, i]
        out[i] += acc


@njit(cache=True)
def add_picked(parts: np.ndarray, row_label: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i] += parts[row_label[i], i]`` (stochastic label aggregation: each row's query's label)."""
    n = parts.shape[1]
    for i in range(n):
        out[i] += parts[row_label[i], i]
