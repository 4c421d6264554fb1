"""Numba kernels of Chapelle's structured-output DCG ranking loss (Chapelle 2007 slides, "Ranking application").

Per query the loss-augmented inference ``max_pi sum_i (s_i A(pi_i) - G_i D(pi_i))`` is a
rectangular assignment of the ``m = min(k, n)`` scored positions to distinct rows (rows left out
sit below ``k`` where ``A = D = 0``). It is solved exactly by the shortest-augmenting-path
Hungarian method with potentials (Kuhn-Munkres / Jonker-Volgenant form), O(m^2 c) per query on
the ``c`` candidate rows that can be in an optimum (``candidates``: ``m`` per gain level).
Positions are 0-based here: ``A[r] = k - r``, ``D[r] = 1/log2(2 + r)`` for ``r < k``. The per-query
steps (candidates, assignment, loss) are ``_structured_terms``', shared with the GPU kernels.
"""
import numpy as np
from numba import njit, prange

from ._structured_terms import assign_core, assignment_loss, position_weights, select_candidates


@njit(cache=True)
def assign_max(s, gain, A, D):
    """Rows assigned to positions ``0..m-1`` maximising ``sum s_i A[r] - G_i D[r]`` (``m = A.size``),
    every row a candidate (``_structured_terms.assign_core``).

    Returns ``(at, ok)``. ``ok`` is False when a search step found no finite reduced cost (a
    non-finite score or gain): the search then stops instead of looping forever, and ``at`` is
    meaningless.
    """
    return _assign(s, gain, np.arange(s.size), A, D)


@njit(cache=True)
def _assign(s, gain, cand, A, D):
    c = cand.size
    m = A.size
    at = np.zeros(m, dtype=np.int64)
    ok = assign_core(s, gain, cand, A, D, np.empty(m + 1), np.empty(c + 1), np.empty(c + 1),
                     np.empty(c + 1, dtype=np.int64), np.empty(c + 1, dtype=np.int64),
                     np.empty(c + 1, dtype=np.bool_), at)
    return at, ok


@njit(cache=True)
def ideal_order(s, labels):
    """Label descending, ties by score descending, then row order (stable sorts)."""
    by_score = np.argsort(-s, kind="mergesort")
    lab = np.empty(s.size)
    for t in range(s.size):
        lab[t] = -labels[by_score[t]]
    by_label = np.argsort(lab, kind="mergesort")
    return by_score[by_label]


@njit(cache=True)
def candidates(star, gain, m):
    """Rows that can fill an optimal assignment (``_structured_terms.select_candidates``)."""
    keep = np.empty(star.size, dtype=np.int64)
    return keep[:select_candidates(star, gain, m, keep)]


@njit(cache=True)
def _query(s, gain, k):
    """(loss, rows of pi_hat, rows of pi*, ok) in positions ``0..m-1``; pi_hat = pi* when it is
    optimal; ``ok`` False when the assignment met non-finite costs (then loss 0, no gradient)."""
    n = s.size
    m = min(k, n)
    A = np.empty(m)
    D = np.empty(m)
    position_weights(k, m, A, D)
    star = ideal_order(s, gain)  # gain is monotone in the label, so it orders like the label
    rows = candidates(star, gain, m)
    at, ok = _assign(s, gain, rows, A, D)
    if not ok:
        return 0.0, star[:m], star[:m], False
    loss, scale = assignment_loss(s, gain, rows, at, star, A, D)
    if loss <= 1e-12 * scale:
        # pi* attains the max (up to rounding): zero loss and zero subgradient, never noise.
        return 0.0, star[:m], star[:m], True
    return loss, rows[at], star[:m], True


@njit(cache=True, inline="always")
def _query_weight(weights, use_weights, start, stop):
    if not use_weights:
        return 1.0
    total = 0.0
    for t in range(start, stop):
        total += weights[t]
    return total / (stop - start)


@njit(cache=True, parallel=True)
def structured_dcg_grad_hess(scores, ptr, row_gain, k, weights, use_weights, hess, out_grad, out_hess, out_failed,
                             out_loss):
    """Adds each query's subgradient and surrogate hessian; ``out_failed[q]`` marks a failed assignment;
    ``out_loss[q]`` the query's loss ``w_q R_q`` from the same assignment (:func:`structured_dcg_loss`' per-query
    value: ``MultiObjective``'s per-label cost in one pass, the GPU's ``structured_queries`` writes the same)."""
    for q in prange(ptr.size - 1):
        start = ptr[q]
        stop = ptr[q + 1]
        out_loss[q] = 0.0
        if stop == start:
            continue
        wq = _query_weight(weights, use_weights, start, stop)
        for t in range(start, stop):
            out_hess[t] += hess * wq
        if stop - start < 2:
            continue
        loss, hat, star, ok = _query(scores[start:stop], row_gain[start:stop], k)
        out_failed[q] = not ok
        if loss == 0.0:
            continue
        out_loss[q] = wq * loss
        for r in range(hat.size):
            a = float(k - r)
            out_grad[start + hat[r]] += wq * a
            out_grad[start + star[r]] -= wq * a


@njit(cache=True, parallel=True)
def structured_dcg_loss(scores, ptr, row_gain, k, weights, use_weights, out_failed):
    nq = ptr.size - 1
    per_query = np.zeros(nq)
    for q in prange(nq):
        start = ptr[q]
        stop = ptr[q + 1]
        if stop - start < 2:
            continue
        loss, hat, star, ok = _query(scores[start:stop], row_gain[start:stop], k)
        out_failed[q] = not ok
        per_query[q] = _query_weight(weights, use_weights, start, stop) * loss
    # A serial sum: per_query.sum() here would become a thread-dependent parallel reduction.
    total = 0.0
    for q in range(nq):
        total += per_query[q]
    return total
