"""numba.cuda kernels of Unbiased LambdaMART's debiasing (Hu et al., WWW 2019, sec. 4-5): the GPU
drivers of ``_unbiased_kernels`` (``loss_pair_terms``, ``debias_pairs``), calling the CPU's own scalar math
(``loss_terms``, ``tracked_propensities``, ``norm_factor``, ``pair_weight``, through
``device_function``). LambdaRank's debiased terms come from its own GPU pass
(``objectives._lambdarank_cuda.fill_terms``). The route that launches them is ``_unbiased_route``.

No atomics, float64, results independent of the launch:

- ``loss_terms_pairs`` (one thread per pair): a pair loss's debiased terms.
- ``debias_queries`` (one thread per query): a query's pairs, walked in
  the CPU's list order (``QueryPairs``: LambdaRank's device pairs come by query; a listed pair
  list is permuted by query once per data set). Every pair of a query joins two of its rows, so a
  query's thread owns its rows' gradients: a row adds its pairs in the CPU's order, and the
  per-query sums (LambdaRank's normalisation, the debiased ``sum 2 lambda``, the query's debiased
  loss ``Outputs.loss``: ``MultiObjective``'s GPU cost) are the CPU's too.
- eq. 30-31's per-position sums: each query's thread writes each pair's two terms and the
  positions they count for (``Outputs.terms``, ``Outputs.at``), then ``position_sums`` (one thread
  per channel and position) adds them in list order, the CPU's running sum bit for bit (a sum of
  per-query partial sums differed in the last bits, and LambdaRank's sort of tied scores turns
  such a bit into a different ranking some rounds later). Only these ``2 x n_positions`` sums cross
  the bus a round (the host updates the propensities, pooling them over distributed workers as on
  the CPU).
"""
from typing import Any, NamedTuple

from .._cuda_runtime import cuda_module, device_function
from . import _unbiased_kernels as CK

cuda = cuda_module()

_loss_terms, _tracked = device_function(CK.loss_terms), device_function(CK.tracked_propensities)
_norm_factor = device_function(CK.norm_factor)
_pair_weight = device_function(CK.pair_weight)
_TINY = CK.TINY_PROPENSITY


class QueryPairs(NamedTuple):
    """The pairs ``(i[p], j[p])`` by query: query ``q``'s are ``perm[qptr[q]:qptr[q + 1]]`` in list
    order (``use_perm``), or the range ``qptr[q]:qptr[q + 1]`` itself (pairs already by query)."""

    i: Any
    j: Any
    perm: Any
    use_perm: bool
    qptr: Any


class Outputs(NamedTuple):
    """Where ``debias_queries`` adds: gradients, hessians, each pair's coupling, the per-query sums."""

    grad: Any
    hess: Any
    c: Any
    terms: Any  # (2, pairs): each pair's term of eq. 30's and eq. 31's sums
    at: Any  # (2, pairs): the position each term counts for (-1: none)
    loss: Any  # (queries,): each query's debiased loss, its pairs in list order (the CPU's per-query sums)


@cuda.jit(device=True)
def _pair(qp, t):
    return qp.perm[t] if qp.use_perm else t


@cuda.jit(cache=True)
def loss_terms_pairs(scores, pi, pj, theta, kind, scale, swapped, props, out):
    """One thread per pair: ``_unbiased_kernels.loss_pair_terms`` into the ``DebiasedTerms`` ``out``."""
    p = cuda.grid(1)
    if p >= pi.shape[0]:
        return
    _, tp, tm = _tracked(props.pos[pi[p]], props.pos[pj[p]], props.tplus, props.tminus)
    lam, h, cost, est = _loss_terms(kind, scores[pi[p]] - scores[pj[p]], theta[p], scale, tp, tm, swapped)
    out.lam[p] = lam
    out.hess[p] = h
    out.cost[p] = cost
    out.est[p] = est


@cuda.jit(cache=True)
def debias_queries(qp, terms, weights, props, scale, norm, estimate, out):
    """One thread per query: ``_unbiased_kernels.debias_pairs`` of its pairs (records as there; ``out``: an
    :class:`Outputs`)."""
    q = cuda.grid(1)
    if q >= qp.qptr.shape[0] - 1:
        return
    lo, hi = qp.qptr[q], qp.qptr[q + 1]
    total = 0.0
    for t in range(lo, hi):
        p = _pair(qp, t)
        a = props.pos[qp.i[p]]
        b = props.pos[qp.j[p]]
        tracked, tp, tm = _tracked(a, b, props.tplus, props.tminus)
        out.at[0, p] = -1
        out.at[1, p] = -1
        if tracked and estimate:
            if tm >= _TINY:
                out.at[0, p] = a
                out.terms[0, p] = scale * terms.est[p] / tm
            if tp >= _TINY:
                out.at[1, p] = b
                out.terms[1, p] = scale * terms.est[p] / tp
        total += 2.0 * terms.lam[p]
    f = _norm_factor(norm, total)
    loss = 0.0
    for t in range(lo, hi):
        p = _pair(qp, t)
        i = qp.i[p]
        j = qp.j[p]
        wt = _pair_weight(scale * f, weights, i, j, p)
        g = wt * terms.lam[p]
        hh = wt * terms.hess[p]
        out.grad[i] -= g
        out.grad[j] += g
        out.hess[i] += hh
        out.hess[j] += hh
        out.c[p] = hh
        loss += wt * terms.cost[p]
    out.loss[q] = loss


@cuda.jit(cache=True)
def position_sums(terms, at, m, sums):
    """One thread per channel and position ``a``: ``sums[channel, a] +=`` the terms of the ``m`` pairs
    that count for ``a``, in list order (the CPU's running sum)."""
    t = cuda.grid(1)
    k = sums.shape[1]
    if t >= 2 * k:
        return
    ch = t // k
    a = t - ch * k
    acc = sums[ch, a]
    for p in range(m):
        if at[ch, p] == a:
            acc += terms[ch, p]
    sums[ch, a] = acc
