"""The per-row and per-query math of the query-level losses, written once for the CPU and the GPU:
QueryRMSE, the softmax cross-entropy of ListNet / QuerySoftMax / XENDCG, XENDCG's noisy gains and
LightGBM's XENDCG terms, LambdaLoss's pair weights, YetiRank's noise and pair weights.

Design note (issue 31, "shared terms").

- What is shared: each formula, as a plain ``@njit`` function of scalars (or of one query's row
  range ``lo:hi``, read in row order) written with ``math.*``. The CPU kernels (``_listwise_kernels``,
  ``_sampled_pairs_kernels``, ``_sampled_pairs_kernels``) call them, and the GPU kernels (``_listwise_cuda``,
  ``_sampled_pairs_cuda``) call the same functions through ``customobj._cuda_runtime.device_function``,
  so both targets run one source and the same float64 operations in the same order (numba compiles
  ``math.exp`` and ``np.exp`` alike on the CPU: the CPU outputs kept their bits through this refactor).
- A function that takes arrays calls other ``@njit`` functions with scalars only: under numba's
  CUDA simulator it runs as Python on the simulator's arrays, which compiled code cannot take (so
  ``row_weight`` is spelled out there).
- The functions called once per pair are ``inline="always"`` (numba inlines them before compiling):
  called as functions they were measurably slower than the inline loop (docs/kernel-notes.md).
- What stays per target: the drivers. The CPU runs a query per ``prange`` iteration and keeps a
  query's intermediate values in small arrays; a GPU thread has no heap, so its drivers run one
  thread per query for the per-query sums and one thread per row for the row terms, recomputing a
  row's intermediate values (its noise draw in O(1) or O(log) from the query's stream) instead of
  storing them. Sorting stays per target too (numpy's stable argsort on the CPU, counting ranks on
  the GPU: the same order, ties by row).

References: CatBoost's ``QueryRMSE`` / ``QuerySoftMax`` / ``YetiRank`` (``error_functions.h``,
``yetirank_helpers.cpp``), Cao et al. (2007, ListNet), Bruch et al. (2019, XE-NDCG; LightGBM's
``rank_xendcg_objective.hpp``), Wang et al. (2018, LambdaLoss, sec. 4-5).

Examples
--------
>>> top, z = log_partition(np.array([0.0, 0.0]), np.ones(1), False, 1.0, 0, 2)
>>> softmax_row(0.0, 1.0, 1.0, 1.0, top, z, 1.0)  # p = 1/2: grad M p - m, hess M p (1 - p)
(-0.5, 0.25)
"""
import math

import numpy as np
from numba import njit

from .._dcg_kernels import position_discount
from ._noise import lcg_next, lcg_skip, lightgbm_uniform, query_stream

#: LambdaLoss's weightings (``LambdaLoss(weighting=...)``: "ndcg1", "ndcg2", "ndcg2++").
NDCG1 = 0
NDCG2 = 1
NDCG2PP = 2
#: CatBoost's constant factor of every YetiRank pair weight ("magicConst = 0.15; // Like in GPU").
YETI_SCALE = 0.15
#: CatBoost's noise denominator ``1.000001 - u`` (keeps ``u / (1 - u)`` finite).
NOISE_ONE = 1.000001


@njit(cache=True, inline="always")
def row_weight(weights, use_w, t):
    """Row ``t``'s weight, 1 without weights (``use_w`` False: ``weights`` is never read)."""
    return weights[t] if use_w else 1.0


# --- QueryRMSE ---------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def weighted_residual(s, y, w):
    """A row's term ``w (y - s)`` of its query's mean residual."""
    return w * (y - s)


@njit(cache=True, inline="always")
def centre_mean(total, big_w):
    """The mean residual ``total / W`` (0 at ``W = 0``)."""
    return total / big_w if big_w > 0.0 else 0.0


@njit(cache=True)
def query_centre(scores, labels, weights, use_w, lo, hi):
    """``(mean residual, W)`` of one query: ``mu = sum w (y - s) / W``, ``W = sum w`` (``mu = 0`` at ``W = 0``)."""
    big_w = 0.0
    total = 0.0
    for t in range(lo, hi):
        w = weights[t] if use_w else 1.0
        big_w += w
        total += weighted_residual(scores[t], labels[t], w)
    return centre_mean(total, big_w), big_w


@njit(cache=True)
def centred_row(s, y, w, mean, big_w):
    """QueryRMSE's ``(g, h)`` of one row: ``w (s - y + mu)`` and the exact diagonal ``w (1 - w / W)``."""
    return w * (s - y + mean), w * max(1.0 - w / big_w, 0.0)


# --- softmax cross-entropy ---------------------------------------------------------------------------
@njit(cache=True, inline="always")
def softmax_logit(s, v, beta):
    """A row's ``beta s``, ``-inf`` for a row of weight 0 (it leaves the softmax)."""
    return beta * s if v > 0.0 else -math.inf


@njit(cache=True, inline="always")
def softmax_term(s, v, beta, top):
    """A row's ``v exp(beta s - top)``, 0 for a row of weight 0."""
    return v * math.exp(beta * s - top) if v > 0.0 else 0.0


@njit(cache=True)
def log_partition(scores, vw, use_vw, beta, lo, hi):
    """``(top, z)`` with ``log sum_j v_j exp(beta s_j) = top + log z``, without overflow (rows of
    weight 0 leave the softmax). A row of weight 0 adds ``+0.0`` to ``z``, which changes no sum: ``z``
    starts at ``+0.0`` and adds terms ``>= +0.0``, so it is never ``-0.0``."""
    top = -math.inf
    for t in range(lo, hi):
        logit = softmax_logit(scores[t], vw[t] if use_vw else 1.0, beta)
        if logit > top:
            top = logit
    z = 0.0
    for t in range(lo, hi):
        z += softmax_term(scores[t], vw[t] if use_vw else 1.0, beta, top)
    return top, z


#: float64's normal range: a weight ratio inside it is exact to one rounding (:func:`log_ratio`).
TINY_NORMAL = 2.2250738585072014e-308
HUGE = 1.7976931348623157e308


@njit(cache=True, inline="always")
def log_ratio(sj, sk, vj, vk, use_vw, beta):
    """``log(v_j e^{beta s_j}) - log(v_k e^{beta s_k})`` as a difference of scores plus the log of the
    weights' ratio: never the difference of two large logits, which cancels (scores of 1e36, or
    weights 1e-300 and 1e50, leave nothing of the smaller term). ``log(v_j / v_k)`` rounds once
    (error ~1e-16 absolute), where ``log v_j - log v_k`` carries the rounding of each log (~57
    ulp of 1 at weights 1e25: the loss of a query whose top row has nearly all the mass lost ~1e-14
    of itself); a ratio outside the normal range (weights 1e-300 and 1e50) falls back to the
    difference of logs, whose size (> 708) then dwarfs that error."""
    d = beta * (sj - sk)
    if use_vw:
        ratio = vj / vk
        if TINY_NORMAL <= ratio <= HUGE:
            d += math.log(ratio)
        else:
            d += math.log(vj) - math.log(vk)
    return d


@njit(cache=True, inline="always")
def exp_log_ratio(sj, sk, vj, vk, use_vw, beta):
    """``e^{r}`` of :func:`log_ratio`'s ``r <= 0`` (``k`` the query's largest logit): with a normal
    weight ratio ``(v_j / v_k) e^{beta (s_j - s_k)}``, two roundings, where ``e^{r}`` takes the
    rounding of ``r`` itself (~1e-14 of the result at ``r = -76``, weights 1e-25 and 1e8) into its
    relative error. ``e^{beta (s_j - s_k)} <= v_k / v_j`` is finite there."""
    if use_vw:
        ratio = vj / vk
        if TINY_NORMAL <= ratio <= HUGE:
            return ratio * math.exp(beta * (sj - sk))
    return math.exp(log_ratio(sj, sk, vj, vk, use_vw, beta))


@njit(cache=True, inline="always")
def softmax_ce_row(m, log_z, r, is_top):
    """A row's term of its query's ``-sum_i m_i log p_i`` around the largest logit ``k``: ``m (log z - r)``,
    ``r = log(p_i / p_k)`` (clipped at 0), ``m log z`` for ``k`` itself; 0 without mass."""
    if m > 0.0:
        return m * (log_z if is_top else log_z - min(r, 0.0))
    return 0.0


@njit(cache=True, inline="always")
def centred_loss(s, y, w, mean):
    """QueryRMSE's loss of one row: ``w (y - s - mu)^2 / 2``."""
    r = y - s - mean
    return 0.5 * w * r * r


@njit(cache=True)
def softmax_share(s, v, beta, top, z):
    """``(p, 1 - p)`` of one row: ``p = v exp(beta s - top) / z``; ``1 - p`` as ``(z - e) / z``
    (no cancellation when ``p`` is near 1)."""
    e = softmax_term(s, v, beta, top)
    return e / z, (z - e) / z


@njit(cache=True)
def softmax_row(s, v, m, beta, top, z, big_m):
    """``(g, h)`` of one row: ``beta (M p - m)`` and ``beta^2 M p (1 - p)``."""
    p, rest = softmax_share(s, v, beta, top, z)
    return beta * (big_m * p - m), beta * beta * big_m * p * max(rest, 0.0)


# --- XENDCG (Bruch et al. 2019; LightGBM's rank_xendcg_objective.hpp) --------------------------------
@njit(cache=True)
def xendcg_stream(seed, q, rnd, n):
    """LightGBM's generator of query ``q`` (seeded ``seed + q``) at the start of round ``rnd``
    (``rnd n`` draws taken); the row at position ``a`` reads ``lcg_skip(that, a + 1)``."""
    return lcg_skip(np.uint64((seed + q) & 0xFFFFFFFF), rnd * n)


@njit(cache=True)
def xendcg_phi(label, x):
    """``phi = 2^y - gamma`` with ``gamma`` LightGBM's ``NextFloat`` from the advanced state ``x``."""
    return math.exp2(label) - lightgbm_uniform(x)


@njit(cache=True, inline="always")
def xendcg_share(qweight, phi, total):
    """A row's target mass ``w_q phi / sum phi``."""
    return qweight * phi / total


@njit(cache=True)
def xendcg_query_mass(labels, lo, hi, q, rnd, seed, qweight, out_mass):
    """XENDCG's target masses ``w_q phi_i / sum_j phi_j`` of one query of two rows or more into
    ``out_mass[lo:hi]`` (0 for a smaller query)."""
    if hi - lo < 2:
        for t in range(lo, hi):
            out_mass[t] = 0.0
        return
    x = xendcg_stream(seed, q, rnd, hi - lo)
    total = 0.0
    for t in range(lo, hi):
        x = lcg_next(x)
        phi = xendcg_phi(labels[t], x)
        out_mass[t] = phi
        total += phi
    for t in range(lo, hi):
        out_mass[t] = xendcg_share(qweight, out_mass[t], total)



@njit(cache=True)
def xendcg_first(phi, inv, rho, rest):
    """LightGBM's first-order term ``rho - phi / sum phi`` and its ``param = term / (1 - rho)``
    (0 where ``1 - rho`` is 0, where LightGBM divides by zero)."""
    term = -phi * inv + rho
    return term, (term / rest if rest > 0.0 else 0.0)


@njit(cache=True)
def xendcg_second(rho, rest, sum_l1, param1):
    """LightGBM's second-order term ``rho (sum param1 - param1_i)`` and its ``param``."""
    term = rho * (sum_l1 - param1)
    return term, (term / rest if rest > 0.0 else 0.0)


@njit(cache=True)
def xendcg_row(w, lam, rho, rest, sum_l2, param2):
    """``(g, h)`` of one row: ``w (lam + rho (sum param2 - param2_i))`` and ``w rho (1 - rho)``."""
    return w * (lam + rho * (sum_l2 - param2)), w * rho * rest


# --- LambdaLoss (Wang et al. 2018, sec. 4-5) ----------------------------------------------------------
@njit(cache=True, inline="always")
def lambdaloss_weight(mode, gain_i, gain_j, inv_idcg, pos_i, pos_j, mu):
    """The weight of a label pair ``y_i > y_j`` at 0-based positions ``pos_i``, ``pos_j`` (see
    ``_sampled_pairs_kernels``); NaN for an unknown ``mode`` (the drivers refuse one before their loops)."""
    if mode == NDCG1:
        return gain_i * position_discount(pos_i) * inv_idcg
    gap = abs(pos_i - pos_j)
    delta = position_discount(gap - 1) - position_discount(gap)
    g = abs(gain_i - gain_j) * inv_idcg
    if mode == NDCG2:
        return g * delta
    if mode == NDCG2PP:
        return g * (abs(position_discount(pos_i) - position_discount(pos_j)) + mu * delta)
    return math.nan


# --- YetiRank (Gulin et al. 2011; CatBoost's yetirank_helpers.cpp) ------------------------------------
@njit(cache=True, inline="always")
def yetirank_key(score, u):
    """A row's sort key in one sampled permutation: minus its score with logistic noise from the
    uniform ``u``, ``-(s + log(u / (1.000001 - u)))`` (ascending = best first)."""
    return -(score + math.log(u / (NOISE_ONE - u)))


@njit(cache=True, inline="always")
def yetirank_pair(y_prev, y_next):
    """``(swap, |y_a - y_b|)`` of the neighbours at positions ``r - 1``, ``r``: ``swap`` when the
    lower row has the higher label (the better labelled row comes first)."""
    diff = y_prev - y_next
    return diff < 0.0, abs(diff)


@njit(cache=True, inline="always")
def yetirank_weight(qweight, gap, dec, n_perm):
    """The pair weight ``0.15 w_q |y_a - y_b| decay^(r - 1) / permutations`` (``dec`` the running
    product ``decay^(r - 1)``)."""
    return YETI_SCALE * qweight * gap * dec / n_perm


@njit(cache=True)
def yetirank_query(ptr, q, seed, rnd):
    """``(lo, n, state)``: query ``q``'s first row, its rows and its SplitMix64 stream of round ``rnd``
    (a query of fewer than two rows has no pairs)."""
    lo = ptr[q]
    return lo, ptr[q + 1] - lo, query_stream(seed, rnd, q)


@njit(cache=True)
def yetirank_decays(decay, n):
    """``out[r - 1] = decay^(r - 1)`` for the positions ``r = 1 .. n``, as the running product the
    pair loop takes (``dec *= decay``, bit for bit), for the GPU's pairs read out of order."""
    out = np.empty(max(n, 1))
    dec = 1.0
    for r in range(out.size):
        out[r] = dec
        dec *= decay
    return out
