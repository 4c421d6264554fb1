"""Numba kernels of the affine correction (Vardasbi, Oosterhuis, de Rijke, CIKM 2020), for
:class:`customobj.clicks.Affine`.

``corrected_relevance`` turns each row's click into its affine-corrected relevance estimate
``(c - beta[p]) / alpha[p]``. ``affine_pairs`` walks every unordered pair ``{i, j}`` of rows of one
query (session) once and adds both of its ordered terms, ``r_i psi(s_i - s_j) + r_j psi(s_j - s_i)``,
``psi`` the wrapped loss's pair loss for a unit label difference (``pair_terms`` of
``objectives._pairwise_terms``), times LambdaRank's ``|D(rank_i) - D(rank_j)|`` for a LambdaRank. The
estimates ``r`` enter linearly, so the expected gradient over the clicks is the gradient with the
true relevances (see ``Affine``).

``affine_pairs`` runs ``query_pairs`` on each query, each pair once; the GPU kernel (``_affine_cuda``)
runs a block per query and a thread per row, which walks the row's pairs in the order ``query_pairs``
adds them into that row. Both share every line of the per-pair math (``pair_multiplier``,
``pair_lambda``, ``pair_step``, ``norm_factor``) and add every float sum in the same order.

The loss's options travel as one record (:class:`AffinePairLoss`), the rows' inputs as another
(:class:`AffineRows`) and the outputs as a third (:class:`PairOutputs`); the pair weights are
``(w_i + w_j) / 2`` of the row weights, as in every customobj pairwise loss.
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..objectives._pairwise_terms import pair_terms


class AffinePairLoss(NamedTuple):
    """One wrapped pair loss as ``affine_pairs`` takes it."""

    kind: int  # a PairKind code of objectives._pairwise_terms
    theta: float  # theta of a pair of unit label difference
    scale: float  # the loss's own scale times the Scaled factors above it
    hmul: float  # multiplies the hessian coupling (LambdaRank's convention)
    lambdarank: bool  # weigh each pair by |D(rank_i) - D(rank_j)| at the current ranks
    k: int  # DCG cutoff: a row ranked k or lower (0-based) has discount 0
    truncation: int  # a pair whose two rows are both ranked truncation or lower is skipped
    norm: bool  # multiply a query's terms by log2(1 + S) / S, S its lambda sum with unit estimates (click-free)


class AffineRows(NamedTuple):
    """What ``query_pairs`` reads per row: scores, corrected relevances, weights (read with ``use_w``)."""

    scores: np.ndarray
    rhat: np.ndarray
    w: np.ndarray
    use_w: bool


class PairOutputs(NamedTuple):
    """Where ``query_pairs`` adds its terms: per-row gradients and hessians, per-pair couplings."""

    grad: np.ndarray
    hess: np.ndarray
    c: np.ndarray


@njit(cache=True)
def corrected_relevance(clicks, position, alpha, beta, out):
    """``out[r] = (clicks[r] - beta[p]) / alpha[p]``, ``p = position[r]`` (checked in range by the caller)."""
    for r in range(clicks.size):
        p = position[r]
        out[r] = (clicks[r] - beta[p]) / alpha[p]


@njit(cache=True)
def discount(rank, k):
    """DCG's discount of a 0-based rank, 0 from rank ``k`` on."""
    if rank >= k:
        return 0.0
    return 1.0 / math.log2(2.0 + rank)


@njit(cache=True)
def _ranks(scores, a, b, out):
    """0-based rank of each row of ``scores[a:b]`` by descending score, ties by row order."""
    order = np.argsort(-scores[a:b], kind="mergesort")
    for t in range(b - a):
        out[order[t]] = t


@njit(cache=True)
def pair_factor(loss, rank_i, rank_j):
    """``|D(rank_i) - D(rank_j)|`` of a LambdaRank pair at its rows' 0-based ranks (0 when truncated), 1
    otherwise. Scalar: shared with the GPU kernel (``_affine_cuda``)."""
    if not loss.lambdarank:
        return 1.0
    if rank_i >= loss.truncation and rank_j >= loss.truncation:
        return 0.0
    return abs(discount(rank_i, loss.k) - discount(rank_j, loss.k))


@njit(cache=True)
def pair_lambda(loss, m, d, ri, rj):
    """The pair's lambda ``m (|r_i phi'(d)| + |r_j phi'(-d)|)``; with ``r_i = r_j = 1`` its part of a query's
    norm sum ``S`` (``query_pairs``)."""
    dphi1 = pair_terms(loss.kind, d, loss.theta)[1]
    dphi2 = pair_terms(loss.kind, -d, loss.theta)[1]
    return m * (abs(ri * dphi1) + abs(rj * dphi2))


@njit(cache=True)
def norm_factor(loss, total):
    """``log2(1 + S) / S`` of a query's lambda sum ``S`` (1 without ``norm`` or when ``S <= 0``)."""
    if not loss.norm or total <= 0.0:
        return 1.0
    return math.log2(1.0 + total) / total


@njit(cache=True)
def pair_step(loss, m, d, ri, rj):
    """``(dL/ds_i, coupling, loss)`` of one pair of factor ``m``, score difference ``d = s_i - s_j`` and
    estimates ``r_i``, ``r_j`` (``dL/ds_j = -dL/ds_i``; see ``affine_pairs``). Scalar: shared with the
    GPU kernel (``_affine_cuda``)."""
    phi1, dphi1, c1 = pair_terms(loss.kind, d, loss.theta)
    phi2, dphi2, c2 = pair_terms(loss.kind, -d, loss.theta)
    g = m * (ri * dphi1 - rj * dphi2)
    h = m * loss.hmul * (abs(ri) * c1 + abs(rj) * c2)
    return g, h, m * (ri * phi1 + rj * phi2)


@njit(cache=True)
def pair_multiplier(loss, rows, rank, r0, a, ii, jj):
    """``m`` of the pair of rows ``a + ii``, ``a + jj`` before the query's norm: the loss's scale times
    :func:`pair_factor` at their ranks ``rank[r0 + ii]``, ``rank[r0 + jj]``, times the pair weight
    ``(w_i + w_j) / 2`` with ``use_w``. Scalar: shared with the GPU kernel (``_affine_cuda``)."""
    m = loss.scale * pair_factor(loss, rank[r0 + ii], rank[r0 + jj])
    if rows.use_w:
        m *= 0.5 * rows.w[a + ii] + 0.5 * rows.w[a + jj]
    return m


@njit(cache=True)
def query_pairs(loss, rows, rank, r0, a, n, p, out, total):
    """One query's part of ``affine_pairs`` (rows ``a:a + n`` of :class:`AffineRows` ``rows``, its first
    pair ``p``, the rank of its row ``ii`` at ``rank[r0 + ii]``) into :class:`PairOutputs` ``out``;
    returns ``total`` plus the query's loss.

    The query's loss is added as ``S`` is: each row's terms (its pairs with the rows after it, in
    order), then those parts in row order, so the GPU's per-query loss (``_affine_cuda``, a thread per
    row: ``MultiObjective``'s per-label cost) is this one bit for bit; ``affine_pairs`` adds the
    queries' losses in query order, the order ``MultiObjective``'s GPU round sums them in.

    The query's norm ``log2(1 + S) / S`` (``norm``) takes ``S``, the sum of its lambdas with unit
    estimates ``m (|phi'(d)| + |phi'(-d)|)``, ``m`` each pair's factor before the norm (scale,
    LambdaRank's ``|dD|``, the pair weight): it depends on the scores and ranks, never on the clicks,
    so the normalised estimate stays unbiased (issue 43; the corrected estimates in ``S`` made it
    biased). ``S`` is added as each row's part (its pairs with the rows after it, in order), then
    those parts in row order: the order the GPU kernel (``_affine_cuda``, a thread per row) adds it
    in, so its ``S`` is this one bit for bit in ``O(n)`` serial steps, not ``O(n^2)`` (issue 42).
    """
    scores, rhat = rows.scores, rows.rhat
    out_grad, out_hess, out_c = out
    s_total = 0.0
    if loss.norm:
        for ii in range(n):
            part = 0.0
            for jj in range(ii + 1, n):
                m = pair_multiplier(loss, rows, rank, r0, a, ii, jj)
                if m != 0.0:  # click-free: unbiased
                    part += pair_lambda(loss, m, scores[a + ii] - scores[a + jj], 1.0, 1.0)
            s_total += part
    f = norm_factor(loss, s_total)
    query_loss = 0.0
    for ii in range(n):
        part = 0.0  # the row's loss terms (its pairs with the rows after it), as the GPU's thread for the row adds them
        for jj in range(ii + 1, n):
            i = a + ii
            j = a + jj
            m = pair_multiplier(loss, rows, rank, r0, a, ii, jj) * f
            out_c[p] = 0.0
            p += 1
            if m == 0.0:
                continue
            g, h, cost = pair_step(loss, m, scores[i] - scores[j], rhat[i], rhat[j])
            out_grad[i] += g
            out_grad[j] -= g
            out_hess[i] += h
            out_hess[j] += h
            out_c[p - 1] = h
            part += cost
        query_loss += part
    return total + query_loss


@njit(cache=True)
def affine_pairs(scores, ptr, rhat, w, use_w, loss, out_grad, out_hess, out_c):
    """Add the affine-corrected pair terms of every query into ``out_grad`` / ``out_hess``; returns the loss.

    Pair ``p`` (queries in order, then ``i < j`` within each) gets its hessian coupling in
    ``out_c[p]`` (``out_c`` holds ``sum n_q (n_q - 1) / 2`` entries). Per pair, with
    ``d = s_i - s_j``, ``m`` its factor (scale, LambdaRank's ``|dD|``, the query's norm, the pair weight):
    loss ``m (r_i phi(d) + r_j phi(-d))``, ``dL/ds_i = m (r_i phi'(d) - r_j phi'(-d)) = -dL/ds_j``, and
    the coupling ``m hmul (|r_i| phi''(d) + |r_j| phi''(-d))`` (absolute values: never negative).
    """
    total = 0.0
    p = 0
    n_max = 0
    for q in range(ptr.size - 1):
        n_max = max(n_max, ptr[q + 1] - ptr[q])
    rank = np.zeros(n_max, dtype=np.int64)
    rows = AffineRows(scores, rhat, w, use_w)
    out = PairOutputs(out_grad, out_hess, out_c)
    for q in range(ptr.size - 1):
        a = ptr[q]
        n = ptr[q + 1] - a
        if loss.lambdarank:
            _ranks(scores, a, a + n, rank)
        total = query_pairs(loss, rows, rank, 0, a, n, p, out, total)
        p += n * (n - 1) // 2
    return total


@njit(cache=True)
def pair_rows(ptr, out_i, out_j):
    """The rows of pair ``p`` in ``affine_pairs``' order: every ``i < j`` of each query."""
    p = 0
    for q in range(ptr.size - 1):
        for i in range(ptr[q], ptr[q + 1]):
            for j in range(i + 1, ptr[q + 1]):
                out_i[p] = i
                out_j[p] = j
                p += 1
