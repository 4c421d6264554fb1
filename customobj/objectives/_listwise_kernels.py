"""Numba kernels of the per-query dense losses: softmax cross-entropy (ListNet, QuerySoftMax,
XENDCG) and the query-centred squared error (QueryRMSE), with their all-pairs couplings.

Softmax cross-entropy of one query, with target masses ``m_i >= 0`` (``M = sum m``), weights
``v_i >= 0`` inside the softmax and scale ``beta``:

.. math:: p_i = \\frac{v_i e^{\\beta s_i}}{\\sum_j v_j e^{\\beta s_j}}, \\quad
          L = -\\sum_i m_i \\log p_i, \\quad g_i = \\beta (M p_i - m_i), \\quad
          H = \\beta^2 M (\\mathrm{diag}(p) - p p^T)

and ``diag(p) - p p^T = sum_{i<j} p_i p_j (e_i - e_j)(e_i - e_j)^T`` (its rows sum to zero), so
the exact hessian is the diagonal ``beta^2 M p_i (1 - p_i)`` plus the couplings
``beta^2 M p_i p_j`` of every pair. The query-centred squared error is the same shape:
``H = diag(w) - w w^T / W = sum_{i<j} (w_i w_j / W)(e_i - e_j)(e_i - e_j)^T``. Queries run in
parallel (their rows are disjoint); sums over queries are serial, in query order (deterministic).
"""
import numpy as np
from numba import njit, prange

from ._listwise_terms import (centred_loss, centred_row, exp_log_ratio, log_partition, log_ratio, query_centre,
                              row_weight, softmax_ce_row, softmax_row, softmax_share, xendcg_first, xendcg_phi,
                              xendcg_query_mass, xendcg_row, xendcg_second, xendcg_stream)
from ._noise import lcg_next

#: LightGBM's ``kEpsilon``: the floor of XENDCG's ``sum phi`` in its gradient loop.
LIGHTGBM_EPSILON = 1e-15


@njit(cache=True)
def range_sum(values, lo, hi):
    """``values[lo:hi].sum()`` accumulated in float64, in index order (a query's target mass here, a
    node's coupling sum in :mod:`customobj.ole.pairhist`)."""
    total = 0.0
    for t in range(lo, hi):
        total += values[t]
    return total


@njit(cache=True, parallel=True)
def softmax_probs(scores, ptr, mass, vw, use_vw, beta, out_p, out_scale):
    """``p`` of every row of the queries that contribute (two rows or more, ``M > 0``), and the
    query's hessian scale ``beta^2 M`` (0 for the others)."""
    for q in prange(ptr.size - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        big_m = range_sum(mass, lo, hi)
        out_scale[q] = 0.0
        if hi - lo < 2 or big_m <= 0.0:
            continue
        top, z = log_partition(scores, vw, use_vw, beta, lo, hi)
        for t in range(lo, hi):
            out_p[t] = softmax_share(scores[t], row_weight(vw, use_vw, t), beta, top, z)[0]
        out_scale[q] = beta * beta * big_m


@njit(cache=True, parallel=True)
def softmax_ce_grad_hess(scores, ptr, mass, vw, use_vw, beta, out_grad, out_hess):
    """Adds ``beta (M p_i - m_i)`` and ``beta^2 M p_i (1 - p_i)``; one-row queries and queries with
    ``M = 0`` add nothing (their loss does not depend on the scores)."""
    for q in prange(ptr.size - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        big_m = range_sum(mass, lo, hi)
        if hi - lo < 2 or big_m <= 0.0:
            continue
        top, z = log_partition(scores, vw, use_vw, beta, lo, hi)
        for t in range(lo, hi):
            g, h = softmax_row(scores[t], row_weight(vw, use_vw, t), mass[t], beta, top, z, big_m)
            out_grad[t] += g
            out_hess[t] += h


@njit(cache=True)
def _query_ce_loss(scores, mass, vw, use_vw, beta, lo, hi):
    """One query's ``-sum_i m_i log p_i`` by log-sum-exp around its largest logit ``k``:
    ``-log p_t = -r_t + log1p(sum_{j != k} e^{r_j})`` with ``r_j = log(p_j / p_k) <= 0``, a sum
    of two non-negative terms (no cancellation; ``log1p`` keeps a tiny rest). The GPU's per-query
    cost (``_listwise_loss_cuda.softmax_ce_loss_queries``) is this walk, its sums in row order."""
    k = -1
    for j in range(lo, hi):
        if row_weight(vw, use_vw, j) > 0.0 and (k < 0 or log_ratio(scores[j], scores[k], row_weight(vw, use_vw, j),
                                                                    row_weight(vw, use_vw, k), use_vw, beta) > 0.0):
            k = j
    if k < 0:  # no row in the softmax; callers give the rows of weight 0 no mass either
        return 0.0
    vk = row_weight(vw, use_vw, k)
    rest = 0.0
    for j in range(lo, hi):
        if j != k and row_weight(vw, use_vw, j) > 0.0:
            rest += exp_log_ratio(scores[j], scores[k], row_weight(vw, use_vw, j), vk, use_vw, beta)
    log_z = np.log1p(rest)
    total = 0.0
    for t in range(lo, hi):
        if mass[t] > 0.0:
            r = log_ratio(scores[t], scores[k], row_weight(vw, use_vw, t), vk, use_vw, beta) if t != k else 0.0
            total += softmax_ce_row(mass[t], log_z, r, t == k)
    return total


@njit(cache=True, parallel=True)
def softmax_ce_loss(scores, ptr, mass, vw, use_vw, beta):
    """``sum_q -sum_i m_i log p_i`` (terms with ``m_i = 0`` are 0, also where ``p_i = 0``)."""
    nq = ptr.size - 1
    per_query = np.zeros(nq)
    for q in prange(nq):
        lo = ptr[q]
        hi = ptr[q + 1]
        if hi - lo < 2 or range_sum(mass, lo, hi) <= 0.0:
            continue
        per_query[q] = _query_ce_loss(scores, mass, vw, use_vw, beta, lo, hi)
    total = 0.0
    for q in range(nq):
        total += per_query[q]
    return total


@njit(cache=True, parallel=True)
def dense_pair_fill(ptr, factor, qscale, offsets, out_i, out_j, out_c):
    """Every pair ``i < j`` of each query with ``qscale[q] > 0``: ``c = qscale[q] f_i f_j``, written
    from ``offsets[q]`` (``n (n - 1) / 2`` entries per such query)."""
    for q in prange(ptr.size - 1):
        if qscale[q] <= 0.0:
            continue
        lo = ptr[q]
        hi = ptr[q + 1]
        k = offsets[q]
        for a in range(lo, hi):
            for b in range(a + 1, hi):
                out_i[k] = a
                out_j[k] = b
                out_c[k] = qscale[q] * factor[a] * factor[b]
                k += 1


@njit(cache=True, parallel=True)
def query_rmse_grad_hess(scores, labels, ptr, weights, use_w, out_grad, out_hess):
    """Adds ``w_i (s_i - y_i + mean)`` and the exact diagonal ``w_i (1 - w_i / W)``."""
    for q in prange(ptr.size - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        mean, big_w = query_centre(scores, labels, weights, use_w, lo, hi)
        if big_w <= 0.0:
            continue
        for t in range(lo, hi):
            g, h = centred_row(scores[t], labels[t], row_weight(weights, use_w, t), mean, big_w)
            out_grad[t] += g
            out_hess[t] += h


@njit(cache=True, parallel=True)
def query_rmse_loss(scores, labels, ptr, weights, use_w):
    """``sum_q 1/2 sum_i w_i (y_i - s_i - mean_q)^2``."""
    nq = ptr.size - 1
    per_query = np.zeros(nq)
    for q in prange(nq):
        lo = ptr[q]
        hi = ptr[q + 1]
        mean, big_w = query_centre(scores, labels, weights, use_w, lo, hi)
        total = 0.0
        for t in range(lo, hi):
            total += centred_loss(scores[t], labels[t], row_weight(weights, use_w, t), mean)
        per_query[q] = total
    total = 0.0
    for q in range(nq):
        total += per_query[q]
    return total


# --- XENDCG (Bruch et al. 2019; LightGBM's rank_xendcg_objective.hpp) ----------------------------------
@njit(cache=True, parallel=True)
def xendcg_mass(labels, ptr, qweight, rnd, seed, out_mass):
    """Target masses ``w_q phi_i / sum_j phi_j`` of every query with two rows or more (else 0)."""
    for q in prange(ptr.size - 1):
        xendcg_query_mass(labels, ptr[q], ptr[q + 1], q, rnd, seed, qweight[q], out_mass)


@njit(cache=True, parallel=True)
def xendcg_lightgbm_grad_hess(scores, labels, ptr, rnd, seed, weights, use_w, out_grad, out_hess):
    """LightGBM's ``rank_xendcg`` gradients: the first-order ``rho_i - phi_i / sum phi`` plus its
    second- and third-order terms, ``hess = rho (1 - rho)``, both times the row weight. Where
    ``1 - rho_i`` is 0 (LightGBM divides by it and gets inf) the term is left out."""
    for q in prange(ptr.size - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        if hi - lo < 2:
            continue
        phi = np.empty(hi - lo)
        x = xendcg_stream(seed, q, rnd, hi - lo)
        total = 0.0
        for a in range(hi - lo):
            x = lcg_next(x)
            phi[a] = xendcg_phi(labels[lo + a], x)
            total += phi[a]
        inv = 1.0 / max(total, LIGHTGBM_EPSILON)
        top, z = log_partition(scores, weights, False, 1.0, lo, hi)
        rho = np.empty(hi - lo)
        rest = np.empty(hi - lo)
        for a in range(hi - lo):
            rho[a], rest[a] = softmax_share(scores[lo + a], 1.0, 1.0, top, z)
        lam = np.empty(hi - lo)
        params = np.empty(hi - lo)
        sum_l1 = 0.0
        for a in range(hi - lo):
            lam[a], params[a] = xendcg_first(phi[a], inv, rho[a], rest[a])
            sum_l1 += params[a]
        sum_l2 = 0.0
        for a in range(hi - lo):
            term, params[a] = xendcg_second(rho[a], rest[a], sum_l1, params[a])
            lam[a] += term
            sum_l2 += params[a]
        for a in range(hi - lo):
            g, h = xendcg_row(row_weight(weights, use_w, lo + a), lam[a], rho[a], rest[a], sum_l2, params[a])
            out_grad[lo + a] += g
            out_hess[lo + a] += h
