"""Multiple-testing correction of the paired tests of ``customobj compare``.

Every method is tested against the same baseline, so with m methods a p-value below 0.05 turns up
by chance far more often than 5% of the time. Holm's step-down procedure (Holm 1979, "A simple
sequentially rejective multiple test procedure") controls the family-wise error rate at the
chosen level for any dependence between the tests, and rejects at least what Bonferroni rejects.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["ALPHA", "holm"]

#: Family-wise error rate at which the terminal table marks a difference as significant.
ALPHA = 0.05


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values, in the order given.

    With the m finite p-values sorted, :math:`p_{(1)} \\le \\dots \\le p_{(m)}`,

    .. math:: \\tilde p_{(i)} = \\min\\Bigl(1,\\ \\max_{j \\le i} (m - j + 1)\\, p_{(j)}\\Bigr)

    and a hypothesis is rejected at level :math:`\\alpha` when :math:`\\tilde p \\le \\alpha`. NaN
    entries (no test could be run, e.g. identical rankings) stay NaN and do not count in m.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, float("nan")]).round(4).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be one-dimensional, got shape {p.shape}")
    finite = ~np.isnan(p)
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise ValueError("p_values must lie in [0, 1] (or be NaN)")
    out = np.full(p.shape, math.nan)
    idx = np.flatnonzero(finite)
    m = idx.size
    if m == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out
