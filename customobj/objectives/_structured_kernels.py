"""Numba kernels of Chapelle's structured-output DCG ranking loss (Chapelle 2007 slides, "Ranking application").

Per query the loss-augmented inference ``max_pi sum_i (s_i A(pi_i) - G_i D(pi_i))`` is a
rectangular assignment of the ``m = min(k, n)`` scored positions to distinct rows (rows left out
sit below ``k`` where ``A = D = 0``). It is solved exactly by the shortest-augmenting-path
Hungarian method with potentials (Kuhn-Munkres / Jonker-Volgenant form), O(m^2 c) per query on
the ``c`` candidate rows that can be in an optimum (``candidates``: ``m`` per gain level).
Positions are 0-based here: ``A[r] = k - r``, ``D[r] = 1/log2(2 + r)`` for ``r < k``.
"""
import numpy as np
from numba import njit, prange

from .._dcg_kernels import position_discount


@njit(cache=True)
def assign_max(s, gain, A, D):
    """Rows assigned to positions ``0..m-1`` maximising ``sum s_i A[r] - G_i D[r]`` (``m = A.size``).

    Returns ``(at, ok)``. ``ok`` is False when a search step found no finite reduced cost (a
    non-finite score or gain): the search then stops instead of looping forever, and ``at`` is
    meaningless.
    """
    n = s.size
    m = A.size
    inf = np.inf
    # 1-based potentials: u over positions (rows of the cost matrix), v over documents.
    u = np.zeros(m + 1)
    v = np.zeros(n + 1)
    p = np.zeros(n + 1, dtype=np.int64)    # p[j] = position (1-based) holding document j, 0 = none
    way = np.zeros(n + 1, dtype=np.int64)
    minv = np.empty(n + 1)
    used = np.empty(n + 1, dtype=np.bool_)
    for i in range(1, m + 1):
        p[0] = i
        j0 = 0
        minv[:] = inf
        used[:] = False
        while True:
            used[j0] = True
            i0 = p[j0]
            a0 = A[i0 - 1]
            d0 = D[i0 - 1]
            delta = inf
            j1 = 0
            for j in range(1, n + 1):
                if not used[j]:
                    cur = -(s[j - 1] * a0 - gain[j - 1] * d0) - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(n + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            if j1 == 0:  # no finite reduced cost: inf/NaN input; stop rather than spin
                return np.zeros(m, dtype=np.int64), False
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    at = np.empty(m, dtype=np.int64)
    for j in range(1, n + 1):
        if p[j] != 0:
            at[p[j] - 1] = j - 1
    return at, True


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
    """Rows that can fill an optimal assignment: the ``m`` best-scored rows of each gain level.

    Within one gain level ``w(j, r) = s_j A[r] - G D[r]`` orders rows by score at every position
    (``A > 0``). A row with ``m`` same-gain rows scored at least as high can be exchanged for one
    of them left free (only ``m - 1`` other positions) without lowering the total, so some optimum
    uses candidates only. ``star`` (label, then score, descending) lists each level best first.
    """
    keep = np.empty(star.size, dtype=np.int64)
    c = 0
    run = 0
    for t in range(star.size):
        if t > 0 and gain[star[t]] != gain[star[t - 1]]:
            run = 0
        if run < m:
            keep[c] = star[t]
            c += 1
        run += 1
    return keep[:c]


@njit(cache=True)
def _query(s, gain, k):
    """(loss, rows of pi_hat, rows of pi*, ok) in positions ``0..m-1``; pi_hat = pi* when it is
    optimal; ``ok`` False when the assignment met non-finite costs (then loss 0, no gradient)."""
    n = s.size
    m = min(k, n)
    A = np.empty(m)
    D = np.empty(m)
    for r in range(m):
        A[r] = float(k - r)
        D[r] = position_discount(r)
    star = ideal_order(s, gain)  # gain is monotone in the label, so it orders like the label
    rows = candidates(star, gain, m)
    at, ok = assign_max(s[rows], gain[rows], A, D)
    if not ok:
        return 0.0, star[:m], star[:m], False
    hat = rows[at]
    loss = 0.0
    scale = 1.0
    for r in range(m):
        loss += (s[hat[r]] - s[star[r]]) * A[r] - (gain[hat[r]] - gain[star[r]]) * D[r]
        scale += (abs(s[hat[r]]) + abs(s[star[r]])) * A[r] + (gain[hat[r]] + gain[star[r]]) * D[r]
    if loss <= 1e-12 * scale:
        # pi* attains the max (up to rounding): zero loss and zero subgradient, never noise.
        return 0.0, star[:m], star[:m], True
    return loss, hat, star[:m], True


@njit(cache=True, inline="always")
def _query_weight(weights, use_weights, start, stop):
    if not use_weights:
        return 1.0
    total = 0.0
    for t in range(start, stop):
        total += weights[t]
    return total / (stop - start)


@njit(cache=True, parallel=True)
def structured_dcg_grad_hess(scores, ptr, row_gain, k, weights, use_weights, hess, out_grad, out_hess, out_failed):
    """Adds each query's subgradient and surrogate hessian; ``out_failed[q]`` marks a failed assignment."""
    for q in prange(ptr.size - 1):
        start = ptr[q]
        stop = ptr[q + 1]
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
