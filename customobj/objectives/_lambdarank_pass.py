"""The per-query pass of LambdaRank / LambdaMART (Burges 2010, sections 3, 4, 7).

The drivers in ``_lambdarank_kernels`` sort each query and call ``_query_pass`` once per query.
For the pair at sorted positions ``a < b`` with different gains, ``|dZ|`` is the change of the
metric when the two rows swap positions, computed in O(1) from per-query prefix arrays (so a query
costs O(n^2), never O(n^3)):

- NDCG: ``|g_a - g_b| |D_a - D_b| / IDCG@k`` with ``D`` zero beyond ``k`` (or not: DISCOUNT_FULL).
- ERR: Burges' sec. 3 formula with ``P[a] = prod_{m<a} T_m`` and ``A[a]`` = ERR summed up to ``a``.
- MAP: prefix counts ``C`` of relevant rows and prefix sums ``S`` of ``1/rank`` over relevant rows.
- MRR: only the first (and second) relevant position matter.

Positions are 0-based here (rank = position + 1). A pair can change the metric only if its upper
row is within the cutoff ``kk``, and ``truncation`` (LightGBM's ``lambdarank_truncation_level``)
keeps only pairs whose upper row is in the top ``trunc``; the outer loop stops at the smaller.

NDCG pairs run through ``_ndcg_pairs``, a branch-free loop (the ``y_i > y_j`` / ``y_i == y_j``
branches are unpredictable on real labels; about 10% faster for NDCG@all-rows, truncation 30,
one thread); equal-grade pairs add exact zeros there, so it returns the same bits as the general
loop. The sort (numba's mergesort argsort) is about a third of a truncated NDCG call;
hand-written insertion / merge and quicksort-plus-tie-fix versions measured slower.

``row_gain`` holds, per row: NDCG the gain ``G(y)``; ERR the probability ``R``; MAP/MRR the binary
relevance. ``qnorm`` per query: NDCG ``1/IDCG@k``, MAP ``1/#relevant`` (capped at ``k``), ERR/MRR 1;
0 makes the query contribute nothing.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

#: The metric whose change ``|dZ|`` weighs each pair.
NDCG, ERR, MAP, MRR = 0, 1, 2, 3
#: What one pass does (see ``_query_pass``).
GRAD, LOSS, COUNT, FILL, GRAD_FILL = 0, 1, 2, 3, 4
# Rows of the float scratch: g, s, w, P, A, C, S, e, lg, lh, lc, neg.
_NF = 12


class PassInputs(NamedTuple):
    """What every query's pass reads: the data set's arrays and the objective's options."""

    scores: np.ndarray  # current scores, one per row
    row_gain: np.ndarray  # per row: NDCG gain, ERR probability, MAP/MRR relevance
    weights: np.ndarray  # row weights (read only when use_weights)
    use_weights: bool
    disc: np.ndarray  # the pair loop's position discount D (NDCG)
    metric: int  # NDCG, ERR, MAP or MRR
    sigma: float
    norm: bool  # LightGBM's lambdarank_norm
    hess_scale: float  # 1, or XGBoost's convention factor


class PassOutputs(NamedTuple):
    """Where a pass writes: gradients and hessians (GRAD) and pairs (FILL), zero-length if unused."""

    grad: np.ndarray
    hess: np.ndarray
    pair_i: np.ndarray  # upper (better) row of each pair; any integer dtype
    pair_j: np.ndarray
    pair_c: np.ndarray  # coupling h_ij


@njit(cache=True)
def _sort_query(scores, start, n, neg, order):
    """``order[:n]`` = rows of the query by descending score, ties by row order (stable)."""
    for t in range(n):
        neg[t] = -scores[start + t]
    idx = np.argsort(neg[:n], kind="mergesort")
    for r in range(n):
        order[r] = start + idx[r]


@njit(cache=True)
def _setup(scores, row_gain, weights, use_weights, n, metric, kk, order, g, s, w, P, A, C, S):
    """Fill the per-position arrays of one sorted query (division-free ``|dZ|`` in the pair loop).

    ERR: ``P[r] = prod_{m<r} T_m / (r + 1)`` (0 beyond the cutoff), ``A[r]`` = ERR summed up to
    ``r``, ``C[r] = 1 / T_r``. MAP: ``P[r] = hits_r / (r + 1)`` (0 beyond the cutoff),
    ``A[r] = (hits_r + 1) / (r + 1)``, ``S[r]`` = sum of ``1/(m + 1)`` over relevant ``m <= r``
    within the cutoff. MRR: ``A[r] = 1 / (r + 1)`` within the cutoff, else 0.
    Returns the first and second relevant positions (``n`` when absent; used by MRR).
    """
    for r in range(n):
        g[r] = row_gain[order[r]]
        s[r] = scores[order[r]]
        w[r] = weights[order[r]] if use_weights else 1.0
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


@njit(cache=True)
def _ndcg_pairs(mode, n, lim, qn, disc, sigma, norm, spread, g, s, w, e, lg, lh, order,
                at, out_i, out_j, out_c, li, lj, lc):
    """NDCG pairs of one sorted query without data-dependent branches; returns (count, sum_lambda).

    Needs every ``e[r] > 1e-280`` (``_rho``'s table branch for all pairs). ``rho`` is
    ``e_lo / (e_a + e_b)``, the same bits as ``_rho``. FILL writes each upper row's pairs to the
    local ``li/lj/lc`` and advances only past nonzero ``|dZ|`` (branch-free compaction).
    """
    sig2 = sigma * sigma
    grad = mode == GRAD or mode == GRAD_FILL
    fill = mode == FILL or mode == GRAD_FILL
    damp = norm and spread
    count = 0
    sum_lambda = 0.0
    for a in range(min(n - 1, lim)):
        ga = g[a]
        da = disc[a]
        if mode == COUNT:
            for b in range(a + 1, n):
                dz = abs(ga - g[b]) * (da - disc[b])
                dz *= qn
                count += 1 if dz != 0.0 else 0
            continue
        ea = e[a]
        sa = s[a]
        wa = w[a]
        oa = order[a]
        acc_g = 0.0
        acc_h = 0.0
        m = 0
        for b in range(a + 1, n):
            gb = g[b]
            up = ga > gb  # the upper position a holds the better row
            dz = abs(ga - gb) * (da - disc[b])
            dz *= qn  # 0 for equal grades: the pair then adds exact zeros
            nz = dz != 0.0
            eb = e[b]
            rho = (eb if up else ea) / (ea + eb)
            if damp:
                dz = dz / (0.01 + abs(sa - s[b]))
            lam = sigma * dz * rho
            sum_lambda += 2.0 * lam
            pw = 0.5 * (wa + w[b])
            h = sig2 * dz * rho * (1.0 - rho) * pw
            if grad:
                lam *= pw * (1.0 if up else -1.0)
                acc_g -= lam
                lg[b] += lam
                acc_h += h
                lh[b] += h
            if fill:
                ob = order[b]
                li[m] = oa if up else ob
                lj[m] = ob if up else oa
                lc[m] = h
                m += 1 if nz else 0
        if grad:
            lg[a] += acc_g
            lh[a] += acc_h
        if fill:
            for t in range(m):
                out_i[at + count + t] = li[t]
                out_j[at + count + t] = lj[t]
                out_c[at + count + t] = lc[t]
            count += m
    return count, sum_lambda


@njit(cache=True)
def _query_pass(mode, inp, out, n, qn, kk, lim, at, order, F, I):
    """All pairs of one query whose sorted rows are ``order[:n]``. ``mode`` GRAD adds into
    ``out.grad/out.hess``; LOSS returns the query's utility; COUNT returns the number of pairs
    with nonzero ``|dZ|``; FILL writes them (rows, coupling) to ``out.pair_*`` from offset ``at``;
    GRAD_FILL does both GRAD and FILL. Hessians and couplings are multiplied by
    ``inp.hess_scale`` (1 but for XGBoost's convention, see ``_parity.py``), once per row,
    outside the pair loop. ``qn`` is the query's ``qnorm``, ``kk`` its cutoff, ``lim`` the cutoff
    of upper rows (truncation). ``F`` is float scratch (``_NF`` rows of at least ``n``), ``I``
    int scratch (rows 1 and 2 hold a FILL's pairs of one upper row). The ``|dZ|`` formulas of
    ERR/MAP/MRR sit in the loop on purpose: as a separate function (even inlined) the ERR/MAP
    passes ran 4-6x slower.
    """
    # Unpacking the records costs nothing: numba passes a tuple as its fields.
    scores, row_gain, weights, use_weights, disc = inp.scores, inp.row_gain, inp.weights, inp.use_weights, inp.disc
    metric, sigma, norm, hess_scale = inp.metric, inp.sigma, inp.norm, inp.hess_scale
    out_grad, out_hess, out_i, out_j, out_c = out.grad, out.hess, out.pair_i, out.pair_j, out.pair_c
    li, lj = I[1], I[2]
    g, s, w, P, A, C, S, e, lg, lh, lc = F[0], F[1], F[2], F[3], F[4], F[5], F[6], F[7], F[8], F[9], F[10]
    first, second = _setup(scores, row_gain, weights, use_weights, n, metric, kk, order, g, s, w, P, A, C, S)
    if metric == MRR:
        lim = min(lim, first + 1)  # a swap below the first relevant row leaves RR unchanged
    a_first = A[first] if first < n else 0.0
    grad = mode == GRAD or mode == GRAD_FILL
    fill = mode == FILL or mode == GRAD_FILL
    if mode != COUNT or metric != NDCG:
        _exp_table(s, n, sigma, e)
    if grad:
        lg[:n] = 0.0
        lh[:n] = 0.0
    spread = s[0] != s[n - 1]
    sum_lambda = 0.0
    total = 0.0
    count = 0
    if metric == NDCG and mode != LOSS and (mode == COUNT or e[n - 1] > 1e-280):
        count, sum_lambda = _ndcg_pairs(mode, n, lim, qn, disc, sigma, norm, spread, g, s, w, e, lg, lh,
                                        order, at, out_i, out_j, out_c, li, lj, lc)
    else:
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
                    # Burges sec. 3: the rank-a term, the rows between a and b (their prefix
                    # product changes by T_b / T_a), the rank-b term; rows below b are unchanged.
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
                pw = 0.5 * (w[a] + w[b])
                if mode == LOSS:
                    total += pw * dz * _softplus(-sigma * d)
                    count += 1
                    continue
                h = sig2 * dz * rho * (1.0 - rho) * pw
                if grad:
                    lam *= pw * sg
                    acc_g -= lam
                    lg[b] += lam
                    acc_h += h
                    lh[b] += h
                if fill:
                    hi, lo = (a, b) if sg > 0 else (b, a)
                    out_i[at + count] = order[hi]
                    out_j[at + count] = order[lo]
                    out_c[at + count] = h
                count += 1
            if grad:
                lg[a] += acc_g
                lh[a] += acc_h
    if mode == COUNT:
        return float(count)
    factor = 1.0
    if norm and sum_lambda > 0.0:
        factor = np.log2(1.0 + sum_lambda) / sum_lambda
    hfactor = factor * hess_scale
    if grad:
        for r in range(n):
            out_grad[order[r]] += factor * lg[r]
            out_hess[order[r]] += hfactor * lh[r]
    if fill:
        for t in range(at, at + count):
            out_c[t] *= hfactor
    return total * factor
