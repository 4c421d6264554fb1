"""The one home of DCG's position discount and ideal DCG, shared by the metric kernels, the
LambdaRank kernels and the structured-SVM kernels.

.. math:: D(r) = \\frac{1}{\\log_2(2 + r)}, \\qquad
          \\mathrm{IDCG@}k = \\sum_{r < k} G(y_{(r)})\\, D(r)

with 0-based positions ``r`` and ``y_(r)`` the labels sorted descending (Järvelin and Kekäläinen
2002; the NDCG of Burges 2010, section 3). Plain ``@njit`` functions: numba compiles a call
from another kernel into the caller's machine code, so sharing them costs nothing per call.
"""
import math

import numpy as np
from numba import njit

__all__ = ["position_discount", "discount_table", "ideal_dcg_query"]


@njit(cache=True)
def position_discount(r):
    """``D(r) = 1/log2(2 + r)`` for the 0-based position ``r`` (rank ``r + 1``)."""
    return 1.0 / math.log2(2.0 + r)  # math.*: also a GPU device function (_listwise_terms)


@njit(cache=True)
def discount_table(n, k):
    """``D[r] = 1/log2(2 + r)`` for 0-based position ``r < k``, else 0; length ``max(n, 1)``."""
    d = np.zeros(max(n, 1), dtype=np.float64)
    for r in range(min(n, k)):
        d[r] = position_discount(r)
    return d


@njit(cache=True)
def ideal_dcg_query(gains, lo, hi, disc, k):
    """Largest DCG@k reachable for rows ``lo:hi``: their gains sorted descending, times ``disc``."""
    n = hi - lo
    kk = n if k > n else k
    g = np.sort(gains[lo:hi])
    total = 0.0
    for r in range(kk):
        total += g[n - 1 - r] * disc[r]
    return total
