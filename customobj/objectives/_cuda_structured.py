"""numba.cuda kernels of Chapelle's structured-output DCG loss: the GPU twins of
``_structured_kernels`` (same float64 arithmetic, same tie-breaking, so the same assignment).

Two launches:

1. ``ideal_rank_rows`` (one thread per row): the row's position in the ideal order ``pi*`` (gain
   descending, then score descending, then row order: ``ideal_order``'s two stable sorts) by counting.
2. ``structured_queries`` (one thread per query): the candidates, the exact assignment
   (``assign_max``: shortest augmenting paths with potentials) and the subgradient, the whole of
   ``_query``. Each query's scratch is its own slice ``[start + q, stop + q + 1)`` of arrays of
   ``n_rows + n_queries`` entries (a query of ``n`` rows needs ``n + 1``).

``A[r] = k - r`` and ``D[r] = 1/log2(2 + r)`` are computed where used (``position_discount``).
"""
import math
from typing import Any, NamedTuple

from .._cuda_runtime import cuda_module
from ._cuda_lambdarank import query_bounds

cuda = cuda_module()

#: ``failed[q]`` after a query whose assignment met non-finite costs (the CPU's ``out_failed``).
FAILED = 1
#: Scratch rows of the float array ``SF[c, base + j]`` and the int array ``SI[c, base + j]``.
SF_U, SF_V, SF_MINV = range(3)
N_SF = 3
SI_P, SI_WAY, SI_USED, SI_CAND, SI_AT = range(5)
N_SI = 5


@cuda.jit(cache=True)
def ideal_rank_rows(scores, gain, ptr, qid, star):
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    start, end = query_bounds(ptr, qid, i)
    gi = gain[i]
    si = scores[i]
    r = 0
    for j in range(start, end):
        gj = gain[j]
        if gj > gi or (gj == gi and (scores[j] > si or (scores[j] == si and j < i))):
            r += 1
    star[start + r] = i - start


@cuda.jit(device=True)
def _cost(scores, gain, start, SI, base, j, a0, d0):
    # The rows of the assignment are the candidates: column j (1-based) is row cand[j - 1].
    row = start + SI[SI_CAND, base + j - 1]
    return -(scores[row] * a0 - gain[row] * d0)


@cuda.jit(device=True)
def _assign(scores, gain, start, c, m, k, SF, SI, base):
    """``assign_max`` over the ``c`` candidates; writes ``at`` (candidate index per position). False
    when a search step found no finite reduced cost."""
    for j in range(c + 1):
        SF[SF_V, base + j] = 0.0
        SI[SI_P, base + j] = 0
        SI[SI_WAY, base + j] = 0
    for i in range(m + 1):
        SF[SF_U, base + i] = 0.0
    for i in range(1, m + 1):
        SI[SI_P, base] = i
        j0 = 0
        for j in range(c + 1):
            SF[SF_MINV, base + j] = math.inf
            SI[SI_USED, base + j] = 0
        while True:
            SI[SI_USED, base + j0] = 1
            i0 = SI[SI_P, base + j0]
            a0 = float(k - (i0 - 1))
            d0 = 1.0 / math.log2(2.0 + (i0 - 1))
            delta = math.inf
            j1 = 0
            for j in range(1, c + 1):
                if SI[SI_USED, base + j] == 0:
                    cur = _cost(scores, gain, start, SI, base, j, a0, d0) - SF[SF_U, base + i0] - SF[SF_V, base + j]
                    if cur < SF[SF_MINV, base + j]:
                        SF[SF_MINV, base + j] = cur
                        SI[SI_WAY, base + j] = j0
                    if SF[SF_MINV, base + j] < delta:
                        delta = SF[SF_MINV, base + j]
                        j1 = j
            for j in range(c + 1):
                if SI[SI_USED, base + j] != 0:
                    SF[SF_U, base + SI[SI_P, base + j]] += delta
                    SF[SF_V, base + j] -= delta
                else:
                    SF[SF_MINV, base + j] -= delta
            if j1 == 0:
                return False
            j0 = j1
            if SI[SI_P, base + j0] == 0:
                break
        while True:
            j1 = SI[SI_WAY, base + j0]
            SI[SI_P, base + j0] = SI[SI_P, base + j1]
            j0 = j1
            if j0 == 0:
                break
    for j in range(1, c + 1):
        if SI[SI_P, base + j] != 0:
            SI[SI_AT, base + SI[SI_P, base + j] - 1] = j - 1
    return True


class Rows(NamedTuple):
    """What ``structured_queries`` reads of the data: gains, query offsets, row weights and each
    query's ideal order (``star``, from ``ideal_rank_rows``)."""

    gain: Any
    ptr: Any
    weights: Any
    use_weights: bool
    star: Any


@cuda.jit(cache=True)
def structured_queries(scores, rows, k, hess, SF, SI, out_grad, out_hess, failed):
    q = cuda.grid(1)
    gain, ptr, weights, use_weights, star = rows
    if q >= ptr.shape[0] - 1:
        return
    start = ptr[q]
    stop = ptr[q + 1]
    failed[q] = 0
    if stop == start:
        return
    n = stop - start
    wq = 1.0
    if use_weights:
        total = 0.0
        for t in range(start, stop):
            total += weights[t]
        wq = total / n
    for t in range(start, stop):
        out_hess[t] += hess * wq
    if n < 2:
        return
    m = min(k, n)
    base = start + q
    # candidates: the m best-scored rows of each gain level, in the ideal order
    c = 0
    run = 0
    for t in range(n):
        if t > 0 and gain[start + star[start + t]] != gain[start + star[start + t - 1]]:
            run = 0
        if run < m:
            SI[SI_CAND, base + c] = star[start + t]
            c += 1
        run += 1
    if not _assign(scores, gain, start, c, m, k, SF, SI, base):
        failed[q] = FAILED
        return
    loss = 0.0
    scale = 1.0
    for r in range(m):
        hat = start + SI[SI_CAND, base + SI[SI_AT, base + r]]
        st = start + star[start + r]
        a = float(k - r)
        d = 1.0 / math.log2(2.0 + r)
        loss += (scores[hat] - scores[st]) * a - (gain[hat] - gain[st]) * d
        scale += (abs(scores[hat]) + abs(scores[st])) * a + (gain[hat] + gain[st]) * d
    if loss <= 1e-12 * scale:
        return  # pi* attains the max: zero loss and zero subgradient
    for r in range(m):
        a = float(k - r)
        out_grad[start + SI[SI_CAND, base + SI[SI_AT, base + r]]] += wq * a
        out_grad[start + star[start + r]] -= wq * a
