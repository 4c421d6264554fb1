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

__all__ = ["WEIGHTED_BLOCK", "add_weighted", "add_picked", "weighted_row", "gram_two"]


@njit(cache=True, inline="always")
def weighted_row(parts: np.ndarray, weights: np.ndarray, i: int) -> float:  # pragma: no cover - numba
    """``sum_k weights[k] * parts[k, i]``, added in label order (the GPU's ``_combine_cuda`` calls it too:
    the same bits)."""
    acc = 0.0
    for k in range(parts.shape[0]):
        acc += weights[k] * parts[k, i]
    return acc


#: Rows of :func:`add_weighted`'s block: its sums stay in L1 while each label's row adds into them.
WEIGHTED_BLOCK = 512


@njit(cache=True)
def add_weighted(parts: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i] += sum_k weights[k] * parts[k, i]`` (linear scalarisation and every weighted method), each row's
    sum :func:`weighted_row`'s (from ``0.0``, in label order: the same bits), made for ``WEIGHTED_BLOCK`` rows at
    a time, one label's row after another: contiguous loops LLVM vectorises. A loop over the labels per row
    (``weighted_row`` each row) ran scalar: 339 us a call at 2 x 96,300 (2% of a two-label EPO round per call),
    74 us this way (docs/multi-objective.md, "The combination in blocks")."""
    m, n = parts.shape
    acc = np.empty(WEIGHTED_BLOCK)
    for i0 in range(0, n, WEIGHTED_BLOCK):
        width = min(WEIGHTED_BLOCK, n - i0)
        for j in range(width):
            acc[j] = 0.0
        for k in range(m):
            wk = weights[k]
            row = parts[k, i0:i0 + width]
            for j in range(width):
                acc[j] += wk * row[j]
        dst = out[i0:i0 + width]
        for j in range(width):
            dst[j] += acc[j]


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
