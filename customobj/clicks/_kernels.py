"""Numba kernels of position debiasing (Unbiased LambdaMART, Hu et al. WWW 2019, sec. 4-5).

Every wrapped pairwise loss is reduced to one list of pair terms: row ``i`` (clicked) should rank
above row ``j`` (not clicked), with the pair's lambda ``lam`` (``grad_i -= lam``, ``grad_j += lam``),
its hessian coupling ``h`` (added to both rows' hessians), its loss ``cost`` and the cost the
propensity estimate sums (``est``: ``cost`` itself, or the swapped pair's loss, XGBoost's choice). All four are *raw*:
before pair weights, before debiasing, before LambdaRank's per-query normalisation. ``debias_pairs``
then divides each tracked pair by ``t+[pos_i] t-[pos_j]``, applies the normalisation to the
debiased lambdas (as XGBoost does), the pair weights, and adds the sums of eq. 30-31 of the paper
into ``li`` / ``lj``.

The kernels take records (``NamedTuple`` of arrays and scalars, which numba passes as their fields):
the pairs' rows, their raw terms, their weights, the propensities and the outputs each travel as
one argument, so no kernel has more than a dozen.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from ..objectives._pairwise_kernels import pair_terms

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
        return (1.0 + np.exp(x)) * np.log1p(np.exp(-x)) if x > -_EXP_CAP else -x
    t = np.exp(-x)
    if t == 0.0:
        return 1.0
    return (1.0 + t) * np.log1p(t) / t


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
        x = sigma * (scores[pi[p]] - scores[pj[p]])
        out_lam[p] = c[p] * (1.0 + np.exp(min(-x, _EXP_CAP))) / (hess_scale * sigma)
        total[qid[p]] += 2.0 * out_lam[p]
    f = np.ones(n_queries)
    if norm:
        for q in range(n_queries):
            if total[q] > 0.0:
                f[q] = total[q] / (np.exp2(total[q]) - 1.0)
    for p in range(m):
        fq = f[qid[p]]
        lam = out_lam[p] / fq
        out_lam[p] = lam
        out_h[p] = c[p] / fq
        if lam == 0.0:
            out_cost[p] = 0.0
            out_est[p] = 0.0
            continue
        x = sigma * (scores[pi[p]] - scores[pj[p]])
        out_cost[p] = lam * _ratio_softplus(x) / sigma
        if swapped:
            dz = lam * (1.0 + np.exp(min(x, _EXP_CAP))) / sigma  # |dZ| = lam / (sigma rho)
            out_est[p] = dz * (x + np.log1p(np.exp(-x)) if x > 0.0 else np.log1p(np.exp(x)))
        else:
            out_est[p] = out_cost[p]


@njit(cache=True)
def loss_pair_terms(scores, pi, pj, theta, kind, scale, swapped, out):
    """Raw pair terms (into the :class:`RawTerms` ``out``) of a pairwise loss ``scale phi(s_i - s_j;
    theta)`` (``_pairwise_kernels``); ``est`` is the swapped pair's ``scale phi(s_j - s_i; theta)``
    when ``swapped``, else ``cost``."""
    out_lam, out_h, out_cost, out_est = out.lam, out.hess, out.cost, out.est
    for p in range(pi.size):
        d = scores[pi[p]] - scores[pj[p]]
        phi, dphi, cc = pair_terms(kind, d, theta[p])
        out_lam[p] = -scale * dphi
        out_h[p] = scale * cc
        out_cost[p] = scale * phi
        out_est[p] = scale * pair_terms(kind, -d, theta[p])[0] if swapped else out_cost[p]


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
    use_w, use_pw, pair_w = weights.use_w, weights.use_pw, weights.pairs
    row_w = weights.rows
    out_grad, out_hess, out_c, li, lj = out.grad, out.hess, out.c, out.li, out.lj
    m = pi.size
    k = tplus.size
    u = np.ones(m)
    total = np.zeros(n_queries)
    for p in range(m):
        a = pos[pi[p]]
        b = pos[pj[p]]
        if 0 <= a < k and 0 <= b < k:
            tp = tplus[a]
            tm = tminus[b]
            if tp >= TINY_PROPENSITY and tm >= TINY_PROPENSITY:
                u[p] = 1.0 / (tp * tm)
            if estimate:
                if tm >= TINY_PROPENSITY:
                    li[a] += scale * est[p] / tm
                if tp >= TINY_PROPENSITY:
                    lj[b] += scale * est[p] / tp
        total[qid[p]] += 2.0 * lam[p] * u[p]
    f = np.ones(n_queries)
    if norm:
        for q in range(n_queries):
            if total[q] > 0.0:
                f[q] = np.log2(1.0 + total[q]) / total[q]
    loss = 0.0
    for p in range(m):
        i = pi[p]
        j = pj[p]
        wt = scale * u[p] * f[qid[p]]
        if use_w:
            wt *= 0.5 * row_w[i] + 0.5 * row_w[j]
        if use_pw:
            wt *= pair_w[p]
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
