"""Numba kernels of position debiasing (Unbiased LambdaMART, Hu et al. WWW 2019, sec. 4-5).

Every wrapped pairwise loss is reduced to one list of pair terms: row ``i`` (clicked) should rank
above row ``j`` (not clicked), with the pair's lambda ``lam`` (``grad_i -= lam``, ``grad_j += lam``),
its hessian coupling ``h`` (added to both rows' hessians), its loss ``cost`` and the cost the
propensity estimate sums (``est``: ``cost`` itself, or the swapped pair's loss, XGBoost's choice).
The pair-term functions take the propensities ``t+`` of ``i``'s position and ``t-`` of ``j``'s, as
XGBoost's ``LambdaGrad<unbiased>`` does, and divide ``lam``, ``h`` and ``cost`` by ``t+ t-``
(``est`` stays undebiased): LambdaRank's TERMS pass (``objectives._lambdarank_terms.unbiased_pair``,
through ``LambdaRank.debiased_pair_terms``) and, for a pair loss, :func:`loss_terms`. All terms are
before pair weights and before the per-query normalisation: ``debias_pairs`` then applies the
normalisation to the debiased lambdas (as XGBoost does) and the pair weights, and adds the sums of
eq. 30-31 of the paper into ``li`` / ``lj``.

The per-pair and per-query scalar math (``loss_terms``, ``tracked_propensities``, ``debias_scale``,
``norm_factor``, ``pair_weight``) is written once with ``math.*``: these CPU loops and the GPU
kernels of ``_unbiased_cuda`` (through ``_cuda_runtime.device_function``) call it alike.

The kernels take records (``NamedTuple`` of arrays and scalars, which numba passes as their fields):
the pairs' rows, their terms, their weights, the propensities and the outputs each travel as
one argument, so no kernel has more than a dozen.
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit

# TINY_PROPENSITY is read here by the debiasing modules; its home is _pairwise_terms
from ..objectives._pairwise_terms import TINY_PROPENSITY, debias_scale, pair_terms, tracked_propensities  # noqa: F401

class PairRows(NamedTuple):
    """The pairs: row ``i`` (clicked, should rank higher), row ``j``, and the query of each pair."""

    i: np.ndarray
    j: np.ndarray
    qid: np.ndarray


class DebiasedTerms(NamedTuple):
    """Each pair's terms, one entry per pair: debiased (divided by ``t+ t-``) but for ``est``, before
    pair weights and the per-query normalisation."""

    lam: np.ndarray  # grad_i -= lam, grad_j += lam
    hess: np.ndarray  # hessian coupling, added to both rows
    cost: np.ndarray  # the pair's loss
    est: np.ndarray  # the undebiased cost the propensity estimate sums


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


def debiased_terms(m: int) -> DebiasedTerms:
    """Uninitialised terms of ``m`` pairs, for ``loss_pair_terms`` to fill."""
    return DebiasedTerms(np.empty(m), np.empty(m), np.empty(m), np.empty(m))


@njit(cache=True)
def loss_terms(kind, d, theta, scale, tp, tm, swapped):
    """``(lam, hess, cost, est)`` of a pair of a loss ``scale phi(d; theta)`` at ``d = s_i - s_j``,
    the first three divided by ``tp tm`` (``objectives._pairwise_terms.debias_scale``), ``est``, the
    pair's loss or the swapped pair's ``scale phi(-d; theta)`` (``swapped``), not."""
    phi, dphi, cc = pair_terms(kind, d, theta)
    cost = scale * phi
    est = scale * pair_terms(kind, -d, theta)[0] if swapped else cost
    u = debias_scale(tp, tm)
    return -scale * dphi * u, scale * cc * u, cost * u, est


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
def loss_pair_terms(scores, pi, pj, theta, kind, scale, swapped, props, out):
    """Pair terms (into the :class:`DebiasedTerms` ``out``) of a pairwise loss ``scale phi(s_i - s_j;
    theta)`` (``_pairwise_kernels``), debiased by the :class:`Propensities` ``props`` of the rows'
    positions (:func:`loss_terms`); ``est`` is the swapped pair's ``scale phi(s_j - s_i; theta)``
    when ``swapped``, else the undebiased ``cost``."""
    pos, tplus, tminus = props.pos, props.tplus, props.tminus
    for p in range(pi.size):
        i = pi[p]
        j = pj[p]
        _, tp, tm = tracked_propensities(pos[i], pos[j], tplus, tminus)
        out.lam[p], out.hess[p], out.cost[p], out.est[p] = loss_terms(kind, scores[i] - scores[j], theta[p],
                                                                      scale, tp, tm, swapped)


@njit(cache=True)
def debias_pairs(rows, terms, weights, props, n_queries, scale, norm, estimate, out):
    """Add the debiased pair terms (:class:`PairRows` ``rows``, :class:`DebiasedTerms` ``terms``,
    :class:`PairWeights` ``weights``, :class:`Propensities` ``props``) into ``out.grad`` /
    ``out.hess`` and ``out.c`` (:class:`DebiasOutputs`); returns the loss.

    The terms come debiased: a pair whose rows sit at tracked positions (``0 <= pos < len(tplus)``)
    with propensities at least ``TINY_PROPENSITY`` divided by ``t+[pos_i] t-[pos_j]``, others with
    weight 1 (as in XGBoost). ``norm``: the query's terms are multiplied by ``log2(1 + S') / S'``,
    ``S'`` the sum of the debiased ``2 lam``. With ``estimate``, ``li[pos_i] += est / t-[pos_j]``
    and ``lj[pos_j] += est / t+[pos_i]`` (eq. 30-31), unweighted, over tracked pairs. The loss is each
    query's pairs summed in list order, then the queries in order (``_unbiased_cuda.debias_queries``'
    per-query costs, which ``MultiObjective``'s GPU round adds in query order: the same bits).
    """
    pi, pj, qid = rows.i, rows.j, rows.qid
    lam, h, cost, est = terms.lam, terms.hess, terms.cost, terms.est
    pos, tplus, tminus = props.pos, props.tplus, props.tminus
    out_grad, out_hess, out_c, li, lj = out.grad, out.hess, out.c, out.li, out.lj
    m = pi.size
    total = np.zeros(n_queries)
    for p in range(m):
        a = pos[pi[p]]
        b = pos[pj[p]]
        tracked, tp, tm = tracked_propensities(a, b, tplus, tminus)
        if tracked and estimate:
            if tm >= TINY_PROPENSITY:
                li[a] += scale * est[p] / tm
            if tp >= TINY_PROPENSITY:
                lj[b] += scale * est[p] / tp
        total[qid[p]] += 2.0 * lam[p]
    f = np.ones(n_queries)
    for q in range(n_queries):
        f[q] = norm_factor(norm, total[q])
    per_query = np.zeros(n_queries)  # each query's loss first, in list order: the GPU's per-query costs, bit for bit
    for p in range(m):
        i = pi[p]
        j = pj[p]
        wt = pair_weight(scale * f[qid[p]], weights, i, j, p)
        g = wt * lam[p]
        hh = wt * h[p]
        out_grad[i] -= g
        out_grad[j] += g
        out_hess[i] += hh
        out_hess[j] += hh
        out_c[p] = hh
        per_query[qid[p]] += wt * cost[p]
    loss = 0.0
    for q in range(n_queries):  # the queries in order, as MultiObjective's GPU round adds them
        loss += per_query[q]
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
