"""Per-query array helpers of the query-level losses (softmax, XENDCG, YetiRank, QueryRMSE): each
query's mean row weight and the dense pair couplings of every pair of a query.

Examples
--------
>>> import numpy as np
>>> from customobj.objectives.prepared import Prepared
>>> prep = Prepared.build(np.array([1.0, 0.0, 2.0]), [2, 1], np.array([1.0, 3.0, 5.0]))
>>> query_weights(prep).tolist()
[2.0, 5.0]
>>> [a.tolist() for a in dense_couplings(np.array([0, 3]), np.array([1.0, 2.0, 3.0]), np.array([0.5]), "x")]
[[0, 0, 1], [1, 2, 2], [1.0, 1.5, 3.0]]
"""
from __future__ import annotations

import numpy as np

from .._validation import check_pair_budget
from ._arrays import query_sums
from .prepared import Prepared
from . import _listwise_kernels as QK

__all__ = ["query_weights", "dense_couplings"]


def query_weights(prep: Prepared) -> np.ndarray:
    """Mean row weight of each query (ones without weights); 0 for an empty query."""
    sizes = np.diff(prep.ptr)
    if prep.weight is None:
        return np.ones(sizes.size, dtype=np.float64)
    totals = query_sums(sizes, prep.weight / 2.0) * 2.0  # halved: no overflow
    return np.divide(totals, sizes, out=np.zeros(sizes.size), where=sizes > 0)



def dense_couplings(ptr: np.ndarray, factor: np.ndarray, qscale: np.ndarray, what: str) -> tuple:
    """``(i, j, c)`` of every pair ``i < j`` of each query with ``qscale > 0``: ``c = qscale f_i f_j``."""
    sizes = np.diff(ptr)
    per_query = np.where(qscale > 0.0, sizes * (sizes - 1) // 2, 0)
    offsets = np.concatenate([[0], np.cumsum(per_query)]).astype(np.int64)
    m = check_pair_budget(int(offsets[-1]), what, hint="gradients need no pair list; split very large queries")
    out_i, out_j, out_c = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.float64)
    QK.dense_pair_fill(ptr, factor, np.ascontiguousarray(qscale, dtype=np.float64), offsets, out_i, out_j, out_c)
    return out_i, out_j, out_c
