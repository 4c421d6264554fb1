"""Numba drivers of LambdaRank / LambdaMART (Burges 2010, sections 3, 4, 7): gradients, loss and
pair couplings over all queries. The per-query work (the ``|dZ|`` formulas and the pair loop)
lives in ``_lambdarank_pass``.

Every query is sorted by current score (stable, ties by row order). Queries go to threads in
fixed blocks of ``BLOCK`` (scratch arrays allocated once per block, results independent of the
thread count). Couplings sort each query once: a COUNT pass stores the order, the FILL (or fused
GRAD_FILL) pass reuses it.
"""
import numpy as np
from numba import njit, prange

from .._dcg_kernels import discount_table, ideal_dcg_query
from ._lambdarank_pass import (  # noqa: F401 - the metric codes are part of this module's interface
    COUNT, ERR, FILL, GRAD, GRAD_FILL, LOSS, MAP, MRR, NDCG, _NF, PassInputs, PassOutputs, _query_pass,
    _sort_query,
)

#: The pair loop's ``D`` (``qnorm`` is ``1/IDCG@k`` under both; upper rows are always in the top k).
#: AT_K: ``D = 0`` beyond ``k`` for both rows (``|dZ|`` = exact change of NDCG@k; the default).
#: FULL: the lower row keeps its untruncated ``D`` (LightGBM's lambdarank, XGBoost's rank:ndcg).
DISCOUNT_AT_K, DISCOUNT_FULL = 0, 1
#: Queries per parallel work item (fixed, so results never depend on the thread count).
BLOCK = 16


@njit(cache=True)
def pair_discount_table(n, k, discount):
    """The pair loop's ``D`` for queries of at most ``n`` rows under convention ``discount``."""
    return discount_table(n, k if discount == DISCOUNT_AT_K else n)


@njit(cache=True)
def ideal_dcg(row_gain, ptr, disc):
    """DCG of the label-sorted order of each query (positions beyond ``k`` have ``disc = 0``)."""
    nq = ptr.size - 1
    out = np.zeros(nq, dtype=np.float64)
    for q in range(nq):
        out[q] = ideal_dcg_query(row_gain, ptr[q], ptr[q + 1], disc, ptr[q + 1] - ptr[q])
    return out


@njit(cache=True)
def _block_scratch(ptr, q0, q1):
    size = 1
    for q in range(q0, q1):
        size = max(size, ptr[q + 1] - ptr[q])
    return np.empty((_NF, size)), np.empty((3, size), dtype=np.int64)


@njit(cache=True, parallel=True)
def lambdarank_grad_hess(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm,
                         hess_scale, weights, use_weights, out_grad, out_hess):
    nq = ptr.size - 1
    no_i = np.zeros(0, dtype=np.int64)
    no_f = np.zeros(0, dtype=np.float64)
    inp = PassInputs(scores, row_gain, weights, use_weights, disc, metric, sigma, norm, hess_scale)
    out = PassOutputs(out_grad, out_hess, no_i, no_i, no_f)
    for blk in prange((nq + BLOCK - 1) // BLOCK):
        q0 = blk * BLOCK
        q1 = min(nq, q0 + BLOCK)
        F, I = _block_scratch(ptr, q0, q1)
        for q in range(q0, q1):
            start = ptr[q]
            n = ptr[q + 1] - start
            if n < 2 or qnorm[q] == 0.0:
                continue
            kk = min(k, n)
            _sort_query(scores, start, n, F[_NF - 1], I[0])
            _query_pass(GRAD, inp, out, n, qnorm[q], kk, min(kk, trunc), 0, I[0], F, I)


@njit(cache=True, parallel=True)
def lambdarank_loss(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm,
                    hess_scale, weights, use_weights):
    nq = ptr.size - 1
    no_i = np.zeros(0, dtype=np.int64)
    no_f = np.zeros(0, dtype=np.float64)
    inp = PassInputs(scores, row_gain, weights, use_weights, disc, metric, sigma, norm, hess_scale)
    out = PassOutputs(no_f, no_f, no_i, no_i, no_f)
    per_query = np.zeros(nq)
    for blk in prange((nq + BLOCK - 1) // BLOCK):
        q0 = blk * BLOCK
        q1 = min(nq, q0 + BLOCK)
        F, I = _block_scratch(ptr, q0, q1)
        for q in range(q0, q1):
            start = ptr[q]
            n = ptr[q + 1] - start
            if n < 2 or qnorm[q] == 0.0:
                continue
            kk = min(k, n)
            _sort_query(scores, start, n, F[_NF - 1], I[0])
            per_query[q] = _query_pass(LOSS, inp, out, n, qnorm[q], kk, min(kk, trunc), 0, I[0], F, I)
    # A serial sum: per_query.sum() here would become a thread-dependent parallel reduction.
    total = 0.0
    for q in range(nq):
        total += per_query[q]
    return total


@njit(cache=True, parallel=True)
def lambdarank_pair_offsets(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm,
                            hess_scale, weights, use_weights, order):
    """Sorts every query into ``order`` (rows by score) and returns the offsets of each query's
    pairs with nonzero ``|dZ|`` (size n_queries + 1; the last is the pair count)."""
    nq = ptr.size - 1
    no_i = np.zeros(0, dtype=np.int64)
    no_f = np.zeros(0, dtype=np.float64)
    inp = PassInputs(scores, row_gain, weights, use_weights, disc, metric, sigma, norm, hess_scale)
    out = PassOutputs(no_f, no_f, no_i, no_i, no_f)
    counts = np.zeros(nq + 1, dtype=np.int64)
    for blk in prange((nq + BLOCK - 1) // BLOCK):
        q0 = blk * BLOCK
        q1 = min(nq, q0 + BLOCK)
        F, I = _block_scratch(ptr, q0, q1)
        for q in range(q0, q1):
            start = ptr[q]
            n = ptr[q + 1] - start
            if n < 2 or qnorm[q] == 0.0:
                continue
            kk = min(k, n)
            o = order[start:start + n]
            _sort_query(scores, start, n, F[_NF - 1], o)
            counts[q + 1] = int(_query_pass(COUNT, inp, out, n, qnorm[q], kk, min(kk, trunc), 0, o, F, I))
    return np.cumsum(counts)


@njit(cache=True, parallel=True)
def lambdarank_pair_fill(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm,
                         hess_scale, weights, use_weights, with_grad, out_grad, out_hess, order, offsets,
                         out_i, out_j, out_c):
    """Writes query ``q``'s pairs (rows, coupling) to ``out_*[offsets[q]:offsets[q + 1]]`` (any
    integer dtype for the rows); with ``with_grad`` also adds the gradients and hessians (one
    pair pass: GRAD_FILL). ``order`` and ``offsets`` come from ``lambdarank_pair_offsets``."""
    nq = ptr.size - 1
    mode = GRAD_FILL if with_grad else FILL
    inp = PassInputs(scores, row_gain, weights, use_weights, disc, metric, sigma, norm, hess_scale)
    out = PassOutputs(out_grad, out_hess, out_i, out_j, out_c)
    for blk in prange((nq + BLOCK - 1) // BLOCK):
        q0 = blk * BLOCK
        q1 = min(nq, q0 + BLOCK)
        F, I = _block_scratch(ptr, q0, q1)
        for q in range(q0, q1):
            start = ptr[q]
            n = ptr[q + 1] - start
            if n < 2 or qnorm[q] == 0.0:
                continue
            kk = min(k, n)
            _query_pass(mode, inp, out, n, qnorm[q], kk, min(kk, trunc), offsets[q], order[start:start + n],
                        F, I)


@njit(cache=True)
def lambdarank_couplings(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm,
                         hess_scale, weights, use_weights, with_grad, out_grad, out_hess):
    """``(i, j, c)`` of every pair with nonzero ``|dZ|``, grouped by query and by upper position;
    with ``with_grad`` also adds the gradients and hessians (one pair pass: GRAD_FILL)."""
    order = np.empty(ptr[ptr.size - 1], dtype=np.int64)
    offsets = lambdarank_pair_offsets(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm,
                                      hess_scale, weights, use_weights, order)
    m = offsets[-1]
    out_i = np.empty(m, dtype=np.int64)
    out_j = np.empty(m, dtype=np.int64)
    out_c = np.empty(m, dtype=np.float64)
    lambdarank_pair_fill(scores, ptr, row_gain, qnorm, disc, metric, k, trunc, sigma, norm, hess_scale,
                         weights, use_weights, with_grad, out_grad, out_hess, order, offsets,
                         out_i, out_j, out_c)
    return out_i, out_j, out_c
