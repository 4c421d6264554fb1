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

from ._noise import lcg_next, lcg_skip, lightgbm_uniform

#: LightGBM's ``kEpsilon``: the floor of XENDCG's ``sum phi`` in its gradient loop.
LIGHTGBM_EPSILON = 1e-15


@njit(cache=True, inline="always")
def _v(vw, use_vw, t):
    return vw[t] if use_vw else 1.0


@njit(cache=True)
def _log_partition(scores, vw, use_vw, beta, lo, hi):
    """``(top, z)``: ``log sum_j v_j exp(beta s_j) = top + log z`` without overflow."""
    top = -np.inf
    for t in range(lo, hi):
        if _v(vw, use_vw, t) > 0.0 and beta * scores[t] > top:
            top = beta * scores[t]
    z = 0.0
    for t in range(lo, hi):
        v = _v(vw, use_vw, t)
        if v > 0.0:
            z += v * np.exp(beta * scores[t] - top)
    return top, z


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
        top, z = _log_partition(scores, vw, use_vw, beta, lo, hi)
        for t in range(lo, hi):
            v = _v(vw, use_vw, t)
            out_p[t] = v * np.exp(beta * scores[t] - top) / z if v > 0.0 else 0.0
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
        top, z = _log_partition(scores, vw, use_vw, beta, lo, hi)
        for t in range(lo, hi):
            v = _v(vw, use_vw, t)
            e = v * np.exp(beta * scores[t] - top) if v > 0.0 else 0.0
            p = e / z
            rest = (z - e) / z  # 1 - p without the cancellation when p is near 1
            out_grad[t] += beta * (big_m * p - mass[t])
            out_hess[t] += beta * beta * big_m * p * max(rest, 0.0)


@njit(cache=True, inline="always")
def _log_ratio(scores, vw, use_vw, beta, j, k):
    """``log(v_j e^{beta s_j}) - log(v_k e^{beta s_k})`` as a difference of scores plus a difference
    of log weights: never the difference of two large logits, which cancels (scores of 1e36, or
    weights 1e-300 and 1e50, leave nothing of the smaller term)."""
    d = beta * (scores[j] - scores[k])
    if use_vw:
        d += np.log(vw[j]) - np.log(vw[k])
    return d


@njit(cache=True)
def _query_ce_loss(scores, mass, vw, use_vw, beta, lo, hi):
    """One query's ``-sum_i m_i log p_i`` by log-sum-exp around its largest logit ``k``:
    ``-log p_t = -r_t + log1p(sum_{j != k} e^{r_j})`` with ``r_j = log(p_j / p_k) <= 0``, a sum
    of two non-negative terms (no cancellation; ``log1p`` keeps a tiny rest)."""
    k = -1
    for j in range(lo, hi):
        if _v(vw, use_vw, j) > 0.0 and (k < 0 or _log_ratio(scores, vw, use_vw, beta, j, k) > 0.0):
            k = j
    if k < 0:  # no row in the softmax; callers give the rows of weight 0 no mass either
        return 0.0
    rest = 0.0
    for j in range(lo, hi):
        if j != k and _v(vw, use_vw, j) > 0.0:
            rest += np.exp(_log_ratio(scores, vw, use_vw, beta, j, k))
    log_z = np.log1p(rest)
    total = 0.0
    for t in range(lo, hi):
        if mass[t] > 0.0:
            total += mass[t] * (log_z - min(_log_ratio(scores, vw, use_vw, beta, t, k), 0.0) if t != k else log_z)
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


@njit(cache=True)
def _centre(scores, labels, weights, use_w, lo, hi):
    """``(mean residual, W)`` of one query: ``sum w (y - s) / W``."""
    big_w = 0.0
    total = 0.0
    for t in range(lo, hi):
        w = weights[t] if use_w else 1.0
        big_w += w
        total += w * (labels[t] - scores[t])
    return (total / big_w if big_w > 0.0 else 0.0), big_w


@njit(cache=True, parallel=True)
def query_rmse_grad_hess(scores, labels, ptr, weights, use_w, out_grad, out_hess):
    """Adds ``w_i (s_i - y_i + mean)`` and the exact diagonal ``w_i (1 - w_i / W)``."""
    for q in prange(ptr.size - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        mean, big_w = _centre(scores, labels, weights, use_w, lo, hi)
        if big_w <= 0.0:
            continue
        for t in range(lo, hi):
            w = weights[t] if use_w else 1.0
            out_grad[t] += w * (scores[t] - labels[t] + mean)
            out_hess[t] += w * max(1.0 - w / big_w, 0.0)


@njit(cache=True, parallel=True)
def query_rmse_loss(scores, labels, ptr, weights, use_w):
    """``sum_q 1/2 sum_i w_i (y_i - s_i - mean_q)^2``."""
    nq = ptr.size - 1
    per_query = np.zeros(nq)
    for q in prange(nq):
        lo = ptr[q]
        hi = ptr[q + 1]
        mean, big_w = _centre(scores, labels, weights, use_w, lo, hi)
        total = 0.0
        for t in range(lo, hi):
            w = weights[t] if use_w else 1.0
            r = labels[t] - scores[t] - mean
            total += 0.5 * w * r * r
        per_query[q] = total
    total = 0.0
    for q in range(nq):
        total += per_query[q]
    return total


# --- XENDCG (Bruch et al. 2019; LightGBM's rank_xendcg_objective.hpp) ----------------------------------
@njit(cache=True)
def _xendcg_phi(labels, ptr, q, rnd, seed, out_phi, base):
    """``phi_i = 2^y_i - gamma_i`` of query ``q`` in round ``rnd`` into ``out_phi[base:]``, and their
    sum; ``gamma`` from LightGBM's per-query generator (seed ``seed + q``, ``rnd n`` draws taken)."""
    lo = ptr[q]
    hi = ptr[q + 1]
    x = lcg_skip(np.uint64((seed + q) & 0xFFFFFFFF), rnd * (hi - lo))
    total = 0.0
    for t in range(lo, hi):
        x = lcg_next(x)
        phi = np.exp2(labels[t]) - lightgbm_uniform(x)
        out_phi[base + t - lo] = phi
        total += phi
    return total


@njit(cache=True, parallel=True)
def xendcg_mass(labels, ptr, qweight, rnd, seed, out_mass):
    """Target masses ``w_q phi_i / sum_j phi_j`` of every query with two rows or more (else 0)."""
    for q in prange(ptr.size - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        if hi - lo < 2:
            for t in range(lo, hi):
                out_mass[t] = 0.0
            continue
        total = _xendcg_phi(labels, ptr, q, rnd, seed, out_mass, lo)
        for t in range(lo, hi):
            out_mass[t] = qweight[q] * out_mass[t] / total


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
        params = np.empty(hi - lo)
        phi = np.empty(hi - lo)
        total = _xendcg_phi(labels, ptr, q, rnd, seed, phi, 0)
        inv = 1.0 / max(total, LIGHTGBM_EPSILON)
        top, z = _log_partition(scores, weights, False, 1.0, lo, hi)
        rho = np.empty(hi - lo)
        rest = np.empty(hi - lo)
        for t in range(lo, hi):
            e = np.exp(scores[t] - top)
            rho[t - lo] = e / z
            rest[t - lo] = (z - e) / z
        lam = np.empty(hi - lo)
        sum_l1 = 0.0
        for a in range(hi - lo):
            term = -phi[a] * inv + rho[a]
            lam[a] = term
            params[a] = term / rest[a] if rest[a] > 0.0 else 0.0
            sum_l1 += params[a]
        sum_l2 = 0.0
        for a in range(hi - lo):
            term = rho[a] * (sum_l1 - params[a])
            lam[a] += term
            params[a] = term / rest[a] if rest[a] > 0.0 else 0.0
            sum_l2 += params[a]
        for a in range(hi - lo):
            w = weights[lo + a] if use_w else 1.0
            out_grad[lo + a] += w * (lam[a] + rho[a] * (sum_l2 - params[a]))
            out_hess[lo + a] += w * rho[a] * rest[a]
