"""numba.cuda kernels of the query-level losses' costs beside their gradients (their
``DeviceRoute.grad_hess_loss``, ``MultiObjective``'s per-label GPU costs): each query's loss of the
softmax cross-entropy (ListNet, QuerySoftMax) and of QueryRMSE, the CPU's per-query value
(``_listwise_kernels.softmax_ce_loss``, ``query_rmse_loss``) with the same bits under the simulator.

A block (one warp, ``_block_cuda.QUERY_THREADS``) per query, no atomics, float64, as ``_listwise_cuda``'s
per-query kernels: the block's threads compute a warp's width of rows' terms at a time (the ``exp`` and
``log`` of the softmax, the squared residuals) and its thread 0 adds them in row order
(``_block_cuda.add_staged``), the CPU's running sum. The row terms are the CPU's own scalar functions
(``_listwise_terms``: ``log_ratio``, ``exp_log_ratio``, ``softmax_ce_row``, ``centred_loss``, through
``device_function``). A term the CPU skips (a row without mass, out of the softmax) is staged as
``+0.0``, which changes no sum of these non-negative terms.

Both kernels read the per-query sums their loss's gradient launch just wrote (``_listwise_cuda``'s
``stats``: the softmax's target mass ``M``, 0 for a query that contributes nothing; QueryRMSE's mean
residual), the CPU's values bit for bit.

The softmax's largest logit ``k`` (the CPU's first row whose ``log_ratio`` against the running
choice is positive, a walk that depends on its order) is found by thread 0 in row order; only then
are the ``exp`` terms computed in parallel.
"""
import math

from numba import float64

from .._cuda_runtime import cuda_module, device_function
from . import _block_cuda as CB
from . import _listwise_terms as LT
from ._block_cuda import QUERY_THREADS
from ._listwise_cuda import RMSE_MEAN, SM_M

cuda = cuda_module()

_weight = device_function(LT.row_weight)
_log_ratio, _exp_log_ratio = device_function(LT.log_ratio), device_function(LT.exp_log_ratio)
_ce_row, _centred_loss = device_function(LT.softmax_ce_row), device_function(LT.centred_loss)


@cuda.jit(device=True)
def _top_row(scores, vw, use_vw, beta, lo, hi):
    """The CPU's ``k`` (``_listwise_kernels._query_ce_loss``): the first row in the softmax whose log-ratio
    against the choice so far is positive, walked in row order; -1 when no row is in the softmax."""
    k = -1
    for j in range(lo, hi):
        vj = _weight(vw, use_vw, j)
        if vj > 0.0 and (k < 0 or _log_ratio(scores[j], scores[k], vj, _weight(vw, use_vw, k), use_vw, beta) > 0.0):
            k = j
    return k


@cuda.jit(cache=True)
def softmax_ce_loss_queries(scores, ptr, mass, vw, use_vw, beta, stats, out):
    """Block ``q``: ``out[q] = -sum_i m_i log p_i`` of query ``q`` (``_listwise_kernels._query_ce_loss``),
    0 for a query that contributes nothing (``stats[SM_M, q] = 0``: fewer than two rows or no mass)."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=float64)
    q, lo, hi = CB.query_block(ptr)
    if q < 0:
        return  # the whole block: no thread reaches a barrier
    k = -1
    if stats[SM_M, q] > 0.0 and cuda.threadIdx.x == 0:
        k = _top_row(scores, vw, use_vw, beta, lo, hi)
    k = int(CB.broadcast(sh, float(k)))  # exact: row numbers below 2^53
    if k < 0:  # the same in every thread: the block leaves together
        if cuda.threadIdx.x == 0:
            out[q] = 0.0
        return
    vk = _weight(vw, use_vw, k)
    rest = 0.0
    for base in range(lo, hi, cuda.blockDim.x):
        t = base + cuda.threadIdx.x
        if t < hi:
            vt = _weight(vw, use_vw, t)
            sh[cuda.threadIdx.x] = _exp_log_ratio(scores[t], scores[k], vt, vk, use_vw, beta) if (
                t != k and vt > 0.0) else 0.0
        rest = CB.add_staged(sh, rest, min(cuda.blockDim.x, hi - base))
    log_z = math.log1p(CB.broadcast(sh, rest))
    total = 0.0
    for base in range(lo, hi, cuda.blockDim.x):
        t = base + cuda.threadIdx.x
        if t < hi:
            r = 0.0
            if t != k and mass[t] > 0.0:
                r = _log_ratio(scores[t], scores[k], _weight(vw, use_vw, t), vk, use_vw, beta)
            sh[cuda.threadIdx.x] = _ce_row(mass[t], log_z, r, t == k)
        total = CB.add_staged(sh, total, min(cuda.blockDim.x, hi - base))
    if cuda.threadIdx.x == 0:
        out[q] = total


@cuda.jit(cache=True)
def query_rmse_loss_queries(scores, labels, ptr, weights, use_w, stats, out):
    """Block ``q``: ``out[q] = sum_i w_i (y_i - s_i - mu_q)^2 / 2`` of query ``q``
    (``_listwise_kernels.query_rmse_loss``), ``mu_q = stats[RMSE_MEAN, q]``."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=float64)
    q, lo, hi = CB.query_block(ptr)
    if q < 0:
        return  # the whole block: no thread reaches a barrier
    mean = stats[RMSE_MEAN, q]
    total = 0.0
    for base in range(lo, hi, cuda.blockDim.x):
        t = base + cuda.threadIdx.x
        if t < hi:
            sh[cuda.threadIdx.x] = _centred_loss(scores[t], labels[t], _weight(weights, use_w, t), mean)
        total = CB.add_staged(sh, total, min(cuda.blockDim.x, hi - base))
    if cuda.threadIdx.x == 0:
        out[q] = total


#: The kernels that run a block per query (``_launch.launch`` gives them ``n`` blocks).
BLOCK_PER_SEGMENT = (softmax_ce_loss_queries, query_rmse_loss_queries)
