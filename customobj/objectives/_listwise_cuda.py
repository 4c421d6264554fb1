"""numba.cuda kernels of the query-level losses: QueryRMSE, the softmax cross-entropy of ListNet /
QuerySoftMax / XENDCG, and LightGBM's XENDCG gradients; the GPU twins of ``_listwise_kernels``.

Every formula comes from ``_listwise_terms`` (through ``_cuda_runtime.device_function``): these
kernels are only the GPU-shaped drivers. Each loss is two launches, no atomics, float64 throughout:

1. one thread per query walks its rows in order and writes the query's sums to a small
   ``(channel, query)`` scratch (QueryRMSE: mean residual and ``W``; softmax: ``M``, ``top``, ``z``;
   LightGBM's XENDCG: ``1 / sum phi``, ``top``, ``z`` and its two parameter sums). The sums run in the
   CPU's row order, so they equal the CPU's bit for bit where the device's ``exp`` agrees.
2. one thread per row (coalesced reads and writes) adds its own gradient and hessian from those
   sums. A row's XENDCG noise is recomputed in O(log) from its query's generator (``lcg_skip``),
   not stored.

XENDCG's target masses (``xendcg_mass_queries``, one thread per query) draw LightGBM's per-query
generator in row order, as the CPU does: the same seeds give the same noise on both.

The couplings of these losses (``TreeBooster(device="cuda")``'s OLE criteria, driven by
``_couplings_route``) are dense: every pair ``a < b`` of a query, ``c = qscale_q f_a f_b``, with ``f = p``
and ``qscale = beta^2 M`` for the softmax losses (from the sums the gradient launch left) and
QueryRMSE's label-only ``f = w``, ``qscale = 1 / W``. ``dense_count_pairs`` then ``dense_fill_pairs``
keep those with ``c > 0``, in the CPU's order, as the CPU booster does: a warp (a one-warp block of
``_lambdarank_cuda.QUERY_THREADS``) per row ``a``, its lanes taking the rows ``b > a`` of its query a
warp's width at a time (a warp sum counts, a fixed-order warp scan places), so a long query is as
many warps as rows, not one thread's O(n^2) (issue 42, item 2; docs/gpu-design.md).
"""
import math

from numba import int64

from .._cuda_runtime import cuda_module, device_function
from . import _listwise_terms as LT
from ._lambdarank_cuda import QUERY_THREADS, _block_scan, _block_sum
from ._noise import lcg_next, lcg_skip
from ._listwise_kernels import LIGHTGBM_EPSILON, range_sum

cuda = cuda_module()

_weight = device_function(LT.row_weight)
_centre = device_function(LT.query_centre)
_centred_row = device_function(LT.centred_row)
_range_sum = device_function(range_sum)
_log_partition = device_function(LT.log_partition)
_share = device_function(LT.softmax_share)
_softmax_row = device_function(LT.softmax_row)
_stream = device_function(LT.xendcg_stream)
_phi = device_function(LT.xendcg_phi)
_query_mass = device_function(LT.xendcg_query_mass)
_first = device_function(LT.xendcg_first)
_second = device_function(LT.xendcg_second)
_xendcg_row = device_function(LT.xendcg_row)
_next = device_function(lcg_next)
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


@cuda.jit(cache=True)
def query_rmse_queries(scores, labels, ptr, weights, use_w, stats):
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    mean, big_w = _centre(scores, labels, weights, use_w, ptr[q], ptr[q + 1])
    stats[RMSE_MEAN, q] = mean
    stats[RMSE_W, q] = big_w


@cuda.jit(cache=True)
def softmax_queries(scores, ptr, mass, vw, use_vw, beta, stats):
    """``M``, ``top``, ``z`` of each query; ``M = 0`` for a query that contributes nothing (fewer than
    two rows or no target mass)."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    lo = ptr[q]
    hi = ptr[q + 1]
    big_m = _range_sum(mass, lo, hi)
    if hi - lo < 2 or big_m <= 0.0:
        stats[SM_M, q] = 0.0
        return
    top, z = _log_partition(scores, vw, use_vw, beta, lo, hi)
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
    """XENDCG's target masses of round ``rnd``, one thread per query (its generator, in row order)."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    _query_mass(labels, ptr[q], ptr[q + 1], q, rnd, seed, qweight[q], out_mass)


@cuda.jit(cache=True)
def xendcg_lightgbm_queries(scores, labels, ptr, rnd, seed, stats):
    """The sums of LightGBM's XENDCG gradient loop, in its order: three walks over the query's rows
    from the round's generator state (phi is drawn again on each walk, never stored)."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    lo = ptr[q]
    hi = ptr[q + 1]
    if hi - lo < 2:
        return
    start = _stream(seed, q, rnd, hi - lo)
    x = start
    total = 0.0
    for t in range(lo, hi):
        x = _next(x)
        total += _phi(labels[t], x)
    inv = 1.0 / max(total, LIGHTGBM_EPSILON)
    top, z = _log_partition(scores, scores, False, 1.0, lo, hi)  # no softmax weights (never read)
    sum_l1 = 0.0
    x = start
    for t in range(lo, hi):
        x = _next(x)
        rho, rest = _share(scores[t], 1.0, 1.0, top, z)
        sum_l1 += _first(_phi(labels[t], x), inv, rho, rest)[1]
    sum_l2 = 0.0
    x = start
    for t in range(lo, hi):
        x = _next(x)
        rho, rest = _share(scores[t], 1.0, 1.0, top, z)
        param1 = _first(_phi(labels[t], x), inv, rho, rest)[1]
        sum_l2 += _second(rho, rest, sum_l1, param1)[1]
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
def _keep_pair(out_i, out_j, out_c, at, kept, a, b, c):
    """The count of kept pairs after pair ``(a, b, c)`` when ``c > 0``: the COUNT/FILL passes of the
    couplings (written at ``at + kept`` when ``at >= 0``; a COUNT pass passes ``at < 0``)."""
    if c <= 0.0:
        return kept
    if at >= 0:
        out_i[at + kept] = a
        out_j[at + kept] = b
        out_c[at + kept] = c
    return kept + 1


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
    total = _block_sum(sh, m)
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
        c = qs * factor[a] * factor[b] if b < end else 0.0
        before, kept = _block_scan(sh, 1 if c > 0.0 else 0)
        if c > 0.0:
            out_i[t + before] = a
            out_j[t + before] = b
            out_c[t + before] = c
        t += kept


#: The kernels that work a block of ``QUERY_THREADS`` threads (a warp) per row (``_launch.launch``).
BLOCK_PER_SEGMENT = (dense_count_pairs, dense_fill_pairs)
