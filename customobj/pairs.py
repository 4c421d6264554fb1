"""Label-derived preference pairs: every ``(i, j)`` in one query with ``y_i > y_j``.

``label_pairs`` returns them with their grade difference ``y_i - y_j``; ``max_pairs_per_query``
caps each query by uniform sampling without replacement, seeded per query so the result does not
depend on thread count or query order.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np
from numba import njit

from ._validation import as_labels, check_int, check_pair_budget
from .groups import Groups
from .groups import as_groups

__all__ = ["label_pairs", "count_label_pairs"]

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
#: Largest ``seed``: seeds are 64-bit unsigned in the sampler.
MAX_SEED = 2**64 - 1


@njit(cache=True)
def _splitmix64(state):
    # One step of splitmix64: a tiny, thread-free, reproducible generator.
    z = state + np.uint64(0x9E3779B97F4A7C15)
    state = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return state, z


@njit(cache=True)
def _query_pair_count(labels, lo, hi):
    c = 0
    for a in range(lo, hi):
        for b in range(lo, hi):
            if labels[a] > labels[b]:
                c += 1
    return c


@njit(cache=True)
def count_pairs_kernel(labels, ptr):
    """Number of label pairs per query (int64 array of length n_queries)."""
    nq = ptr.size - 1
    out = np.zeros(nq, dtype=np.int64)
    for q in range(nq):
        out[q] = _query_pair_count(labels, ptr[q], ptr[q + 1])
    return out


@njit(cache=True)
def fill_pairs_kernel(labels, ptr, counts, cap, seed, out_i, out_j, out_d):
    """Write each query's pairs (all of them, or ``cap`` sampled by Knuth's selection sampling).

    Pairs come out query by query, and within a query in row-major order of ``(i, j)``.
    """
    nq = ptr.size - 1
    pos = 0
    for q in range(nq):
        lo = ptr[q]
        hi = ptr[q + 1]
        total = counts[q]
        need = total if (cap < 0 or total <= cap) else cap
        state = np.uint64(seed) * np.uint64(0x2545F4914F6CDD1D) + np.uint64(q)
        seen = 0
        for a in range(lo, hi):
            if need == 0:
                break
            for b in range(lo, hi):
                if labels[a] > labels[b]:
                    take = True
                    if need < total - seen:
                        state, r = _splitmix64(state)
                        # Selection sampling: keep with probability need / remaining.
                        u = (r >> np.uint64(11)) * (1.0 / 9007199254740992.0)
                        take = u * (total - seen) < need
                    seen += 1
                    if take:
                        out_i[pos] = a
                        out_j[pos] = b
                        out_d[pos] = labels[a] - labels[b]
                        pos += 1
                        need -= 1
                        if need == 0:
                            break
    return pos


def count_label_pairs(labels: Any, group: Union[Groups, Any]) -> np.ndarray:
    """Number of pairs ``y_i > y_j`` in each query (int64 array)."""
    y = as_labels(labels)
    g = as_groups(group, y.size)
    return count_pairs_kernel(y, g.ptr)


def label_pairs(labels: Any, group: Union[Groups, Any], *, max_pairs_per_query: Optional[int] = None,
                seed: int = 0) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Enumerate the pairs ``(i, j)`` of one query with ``labels[i] > labels[j]``.

    Parameters
    ----------
    labels : array of relevance grades, length ``n``.
    group : query sizes or ``Groups``.
    max_pairs_per_query : int >= 0 or None (below 2**62, ``customobj._validation.INT_LIMIT``)
        Keep at most this many pairs per query, sampled uniformly without replacement
        (seeded per query: the same ``seed`` always gives the same pairs).
    seed : int in ``0..2**64 - 1``

    Returns
    -------
    i, j : int64 arrays of row indices (row ``i`` should rank above row ``j``).
    diff : float64 array ``labels[i] - labels[j]``.
    """
    y = as_labels(labels)
    g = as_groups(group, y.size)
    cap = check_int(max_pairs_per_query, "max_pairs_per_query", minimum=0, allow_none=True)
    seed = check_int(seed, "seed", minimum=0, maximum=MAX_SEED)
    counts = count_pairs_kernel(y, g.ptr)
    cap_arr = -1 if cap is None else cap
    total = int(counts.sum()) if cap is None else int(np.minimum(counts, cap).sum())
    check_pair_budget(total, "label_pairs", hint="pass max_pairs_per_query= to sample a fixed number per query")
    out_i = np.empty(total, dtype=np.int64)
    out_j = np.empty(total, dtype=np.int64)
    out_d = np.empty(total, dtype=np.float64)
    written = fill_pairs_kernel(y, g.ptr, counts, cap_arr, np.uint64(seed), out_i, out_j, out_d)
    assert written == total
    return out_i, out_j, out_d
