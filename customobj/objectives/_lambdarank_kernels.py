"""Numba kernels of LambdaRank / LambdaMART (SPEC.md section 3; Burges 2010, sections 3, 4, 7).

Every query is sorted by current score (stable, ties by row order). For the pair at sorted
positions ``a < b`` with different gains, ``|dZ|`` is the change of the metric when the two rows
swap positions, computed in O(1) from per-query prefix arrays (so a query costs O(n^2), never
O(n^3)):

- NDCG: ``|g_a - g_b| |D_a - D_b| / IDCG@k`` with ``D`` zero beyond ``k``.
- ERR: Burges' sec. 3 formula with ``P[a] = prod_{m<a} T_m`` and ``A[a]`` = ERR summed up to ``a``.
- MAP: prefix counts ``C`` of relevant rows and prefix sums ``S`` of ``1/rank`` over relevant rows.
- MRR: only the first (and second) relevant position matter.

Positions are 0-based here (rank = position + 1). A pair can change the metric only if its upper
row is within the cutoff ``kk``, and ``truncation`` (LightGBM's ``lambdarank_truncation_level``)
keeps only pairs whose upper row is in the top ``trunc``; the outer loop stops at the smaller.

``row_gain`` holds, per row: NDCG the gain ``G(y)``; ERR the probability ``R``; MAP/MRR the binary
relevance. ``qnorm`` per query: NDCG ``1/IDCG@k``, MAP ``1/#relevant`` (capped at ``k``), ERR/MRR 1;
0 makes the query contribute nothing.
"""
import numpy as np
from numba import njit, prange

NDCG, ERR, MAP, MRR = 0, 1, 2, 3


@njit(cache=True)
def discount_table(n, k):
    """``D[r] = 1/log2(2 + r)`` for 0-based position ``r < k``, else 0."""
    d = np.zeros(max(n, 1), dtype=np.float64)
    for r in range(min(n, k)):
        d[r] = 1.0 / np.log2(2.0 + r)
    return d


@njit(cache=True)
def ideal_dcg(row_gain, ptr, disc):
    """DCG of the label-sorted order of each query (positions beyond ``k`` have ``disc = 0``)."""
    nq = ptr.size - 1
    out = np.zeros(nq, dtype=np.float64)
    for q in range(nq):
        g = np.sort(row_gain[ptr[q]:ptr[q + 1]])[::-1]
        total = 0.0
        for r in range(g.size):
            total += g[r] * disc[r]
        out[q] = total
    return out


@njit(cache=True)
def _setup(scores, row_gain, start, n, metric, kk, order, g, s, P, A, C, S):
    """Sort one query and fill the per-position arrays its metric needs (division-free ``_delta``).

    ERR: ``P[r] = prod_{m<r} T_m / (r + 1)`` (0 beyond the cutoff), ``A[r]`` = ERR summed up to
    ``r``, ``C[r] = 1 / T_r``. MAP: ``P[r] = hits_r / (r + 1)`` (0 beyond the cutoff),
    ``A[r] = (hits_r + 1) / (r + 1)``, ``S[r]`` = sum of ``1/(m + 1)`` over relevant ``m <= r``
    within the cutoff. MRR: ``A[r] = 1 / (r + 1)`` within the cutoff, else 0.
    Returns the first and second relevant positions (``n`` when absent; used by MRR).
    """
    neg = np.empty(n, dtype=np.float64)
    for t in range(n):
        neg[t] = -scores[start + t]
    idx = np.argsort(neg, kind="mergesort")  # stable: ties keep row order
    for r in range(n):
        order[r] = start + idx[r]
        g[r] = row_gain[order[r]]
        s[r] = scores[order[r]]
    first = n
    second = n
    if metric == ERR:
        p = 1.0
        acc = 0.0
        for r in range(n):
            if r < kk:
                P[r] = p / (r + 1.0)
                acc += g[r] * P[r]
            else:
                P[r] = 0.0
            A[r] = acc
            C[r] = 1.0 / (1.0 - g[r])  # R < 1, see listwise.LambdaRank._state
            p *= 1.0 - g[r]
    elif metric == MAP:
        hits = 0.0
        acc = 0.0
        for r in range(n):
            if g[r] > 0.0:
                hits += 1.0
                if r < kk:
                    acc += 1.0 / (r + 1.0)
            P[r] = hits / (r + 1.0) if r < kk else 0.0
            A[r] = (hits + 1.0) / (r + 1.0)
            S[r] = acc
    elif metric == MRR:
        for r in range(n):
            A[r] = 1.0 / (r + 1.0) if r < kk else 0.0
            if g[r] > 0.0:
                if first == n:
                    first = r
                elif second == n:
                    second = r
    return first, second


@njit(cache=True, inline="always")
def _norm_dz(dz, norm, spread, d):
    # LightGBM's lambdarank_norm: damp each pair by its score distance (unless all scores tie).
    if norm and spread:
        return dz / (0.01 + abs(d))
    return dz


@njit(cache=True, inline="always")
def _softplus(x):
    if x > 0.0:
        return x + np.log1p(np.exp(-x))
    return np.log1p(np.exp(x))


@njit(cache=True)
def _exp_table(s, n, sigma, e):
    # exp(sigma (s_r - s_0)) in (0, 1]: rho of a pair is then one division instead of one exp.
    for r in range(n):
        e[r] = np.exp(sigma * (s[r] - s[0]))


@njit(cache=True, inline="always")
def _rho(e_hi, e_lo, d, sigma):
    """``1 / (1 + exp(sigma d))`` with ``d = s_hi - s_lo``; direct exp when the table underflows."""
    if e_lo > 1e-280:
        return e_lo / (e_lo + e_hi)
    return 1.0 / (1.0 + np.exp(sigma * d))


GRAD, LOSS, COUNT, FILL = 0, 1, 2, 3


@njit(cache=True)
def _query_pass(mode, scores, row_gain, start, n, qn, disc, metric, kk, lim, sigma, norm,
                weights, use_weights, out_grad, out_hess, at, out_i, out_j, out_c):
    """All pairs of one query. ``mode`` GRAD adds into ``out_grad/out_hess``; LOSS returns the
    query's utility; COUNT returns the number of pairs with nonzero ``|dZ|``; FILL writes them
    (rows, coupling) from offset ``at``. The ``|dZ|`` formulas sit in the loop on purpose: as a
    separate function (even inlined) the ERR/MAP passes ran 4-6x slower.
    """
    order = np.empty(n, dtype=np.int64)
    g = np.empty(n)
    s = np.empty(n)
    P = np.empty(n)
    A = np.empty(n)
    C = np.empty(n)
    S = np.empty(n)
    e = np.empty(n)
    first, second = _setup(scores, row_gain, start, n, metric, kk, order, g, s, P, A, C, S)
    if metric == MRR:
        lim = min(lim, first + 1)  # a swap below the first relevant row leaves RR unchanged
    a_first = A[first] if first < n else 0.0
    _exp_table(s, n, sigma, e)
    lg = np.zeros(n if mode == GRAD else 0)
    lh = np.zeros(n if mode == GRAD else 0)
    spread = s[0] != s[n - 1]
    sum_lambda = 0.0
    total = 0.0
    count = 0
    sig2 = sigma * sigma
    for a in range(min(n - 1, lim)):
        ga = g[a]
        ea = e[a]
        sa = s[a]
        acc_g = 0.0
        acc_h = 0.0
        for b in range(a + 1, n):
            gb = g[b]
            if ga == gb:
                continue
            if metric == NDCG:
                dz = abs(ga - gb) * (disc[a] - disc[b])
            elif metric == ERR:
                # Burges sec. 3: the rank-a term, the rows between a and b (their prefix product
                # changes by T_b / T_a), the rank-b term; rows below b are unchanged.
                ca = C[a]
                mid = A[min(b - 1, kk - 1)] - A[a]
                dz = abs(P[a] * (ga - gb) + (gb - ga) * ca * mid + P[b] * (gb - (1.0 - gb) * ga * ca))
            elif metric == MAP:
                mid = S[min(b - 1, kk - 1)] - S[a]
                if ga > 0.0:  # the relevant row moves down from a to b
                    dz = abs(P[b] - P[a] - mid)
                else:
                    dz = abs(A[a] + mid - P[b])
            else:  # MRR
                if ga > 0.0:
                    dz = abs(a_first - A[min(b, second)]) if a == first else 0.0
                else:
                    dz = abs(A[a] - a_first) if a < first else 0.0
            dz *= qn
            if dz == 0.0:
                continue
            if mode == COUNT:
                count += 1
                continue
            # sg = +1 when the upper position a holds the better row
            if ga > gb:
                sg = 1.0
                d = sa - s[b]
                rho = _rho(ea, e[b], d, sigma)
            else:
                sg = -1.0
                d = s[b] - sa
                rho = _rho(e[b], ea, d, sigma)
            dz = _norm_dz(dz, norm, spread, d)
            lam = sigma * dz * rho
            sum_lambda += 2.0 * lam
            pw = 0.5 * (weights[order[a]] + weights[order[b]]) if use_weights else 1.0
            if mode == GRAD:
                h = sig2 * dz * rho * (1.0 - rho) * pw
                lam *= pw * sg
                acc_g -= lam
                lg[b] += lam
                acc_h += h
                lh[b] += h
            elif mode == LOSS:
                total += pw * dz * _softplus(-sigma * d)
            else:
                hi, lo = (a, b) if sg > 0 else (b, a)
                out_i[at + count] = order[hi]
                out_j[at + count] = order[lo]
                out_c[at + count] = sig2 * dz * rho * (1.0 - rho) * pw
            count += 1
        if mode == GRAD:
            lg[a] += acc_g
            lh[a] += acc_h
    if mode == COUNT:
        return float(count)
    factor = 1.0
    if norm and sum_lambda > 0.0:
        factor = np.log2(1.0 + sum_lambda) / sum_lambda
    if mode == GRAD:
        for r in range(n):
            out_grad[order[r]] += factor * lg[r]
            out_hess[order[r]] += factor * lh[r]
    elif mode == FILL:
        for t in range(at, at + count):
            out_c[t] *= factor
    return total * factor


@njit(cache=True, parallel=True)
def lambdarank_grad_hess(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm,
                         weights, use_weights, out_grad, out_hess):
    no_i = np.zeros(0, dtype=np.int64)
    no_f = np.zeros(0, dtype=np.float64)
    for q in prange(ptr.size - 1):
        start = ptr[q]
        n = ptr[q + 1] - start
        if n < 2 or qnorm[q] == 0.0:
            continue
        kk = min(k, n)
        _query_pass(GRAD, scores, row_gain, start, n, qnorm[q], disc, metric, kk, min(kk, trunc),
                    sigma, norm, weights, use_weights, out_grad, out_hess, 0, no_i, no_i, no_f)


@njit(cache=True, parallel=True)
def lambdarank_loss(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm,
                    weights, use_weights):
    nq = ptr.size - 1
    no_i = np.zeros(0, dtype=np.int64)
    no_f = np.zeros(0, dtype=np.float64)
    per_query = np.zeros(nq)
    for q in prange(nq):
        start = ptr[q]
        n = ptr[q + 1] - start
        if n < 2 or qnorm[q] == 0.0:
            continue
        kk = min(k, n)
        per_query[q] = _query_pass(LOSS, scores, row_gain, start, n, qnorm[q], disc, metric, kk,
                                   min(kk, trunc), sigma, norm, weights, use_weights,
                                   no_f, no_f, 0, no_i, no_i, no_f)
    # A serial sum: per_query.sum() here would become a thread-dependent parallel reduction.
    total = 0.0
    for q in range(nq):
        total += per_query[q]
    return total


@njit(cache=True, parallel=True)
def lambdarank_couplings(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm,
                         weights, use_weights):
    nq = ptr.size - 1
    no_i = np.zeros(0, dtype=np.int64)
    no_f = np.zeros(0, dtype=np.float64)
    counts = np.zeros(nq + 1, dtype=np.int64)
    for q in prange(nq):
        start = ptr[q]
        n = ptr[q + 1] - start
        if n < 2 or qnorm[q] == 0.0:
            continue
        kk = min(k, n)
        counts[q + 1] = int(_query_pass(COUNT, scores, row_gain, start, n, qnorm[q], disc, metric, kk,
                                        min(kk, trunc), sigma, norm, weights, use_weights,
                                        no_f, no_f, 0, no_i, no_i, no_f))
    offsets = np.cumsum(counts)
    m = offsets[-1]
    out_i = np.empty(m, dtype=np.int64)
    out_j = np.empty(m, dtype=np.int64)
    out_c = np.empty(m, dtype=np.float64)
    for q in prange(nq):
        start = ptr[q]
        n = ptr[q + 1] - start
        if n < 2 or qnorm[q] == 0.0:
            continue
        kk = min(k, n)
        _query_pass(FILL, scores, row_gain, start, n, qnorm[q], disc, metric, kk, min(kk, trunc),
                    sigma, norm, weights, use_weights, no_f, no_f, offsets[q], out_i, out_j, out_c)
    return out_i, out_j, out_c
