"""Numba kernels of position debiasing (Unbiased LambdaMART, Hu et al. WWW 2019, sec. 4-5).

Every wrapped pairwise loss is reduced to one list of pair terms: row ``i`` (clicked) should rank
above row ``j`` (not clicked), with the pair's lambda ``lam`` (``grad_i -= lam``, ``grad_j += lam``),
its hessian coupling ``h`` (added to both rows' hessians), its loss ``cost`` and the cost the
propensity estimate sums (``est``: ``cost`` itself, or the swapped pair's loss, XGBoost's choice). All four are *raw*:
before pair weights, before debiasing, before LambdaRank's per-query normalisation. ``debias_pairs``
then divides each tracked pair by ``t+[pos_i] t-[pos_j]``, applies the normalisation to the
debiased lambdas (as XGBoost does), the pair weights, and adds the sums of eq. 30-31 of the paper
into ``li`` / ``lj``.

The per-pair and per-query scalar math (``lambdarank_raw_lam``, ``undo_norm``, ``lambdarank_cost_est``,
``loss_terms``, ``debias_factor``, ``norm_factor``, ``pair_weight``) is written once with ``math.*``: these CPU
loops and the GPU kernels of ``_cuda_unbiased`` (through ``_cuda_runtime.device_function``) call it alike.

The kernels take records (``NamedTuple`` of arrays and scalars, which numba passes as their fields):
the pairs' rows, their raw terms, their weights, the propensities and the outputs each travel as
one argument, so no kernel has more than a dozen.
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..objectives._pair_terms import pair_terms

#: Propensities below this are treated as "do not debias" (XGBoost's ``Eps64()``): dividing by
#: them would blow a pair up beyond any meaningful weight.
TINY_PROPENSITY = 1e-16
#: Exponents beyond this are clipped when a sigmoid's reciprocal is rebuilt from a coupling.
_EXP_CAP = 700.0


class PairRows(NamedTuple):
    """The pairs: row ``i`` (clicked, should rank higher), row ``j``, and the query of each pair."""

    i: np.ndarray
    j: np.ndarray
    qid: np.ndarray


class RawTerms(NamedTuple):
    """Each pair's raw terms (before pair weights, debiasing and normalisation), one entry per pair."""

    lam: np.ndarray  # grad_i -= lam, grad_j += lam
    hess: np.ndarray  # hessian coupling, added to both rows
    cost: np.ndarray  # the pair's loss
    est: np.ndarray  # the cost the propensity estimate sums


class PairWeights(NamedTuple):
    """How a pair is weighed: ``(w_i + w_j) / 2`` of the row weights (when ``use_w``), times its own
    weight (when ``use_pw``)."""

    rows: np.ndarray
    use_w: bool
    pairs: np.ndarray
    use_pw: bool


class Propensities(NamedTuple):
    """Each row's display position (0-based) and the propensities ``t+`` / ``t-`` per tracked position."""

    pos: np.ndarray
    tplus: np.ndarray
    tminus: np.ndarray


class DebiasOutputs(NamedTuple):
    """Where ``debias_pairs`` adds: gradients, hessians, each pair's coupling, the sums of eq. 30-31."""

    grad: np.ndarray
    hess: np.ndarray
    c: np.ndarray
    li: np.ndarray
    lj: np.ndarray


def raw_terms(m: int) -> RawTerms:
    """Uninitialised raw terms of ``m`` pairs, for the ``*_pair_terms`` kernels to fill."""
    return RawTerms(np.empty(m), np.empty(m), np.empty(m), np.empty(m))


@njit(cache=True)
def _ratio_softplus(x):
    """``(1 + e^x) softplus(-x)``: a pair's loss over its ``rho = 1 / (1 + e^x)``, without overflow."""
    if x <= 0.0:
        return (1.0 + math.exp(x)) * math.log1p(math.exp(-x)) if x > -_EXP_CAP else -x
    t = math.exp(-x)
    if t == 0.0:
        return 1.0
    return (1.0 + t) * math.log1p(t) / t


@njit(cache=True)
def lambdarank_raw_lam(c, x, hess_scale, sigma):
    """``f sigma |dZ| rho`` of a LambdaRank pair from its coupling ``c`` at ``x = sigma (s_i - s_j)``."""
    return c * (1.0 + math.exp(min(-x, _EXP_CAP))) / (hess_scale * sigma)


@njit(cache=True)
def undo_norm(norm, total):
    """The factor ``f = log2(1 + S) / S`` a query's lambdas carry, from ``T = f S`` (their sum; 1 without ``norm``)."""
    if norm and total > 0.0:
        return total / (math.exp2(total) - 1.0)
    return 1.0


@njit(cache=True)
def lambdarank_cost_est(lam, x, sigma, swapped):
    """``(cost, est)`` of a LambdaRank pair of raw lambda ``lam`` (see :func:`lambdarank_pair_terms`)."""
    if lam == 0.0:
        return 0.0, 0.0
    cost = lam * _ratio_softplus(x) / sigma
    if not swapped:
        return cost, cost
    dz = lam * (1.0 + math.exp(min(x, _EXP_CAP))) / sigma  # |dZ| = lam / (sigma rho)
    return cost, dz * (x + math.log1p(math.exp(-x)) if x > 0.0 else math.log1p(math.exp(x)))


@njit(cache=True)
def loss_terms(kind, d, theta, scale, swapped):
    """``(lam, hess, cost, est)`` of a pair of a loss ``scale phi(d; theta)`` at ``d = s_i - s_j``."""
    phi, dphi, cc = pair_terms(kind, d, theta)
    cost = scale * phi
    est = scale * pair_terms(kind, -d, theta)[0] if swapped else cost
    return -scale * dphi, scale * cc, cost, est


@njit(cache=True)
def debias_factor(a, b, tplus, tminus):
    """``(tracked, tp, tm, u)`` of a pair at positions ``a`` (clicked row), ``b``: whether both are
    tracked, their propensities and the debiasing factor ``u = 1 / (tp tm)`` (1 when not debiased)."""
    k = tplus.size
    if 0 <= a < k and 0 <= b < k:
        tp = tplus[a]
        tm = tminus[b]
        if tp >= TINY_PROPENSITY and tm >= TINY_PROPENSITY:
            return True, tp, tm, 1.0 / (tp * tm)
        return True, tp, tm, 1.0
    return False, 1.0, 1.0, 1.0


@njit(cache=True)
def norm_factor(norm, total):
    """A query's normalisation ``log2(1 + S') / S'`` of its debiased lambdas' sum ``S'`` (1 without ``norm``)."""
    if norm and total > 0.0:
        return math.log2(1.0 + total) / total
    return 1.0


@njit(cache=True)
def pair_weight(wt, weights, i, j, p):
    """``wt`` times the pair's weight: ``(w_i + w_j) / 2`` (``use_w``), its own weight (``use_pw``)."""
    if weights.use_w:
        wt *= 0.5 * weights.rows[i] + 0.5 * weights.rows[j]
    if weights.use_pw:
        wt *= weights.pairs[p]
    return wt


@njit(cache=True)
def lambdarank_pair_terms(scores, rows, c, n_queries, sigma, hess_scale, norm, swapped, out):
    """Raw pair terms of LambdaRank (into the :class:`RawTerms` ``out``) from its unweighted
    couplings ``c`` (one entry per pair of :class:`PairRows` ``rows``).

    ``c = f hess_scale sigma^2 |dZ| rho (1 - rho)`` with ``rho = 1 / (1 + exp(sigma d))``,
    ``d = s_i - s_j`` and ``f = log2(1 + S) / S`` the query's normalisation (1 without ``norm``),
    ``S = sum 2 sigma |dZ| rho``. So ``f sigma |dZ| rho = c (1 + e^{-sigma d}) / (hess_scale sigma)``,
    ``T = f S = log2(1 + S)`` per query gives ``S = 2^T - 1`` and ``f``; dividing ``f`` out leaves
    the raw terms. ``cost = |dZ| softplus(-sigma d)`` (Burges' pair utility); ``est`` is the
    swapped pair's ``|dZ| softplus(sigma d)`` when ``swapped`` (XGBoost's ``LambdaGrad`` writes
    ``log(1 / (1 - sigmoid(s_hi - s_lo)))``), else ``cost``. A coupling that underflowed to 0
    (``|sigma d| > ~700``) gives a zero pair: the loss no longer sees it either.
    """
    pi, pj, qid = rows.i, rows.j, rows.qid
    out_lam, out_h, out_cost, out_est = out.lam, out.hess, out.cost, out.est
    m = pi.size
    total = np.zeros(n_queries)
    for p in range(m):
        if c[p] == 0.0:
            out_lam[p] = 0.0
            continue
        out_lam[p] = lambdarank_raw_lam(c[p], sigma * (scores[pi[p]] - scores[pj[p]]), hess_scale, sigma)
        total[qid[p]] += 2.0 * out_lam[p]
    f = np.ones(n_queries)
    for q in range(n_queries):
        f[q] = undo_norm(norm, total[q])
    for p in range(m):
        fq = f[qid[p]]
        lam = out_lam[p] / fq
        out_lam[p] = lam
        out_h[p] = c[p] / fq
        out_cost[p], out_est[p] = lambdarank_cost_est(lam, sigma * (scores[pi[p]] - scores[pj[p]]), sigma, swapped)


@njit(cache=True)
def loss_pair_terms(scores, pi, pj, theta, kind, scale, swapped, out):
    """Raw pair terms (into the :class:`RawTerms` ``out``) of a pairwise loss ``scale phi(s_i - s_j;
    theta)`` (``_pairwise_kernels``); ``est`` is the swapped pair's ``scale phi(s_j - s_i; theta)``
    when ``swapped``, else ``cost``."""
    for p in range(pi.size):
        out.lam[p], out.hess[p], out.cost[p], out.est[p] = loss_terms(kind, scores[pi[p]] - scores[pj[p]],
                                                                      theta[p], scale, swapped)


@njit(cache=True)
def debias_pairs(rows, terms, weights, props, n_queries, scale, norm, estimate, out):
    """Add the debiased pair terms (:class:`PairRows` ``rows``, :class:`RawTerms` ``terms``,
    :class:`PairWeights` ``weights``, :class:`Propensities` ``props``) into ``out.grad`` /
    ``out.hess`` and ``out.c`` (:class:`DebiasOutputs`); returns the loss.

    A pair whose rows sit at tracked positions (``0 <= pos < len(tplus)``) with propensities at
    least ``TINY_PROPENSITY`` is divided by ``t+[pos_i] t-[pos_j]``; others keep weight 1 (as in
    XGBoost). ``norm``: the query's terms are multiplied by ``log2(1 + S') / S'``, ``S'`` the sum of
    the debiased ``2 lam``. With ``estimate``, ``li[pos_i] += est / t-[pos_j]`` and
    ``lj[pos_j] += est / t+[pos_i]`` (eq. 30-31), unweighted, over tracked pairs.
    """
    pi, pj, qid = rows.i, rows.j, rows.qid
    lam, h, cost, est = terms.lam, terms.hess, terms.cost, terms.est
    pos, tplus, tminus = props.pos, props.tplus, props.tminus
    out_grad, out_hess, out_c, li, lj = out.grad, out.hess, out.c, out.li, out.lj
    m = pi.size
    u = np.ones(m)
    total = np.zeros(n_queries)
    for p in range(m):
        a = pos[pi[p]]
        b = pos[pj[p]]
        tracked, tp, tm, u[p] = debias_factor(a, b, tplus, tminus)
        if tracked and estimate:
            if tm >= TINY_PROPENSITY:
                li[a] += scale * est[p] / tm
            if tp >= TINY_PROPENSITY:
                lj[b] += scale * est[p] / tp
        total[qid[p]] += 2.0 * lam[p] * u[p]
    f = np.ones(n_queries)
    for q in range(n_queries):
        f[q] = norm_factor(norm, total[q])
    loss = 0.0
    for p in range(m):
        i = pi[p]
        j = pj[p]
        wt = pair_weight(scale * u[p] * f[qid[p]], weights, i, j, p)
        g = wt * lam[p]
        hh = wt * h[p]
        out_grad[i] -= g
        out_grad[j] += g
        out_hess[i] += hh
        out_hess[j] += hh
        out_c[p] = hh
        loss += wt * cost[p]
    return loss


@njit(cache=True)
def update_propensities(li, lj, exponent, tplus, tminus):
    """Eq. 30-31 with the ``L_p`` regulariser: ``t = (l / l[0])^exponent`` (the top, position 0, = 1), kept
    as it was when ``l[0]`` is (nearly) 0; the sums are then reset for the next round."""
    if li[0] >= TINY_PROPENSITY:
        for r in range(tplus.size):
            tplus[r] = (li[r] / li[0]) ** exponent
    if lj[0] >= TINY_PROPENSITY:
        for r in range(tminus.size):
            tminus[r] = (lj[r] / lj[0]) ** exponent
    li[:] = 0.0
    lj[:] = 0.0
