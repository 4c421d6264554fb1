"""numba.cuda kernels of Chapelle's structured-output DCG loss: the GPU drivers of
``_structured_kernels`` (the same per-query code and tie-breaking, so the same assignment).

Two launches:

1. ``ideal_rank_rows`` (one thread per row): the row's position in the ideal order ``pi*`` (gain
   descending, then score descending, then row order: ``ideal_order``'s two stable sorts) by counting.
2. ``structured_queries`` (a block, one warp, per query): the query's mean weight (summed in row
   order, ``_block_cuda.add_staged``) and its rows' hessians by the block's threads; then, by its
   thread 0, the candidates, the exact assignment and the subgradient, the CPU's own steps
   (``_structured_terms``: ``select_candidates``, ``assign_core``, ``assignment_loss``,
   ``position_weights``), and the query's loss ``w_q R_q`` into ``per_query[q]`` (``MultiObjective``'s
   per-label GPU cost, ``grad_hess_loss``: ``structured_dcg_loss``' per-query value, the same bits;
   0 for a query of fewer than two rows or whose ideal ranking attains the max). Each query's scratch is its own slice
   ``[start + q, stop + q + 1)`` of arrays of ``n_rows + n_queries`` entries (a query of ``n`` rows
   needs ``n + 1``).
"""
from typing import Any, NamedTuple

from numba import float64

from .._cuda_runtime import cuda_module, device_function
from . import _block_cuda as CB
from ._block_cuda import QUERY_THREADS
from ._lambdarank_cuda import ranked_row
from . import _structured_terms as ST

cuda = cuda_module()

#: ``failed[q]`` after a query whose assignment met non-finite costs (the CPU's ``out_failed``).
FAILED = 1
#: Scratch rows of the float array ``SF[c, base + j]`` and the int array ``SI[c, base + j]``.
SF_U, SF_V, SF_MINV, SF_A, SF_D = range(5)
N_SF = 5
SI_P, SI_WAY, SI_USED, SI_CAND, SI_AT = range(5)
N_SI = 5


class Rows(NamedTuple):
    """What ``structured_queries`` reads of the data: gains, query offsets, row weights and each
    query's ideal order (``star``, from ``ideal_rank_rows``)."""

    gain: Any
    ptr: Any
    weights: Any
    use_weights: bool
    star: Any


_select, _assign, _loss = (device_function(ST.select_candidates), device_function(ST.assign_core),
                           device_function(ST.assignment_loss))
_position_weights = device_function(ST.position_weights)


@cuda.jit(cache=True)
def ideal_rank_rows(scores, gain, ptr, qid, star):
    i, start, r = ranked_row(gain, True, scores, ptr, qid)  # label first, then score
    if i >= 0:
        star[start + r] = i - start


@cuda.jit(device=True)
def _query_weight(sh, weights, use_weights, start, stop):
    """The query's mean row weight (1 without weights or rows), in every thread: the weights summed
    in row order (staged a warp's width at a time, added by thread 0: the CPU's sum)."""
    if not use_weights or stop == start:
        return 1.0
    total = 0.0
    for base in range(start, stop, cuda.blockDim.x):
        if base + cuda.threadIdx.x < stop:
            sh[cuda.threadIdx.x] = weights[base + cuda.threadIdx.x]
        total = CB.add_staged(sh, total, min(cuda.blockDim.x, stop - base))
    return CB.broadcast(sh, total) / (stop - start)


@cuda.jit(cache=True)
def structured_queries(scores, rows, k, hess, SF, SI, out_grad, out_hess, failed, per_query):
    """Block ``q``: query ``q``'s weight and hessian by the block's threads, then its candidates,
    assignment, subgradient and loss (``per_query[q]``) by thread 0 (the exact assignment is a
    sequential algorithm: the CPU's own code, run as it is)."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=float64)
    gain, ptr, weights, use_weights, star = rows
    q, start, stop = CB.query_block(ptr)
    if q < 0:
        return  # the whole block: no thread reaches a barrier
    wq = _query_weight(sh, weights, use_weights, start, stop)
    for t in range(start + cuda.threadIdx.x, stop, cuda.blockDim.x):
        out_hess[t] += hess * wq
    n = stop - start
    if cuda.threadIdx.x != 0:
        return
    failed[q] = 0
    per_query[q] = 0.0
    if n < 2:
        return
    m = min(k, n)
    base = start + q  # this query's slice of the scratch: n + 1 entries
    s = scores[start:stop]
    g = gain[start:stop]
    st = star[start:stop]
    A = SF[SF_A, base:base + m]
    D = SF[SF_D, base:base + m]
    _position_weights(k, m, A, D)
    c = _select(st, g, m, SI[SI_CAND, base:base + n])
    cand = SI[SI_CAND, base:base + c]
    at = SI[SI_AT, base:base + m]
    w = base + c + 1
    if not _assign(s, g, cand, A, D, SF[SF_U, base:base + m + 1], SF[SF_V, base:w], SF[SF_MINV, base:w],
                   SI[SI_P, base:w], SI[SI_WAY, base:w], SI[SI_USED, base:w], at):
        failed[q] = FAILED
        return
    loss, scale = _loss(s, g, cand, at, st, A, D)
    if loss <= 1e-12 * scale:
        return  # pi* attains the max: zero loss and zero subgradient
    per_query[q] = wq * loss  # structured_dcg_loss' per-query value
    for r in range(m):
        a = A[r]
        out_grad[start + cand[at[r]]] += wq * a
        out_grad[start + st[r]] -= wq * a


#: The kernels that work a block of ``QUERY_THREADS`` threads (a warp) per query (``_launch.launch``).
BLOCK_PER_SEGMENT = (structured_queries,)
