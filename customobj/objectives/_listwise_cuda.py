"""numba.cuda kernels of the query-level losses: QueryRMSE, the softmax cross-entropy of ListNet /
QuerySoftMax / XENDCG, and LightGBM's XENDCG gradients; the GPU twins of ``_listwise_kernels``.

Every formula comes from ``_listwise_terms`` (through ``_cuda_runtime.device_function``): these
kernels are only the GPU-shaped drivers. Each loss is two launches, no atomics, float64 throughout:

1. a block (one warp, ``_block_cuda.QUERY_THREADS``) per query computes the query's sums and writes
   them to a small ``(channel, query)`` scratch (QueryRMSE: mean residual and ``W``; softmax: ``M``,
   ``top``, ``z``; LightGBM's XENDCG: ``1 / sum phi``, ``top``, ``z`` and its two parameter sums).
   Each sum is the CPU's running sum in row order, bit for bit where the device's ``exp`` agrees:
   the block's threads compute a warp's width of rows' terms at a time (the ``exp``, the draws, the
   divisions) and its thread 0 adds them in row order (``_block_cuda.add_staged``: one add per row
   on the serial path, where one thread per query did all of the row's work). The maximum ``top``
   is exact in any order: a block tree.
2. one thread per row (coalesced reads and writes) adds its own gradient and hessian from those
   sums. A row's XENDCG noise is recomputed in O(log) from its query's generator (``lcg_skip``),
   not stored.

XENDCG's target masses (``xendcg_mass_queries``, a block per query) draw each row's number of
LightGBM's per-query generator in O(log) and sum them in row order, as the CPU does: the same seeds
give the same noise on both.

The couplings of these losses (``TreeBooster(device="cuda")``'s OLE criteria, driven by
``_couplings_route``) are dense: every pair ``a < b`` of a query, ``c = qscale_q f_a f_b``, with ``f = p``
and ``qscale = beta^2 M`` for the softmax losses (from the sums the gradient launch left) and
QueryRMSE's label-only ``f = w``, ``qscale = 1 / W``. ``dense_count_pairs`` then ``dense_fill_pairs``
keep those with ``c > 0``, in the CPU's order, as the CPU booster does: a warp (a one-warp block)
per row ``a``, its lanes taking the rows ``b > a`` of its query a warp's width at a time (a warp sum
counts, a fixed-order warp scan places), so a long query is as many warps as rows, not one thread's
O(n^2) (issue 42, item 2; docs/gpu-design.md).
"""
import math
from typing import Any, NamedTuple

import numpy as np
from numba import float64, int64

from .._cuda_runtime import cuda_module, device_function
from . import _listwise_terms as LT
from . import _block_cuda as CB
from ._block_cuda import QUERY_THREADS
from ._noise import lcg_skip
from ._listwise_kernels import LIGHTGBM_EPSILON

cuda = cuda_module()

_weight = device_function(LT.row_weight)
_residual, _mean = device_function(LT.weighted_residual), device_function(LT.centre_mean)
_centred_row = device_function(LT.centred_row)
_logit, _exp_term = device_function(LT.softmax_logit), device_function(LT.softmax_term)
_share = device_function(LT.softmax_share)
_softmax_row = device_function(LT.softmax_row)
_stream = device_function(LT.xendcg_stream)
_phi, _mass = device_function(LT.xendcg_phi), device_function(LT.xendcg_share)
_first = device_function(LT.xendcg_first)
_second = device_function(LT.xendcg_second)
_xendcg_row = device_function(LT.xendcg_row)
_skip = device_function(lcg_skip)

#: Channels of QueryRMSE's per-query scratch.
RMSE_MEAN, RMSE_W = range(2)
N_RMSE = 2
#: Channels of the softmax per-query scratch (``SM_M`` 0: the query contributes nothing).
SM_M, SM_TOP, SM_Z = range(3)
N_SM = 3
#: The losses of ``query_rows``.
RMSE_ROWS, SOFTMAX_ROWS = range(2)
#: Channels of LightGBM's XENDCG per-query scratch.
XE_INV, XE_TOP, XE_Z, XE_L1, XE_L2 = range(5)
N_XE = 5
#: The per-row terms of the per-query sums (:func:`_term`): QueryRMSE's weight and weighted residual,
#: a value (the softmax's target mass), the softmax's logit and ``exp`` term, XENDCG's ``phi`` and
#: LightGBM's first- and second-order parameters.
T_WEIGHT, T_RESIDUAL, T_VALUE, T_LOGIT, T_EXP, T_PHI, T_L1, T_L2 = range(8)


class _Query(NamedTuple):
    """What a query's terms (:func:`_term`) read: the data, and the query's sums so far."""

    scores: Any
    values: Any  # QueryRMSE's and XENDCG's labels, the softmax's target masses
    weights: Any  # QueryRMSE's row weights, the softmax's value weights
    use_w: bool
    beta: float
    top: float  # the softmax's largest logit
    z: float  # the softmax's partition sum, relative to ``top``
    inv: float  # XENDCG: 1 / sum phi
    sum_l1: float  # XENDCG: the first-order parameters' sum
    start: Any  # XENDCG: the query's generator before its first row (uint64)


@cuda.jit(device=True)
def _query(scores, values, weights, use_w, beta):
    """A :class:`_Query` with no sums yet."""
    return _Query(scores, values, weights, use_w, beta, 0.0, 0.0, 0.0, 0.0, np.uint64(0))


@cuda.jit(device=True)
def _with(r, top, z, inv, sum_l1, start):
    """``r`` with the query's sums set."""
    return _Query(r.scores, r.values, r.weights, r.use_w, r.beta, top, z, inv, sum_l1, start)


@cuda.jit(device=True)
def _term(kind, r, t, a):
    """Row ``t``'s (position ``a`` in its query) term ``kind`` of a per-query sum, the CPU's
    expression (``_listwise_terms``); NaN for an unknown ``kind`` (the kernels pass their own)."""
    v = _weight(r.weights, r.use_w, t)
    if kind == T_WEIGHT:
        return v
    if kind == T_RESIDUAL:
        return _residual(r.scores[t], r.values[t], v)
    if kind == T_VALUE:
        return r.values[t]
    if kind == T_LOGIT:
        return _logit(r.scores[t], v, r.beta)
    if kind == T_EXP:
        return _exp_term(r.scores[t], v, r.beta, r.top)
    phi = _phi(r.values[t], _skip(r.start, a + 1))
    if kind == T_PHI:
        return phi
    rho, rest = _share(r.scores[t], 1.0, 1.0, r.top, r.z)
    param1 = _first(phi, r.inv, rho, rest)[1]
    if kind == T_L1:
        return param1
    if kind == T_L2:
        return _second(rho, rest, r.sum_l1, param1)[1]
    return math.nan


@cuda.jit(device=True)
def _ordered_sum(sh, kind, r, lo, hi):
    """The terms ``kind`` of rows ``lo:hi`` summed from 0 in row order (the CPU's loop, bit for bit),
    in every thread: a warp's width of terms staged at a time, thread 0 adding them (``add_staged``)."""
    total = 0.0
    for base in range(lo, hi, cuda.blockDim.x):
        t = base + cuda.threadIdx.x
        if t < hi:
            sh[cuda.threadIdx.x] = _term(kind, r, t, t - lo)
        total = CB.add_staged(sh, total, min(cuda.blockDim.x, hi - base))
    return CB.broadcast(sh, total)


@cuda.jit(device=True)
def _largest(sh, kind, r, lo, hi):
    """The largest term ``kind`` of rows ``lo:hi`` (``-inf`` for none), in every thread: the CPU's
    ``top`` (a maximum, exact in any order: each thread walks its rows, then a block tree)."""
    m = -math.inf
    for t in range(lo + cuda.threadIdx.x, hi, cuda.blockDim.x):
        x = _term(kind, r, t, t - lo)
        if x > m:
            m = x
    return CB.block_max(sh, m)


@cuda.jit(cache=True)
def query_rmse_queries(scores, labels, ptr, weights, use_w, stats):
    """Block ``q``: query ``q``'s mean residual and ``W`` (``_listwise_terms.query_centre``'s sums)."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=float64)
    q, lo, hi = CB.query_block(ptr)
    if q < 0:
        return  # the whole block: no thread reaches a barrier
    r = _query(scores, labels, weights, use_w, 1.0)
    big_w = _ordered_sum(sh, T_WEIGHT, r, lo, hi)
    total = _ordered_sum(sh, T_RESIDUAL, r, lo, hi)
    if cuda.threadIdx.x == 0:
        stats[RMSE_MEAN, q] = _mean(total, big_w)
        stats[RMSE_W, q] = big_w


@cuda.jit(cache=True)
def softmax_queries(scores, ptr, mass, vw, use_vw, beta, stats):
    """Block ``q``: ``M``, ``top``, ``z`` of query ``q``; ``M = 0`` for a query that contributes
    nothing (fewer than two rows or no target mass)."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=float64)
    q, lo, hi = CB.query_block(ptr)
    if q < 0:
        return  # the whole block: no thread reaches a barrier
    r = _query(scores, mass, vw, use_vw, beta)
    big_m = _ordered_sum(sh, T_VALUE, r, lo, hi)
    if hi - lo < 2 or big_m <= 0.0:  # the same in every thread: the block leaves together
        if cuda.threadIdx.x == 0:
            stats[SM_M, q] = 0.0
        return
    top = _largest(sh, T_LOGIT, r, lo, hi)
    z = _ordered_sum(sh, T_EXP, _with(r, top, 0.0, 0.0, 0.0, r.start), lo, hi)
    if cuda.threadIdx.x == 0:
        stats[SM_M, q] = big_m
        stats[SM_TOP, q] = top
        stats[SM_Z, q] = z


@cuda.jit(cache=True)
def query_rows(loss, scores, qid, values, weights, use_w, beta, stats, out_grad, out_hess):
    """One thread per row: its terms from its query's sums (``loss``: ``RMSE_ROWS``, QueryRMSE's
    centred row, ``values`` the labels; ``SOFTMAX_ROWS``, the softmax row, ``values`` the target
    masses, ``weights`` the value weights); a query with no weight or no mass adds nothing, an
    unknown ``loss`` NaN (the routes pass their own)."""
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    q = qid[i]
    w = _weight(weights, use_w, i)
    if loss == RMSE_ROWS:
        if stats[RMSE_W, q] <= 0.0:
            return
        g, h = _centred_row(scores[i], values[i], w, stats[RMSE_MEAN, q], stats[RMSE_W, q])
    elif loss == SOFTMAX_ROWS:
        if stats[SM_M, q] <= 0.0:
            return
        g, h = _softmax_row(scores[i], w, values[i], beta, stats[SM_TOP, q], stats[SM_Z, q], stats[SM_M, q])
    else:
        g, h = math.nan, math.nan
    out_grad[i] += g
    out_hess[i] += h


@cuda.jit(cache=True)
def xendcg_mass_queries(labels, ptr, qweight, rnd, seed, out_mass):
    """Block ``q``: XENDCG's target masses of round ``rnd`` in query ``q`` (``xendcg_query_mass``: each
    row's ``phi`` drawn from the query's generator in O(log), the sum in row order)."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=float64)
    q, lo, hi = CB.query_block(ptr)
    if q < 0:
        return  # the whole block: no thread reaches a barrier
    r = _with(_query(labels, labels, labels, False, 1.0), 0.0, 0.0, 0.0, 0.0, _stream(seed, q, rnd, hi - lo))
    total = _ordered_sum(sh, T_PHI, r, lo, hi) if hi - lo >= 2 else 0.0
    for t in range(lo + cuda.threadIdx.x, hi, cuda.blockDim.x):
        out_mass[t] = _mass(qweight[q], _term(T_PHI, r, t, t - lo), total) if hi - lo >= 2 else 0.0


@cuda.jit(cache=True)
def xendcg_lightgbm_queries(scores, labels, ptr, rnd, seed, stats):
    """Block ``q``: the sums of LightGBM's XENDCG gradient loop in query ``q``, each in its row order
    (``sum phi``, the partition, the first- then the second-order parameters; phi drawn again in
    O(log) for each, never stored)."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=float64)
    q, lo, hi = CB.query_block(ptr)
    if q < 0:
        return  # the whole block: no thread reaches a barrier
    if hi - lo < 2:
        return
    r = _with(_query(scores, labels, scores, False, 1.0), 0.0, 0.0, 0.0, 0.0, _stream(seed, q, rnd, hi - lo))
    inv = 1.0 / max(_ordered_sum(sh, T_PHI, r, lo, hi), LIGHTGBM_EPSILON)
    top = _largest(sh, T_LOGIT, r, lo, hi)  # no softmax weights (never read)
    z = _ordered_sum(sh, T_EXP, _with(r, top, 0.0, 0.0, 0.0, r.start), lo, hi)
    sum_l1 = _ordered_sum(sh, T_L1, _with(r, top, z, inv, 0.0, r.start), lo, hi)
    sum_l2 = _ordered_sum(sh, T_L2, _with(r, top, z, inv, sum_l1, r.start), lo, hi)
    if cuda.threadIdx.x == 0:
        stats[XE_INV, q] = inv
        stats[XE_TOP, q] = top
        stats[XE_Z, q] = z
        stats[XE_L1, q] = sum_l1
        stats[XE_L2, q] = sum_l2


@cuda.jit(cache=True)
def xendcg_lightgbm_rows(scores, labels, ptr, qid, rnd, seed, weights, use_w, stats, out_grad, out_hess):
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    q = qid[i]
    lo = ptr[q]
    hi = ptr[q + 1]
    if hi - lo < 2:
        return
    x = _skip(_stream(seed, q, rnd, hi - lo), i - lo + 1)
    rho, rest = _share(scores[i], 1.0, 1.0, stats[XE_TOP, q], stats[XE_Z, q])
    term1, param1 = _first(_phi(labels[i], x), stats[XE_INV, q], rho, rest)
    term2, param2 = _second(rho, rest, stats[XE_L1, q], param1)
    g, h = _xendcg_row(_weight(weights, use_w, i), term1 + term2, rho, rest, stats[XE_L2, q], param2)
    out_grad[i] += g
    out_hess[i] += h


# --- the dense pair couplings (driven by _couplings_route) --------------------------------------------
@cuda.jit(cache=True)
def softmax_probs_rows(scores, qid, vw, use_vw, beta, stats, out_p):
    """Each row's ``p`` from the softmax sums the gradient launch left (0 in a query that contributes
    nothing): the factor of its couplings ``beta^2 M p_i p_j``."""
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    q = qid[i]
    out_p[i] = 0.0
    if stats[SM_M, q] > 0.0:
        out_p[i] = _share(scores[i], _weight(vw, use_vw, i), beta, stats[SM_TOP, q], stats[SM_Z, q])[0]


@cuda.jit(cache=True)
def softmax_qscale_queries(stats, beta, n_queries, out_qscale):
    """Each query's coupling scale ``beta^2 M`` (0 for a query that contributes nothing)."""
    q = cuda.grid(1)
    if q < n_queries:
        out_qscale[q] = beta * beta * stats[SM_M, q]


@cuda.jit(device=True)
def _dense_row(ptr, qid, qscale, a):
    """``(end, n_steps)`` of block ``a``'s row: its query's end and how many ``blockDim.x``-wide steps
    the rows ``b > a`` take (0 in a query of coupling scale 0)."""
    q = qid[a]
    end = ptr[q + 1]
    steps = 0
    if qscale[q] > 0.0:
        steps = (end - a - 1 + cuda.blockDim.x - 1) // cuda.blockDim.x
    return end, steps


@cuda.jit(cache=True)
def dense_count_pairs(ptr, qid, factor, qscale, counts):
    """The dense couplings, COUNT pass: block ``a`` (one warp) counts row ``a``'s pairs ``a < b`` of
    coupling ``qscale f_a f_b > 0``."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    a = cuda.blockIdx.x
    if a >= qid.shape[0]:
        return  # the whole block: no thread reaches a barrier
    end, steps = _dense_row(ptr, qid, qscale, a)
    qs = qscale[qid[a]]
    m = 0
    for k in range(steps):
        b = a + 1 + k * cuda.blockDim.x + cuda.threadIdx.x
        if b < end and qs * factor[a] * factor[b] > 0.0:
            m += 1
    total = CB.block_sum(sh, m)
    if cuda.threadIdx.x == 0:
        counts[a] = total


@cuda.jit(cache=True)
def dense_fill_pairs(ptr, qid, factor, qscale, offsets, out_i, out_j, out_c):
    """The dense couplings, FILL pass: block ``a``'s counted pairs from ``offsets[a]``, by ``b``."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    a = cuda.blockIdx.x
    if a >= qid.shape[0]:
        return
    end, steps = _dense_row(ptr, qid, qscale, a)
    qs = qscale[qid[a]]
    t = offsets[a]
    for k in range(steps):
        b = a + 1 + k * cuda.blockDim.x + cuda.threadIdx.x
        t = CB.place_kept(sh, t, a, b, qs * factor[a] * factor[b] if b < end else 0.0, (out_i, out_j, out_c))


#: The kernels that work a block of ``QUERY_THREADS`` threads (a warp) per query or per row (``_launch.launch``).
BLOCK_PER_SEGMENT = (query_rmse_queries, softmax_queries, xendcg_mass_queries, xendcg_lightgbm_queries,
                     dense_count_pairs, dense_fill_pairs)
