"""numba.cuda kernels of LambdaRank / LambdaMART (Burges 2010, sections 3, 4, 7): the GPU drivers of
``_lambdarank_kernels`` / ``_lambdarank_pass``. Every formula (the prefix and ``exp`` tables,
``|dZ|``, ``rho``, lambda, hessian, the norm factor) is the CPU's own, from ``_lambdarank_terms``
(through ``device_function``); the kernels here only split the work by row and by query.

Five launches per call, each over rows or queries (no atomics, results independent of the launch;
why this shape, and how its cost per row is counted: docs/gpu-design.md, "A warp per upper row"):

1. ``rank_rows`` (one thread per row): the row's position in its query sorted by descending score,
   ties by row order (the CPU's stable mergesort), by counting: O(n) per row, no sort.
2. ``setup_queries`` (a block per query): the per-position arrays of ``_setup`` (gain, score,
   weight, ``exp`` table: the block's threads; ERR / MAP / MRR prefixes: its first thread, in the
   CPU's order), the query's cutoffs and flags.
3. ``pair_rows`` (one thread per row): every pair of the row, ``|dZ|`` in O(1) from the prefixes.
   The row sums its own gradient in the CPU's order (pairs with upper rows first, by upper
   position, then its own pairs with lower rows), so the sums equal the CPU's bit for bit where
   ``exp`` / ``log`` agree. As the upper row of its pairs it also sums their ``2 lambda`` into
   ``F[LS]``: the CPU's per-row part of the norm's ``S`` (``_lambdarank_pass``).
4. ``finish_queries`` (one thread per query: the parts ``F[LS]`` added in position order, O(n), the
   CPU's bits) then ``write_rows`` (per row): the ``norm`` factor and hessian scale applied.

The pair couplings (driven by ``_couplings_route``) reuse that scratch, a warp (a one-warp block)
per upper position: ``count_pairs`` (pairs with nonzero ``|dZ|``, a warp sum), ``scan_pairs`` (one
block: the positions' offsets) and ``fill_pairs`` (rows ``i`` above ``j`` by label, coupling ``h``
times the query's hessian factor; placed by a fixed-order warp scan of each step's kept flags), in
the CPU's order: by query, upper, lower position. ``fill_pairs`` also runs the CPU's TERMS pass
(``customobj.clicks.Unbiased``): the same pairs with their terms debiased by the propensities of
the rows' positions (``_lambdarank_terms.unbiased_pair``). No float is summed in another order
than the CPU's.

Positions are 0-based and relative to the query start; every per-position table is a row of ``F``
named by the CPU's ``Channel``, indexed ``start + position``; the data and options travel as one
record, :class:`Inputs`. ``lim`` < 0 marks a query that contributes nothing (< 2 rows, ``qnorm = 0``).
"""
from typing import Any, NamedTuple

import numpy as np
from numba import int64

from .._cuda_runtime import cuda_module, device_function
from . import _lambdarank_terms as LT
from ._block_cuda import QUERY_THREADS, block_scan, block_sum, grid_item
from ._pairwise_terms import tracked_propensities
from ._lambdarank_records import Channel

cuda = cuda_module()

#: Rows of the float per-position scratch (``F[Channel.X, start + position]``): the CPU's channels
#: up to the hessian (the GPU needs no sort or local pair buffers).
N_FLOAT = int(Channel.LAMBDA_H) + 2
#: The GPU's own row of ``F``: each upper position's sum of ``2 lambda`` over its pairs (``pair_rows``).
LS = N_FLOAT - 1
# plain ints: numba's CUDA target takes no IntEnum as an index
G, S, W, A = int(Channel.GAIN), int(Channel.SCORE), int(Channel.WEIGHT), int(Channel.A)
LG, LH = int(Channel.LAMBDA_G), int(Channel.LAMBDA_H)
_MRR = int(LT.Metric.MRR)
#: Threads of ``scan_pairs``' one block (a power of two): each sums ``n / SCAN_THREADS`` segments.
SCAN_THREADS = 1024
#: Rows of the int per-query scratch (``Q[c, query]``).
Q_LIM, Q_KK, Q_FIRST, Q_SECOND, Q_SPREAD = range(5)
N_QINT = 5

_fill_prefixes, _exp_entry = device_function(LT.fill_prefixes), device_function(LT.exp_entry)
_dz, _sigmoid, _damped = device_function(LT.pair_dz), device_function(LT.pair_sigmoid), device_function(LT.damped)
_lambda_hess, _pair_weight = device_function(LT.lambda_hess), device_function(LT.pair_weight)
_norm_factor = device_function(LT.norm_factor)
_unbiased_pair, _tracked = device_function(LT.unbiased_pair), device_function(tracked_propensities)


class Inputs(NamedTuple):
    """What the LambdaRank kernels read: the prepared data's device arrays and the objective's options."""

    ptr: Any  # int64 query offsets
    qid: Any  # the query of each row
    row_gain: Any
    qnorm: Any
    disc: Any
    weights: Any
    use_weights: bool
    metric: int  # a Metric code (checked by the seam)
    k: int
    trunc: int
    sigma: float
    norm: bool


class _Cut(NamedTuple):
    """One query's cuts as the pair functions read them."""

    start: int
    n: int
    lim: int  # < 0: the query contributes nothing
    kk: int
    first: int
    second: int
    a_first: float
    qn: float
    damp: bool


@cuda.jit(device=True)
def query_bounds(ptr, qid, i):
    """Row ``i``'s query as the row range ``start, end`` (one-thread-per-row kernels rank a row among
    its query's rows)."""
    q = qid[i]
    return ptr[q], ptr[q + 1]


@cuda.jit(device=True)
def rank_in_query(keys, use_keys, scores, start, end, i):
    """Row ``i``'s position among the rows ``start:end`` sorted by descending ``keys`` (when
    ``use_keys``), then descending score, ties by row order (a stable sort's), by counting: O(n)."""
    ki = keys[i] if use_keys else 0.0
    si = scores[i]
    r = 0
    for j in range(start, end):
        kj = keys[j] if use_keys else 0.0
        if kj > ki or (kj == ki and (scores[j] > si or (scores[j] == si and j < i))):
            r += 1
    return r


@cuda.jit(device=True)
def ranked_row(keys, use_keys, scores, ptr, qid):
    """``(i, start, r)``: this thread's row ``i`` (-1 past the last), its query's start and its
    :func:`rank_in_query` (the one-thread-per-row ranking kernels' shared preamble)."""
    i = grid_item(scores.shape[0])
    if i < 0:
        return -1, 0, 0
    start, end = query_bounds(ptr, qid, i)
    return i, start, rank_in_query(keys, use_keys, scores, start, end, i)


@cuda.jit(cache=True)
def rank_rows(scores, ptr, qid, order, pos):
    i, start, r = ranked_row(scores, False, scores, ptr, qid)
    if i >= 0:
        pos[i] = r
        order[start + r] = i


def scratch(data, n, nq):
    """``(order, pos, F, Q, factor)``: one LambdaRank pass's device scratch in ``data`` (a
    ``devices.DeviceData``), reused every round; the coupling launches read what the gradients left."""
    return (data.scratch("order", (n,), np.int64), data.scratch("pos", (n,), np.int64),
            data.scratch("lambdarank_f", (N_FLOAT, max(n, 1)), np.float64),
            data.scratch("lambdarank_q", (N_QINT, max(nq, 1)), np.int64),
            data.scratch("lambdarank_factor", (2, max(nq, 1)), np.float64))


@cuda.jit(cache=True)
def setup_queries(scores, inp, order, F, Q):
    """Block ``q``: query ``q``'s per-position tables (gain, score, weight and ``exp`` entries by the
    block's threads, one position each in turn) and, by its first thread, the prefixes and cuts."""
    q = cuda.blockIdx.x
    ptr = inp.ptr
    if q >= ptr.shape[0] - 1:
        return
    tid = cuda.threadIdx.x
    start = ptr[q]
    n = ptr[q + 1] - start
    if n < 2 or inp.qnorm[q] == 0.0:
        # every field set: ``_cut`` reads them all (the scratch is reused, and a stale ``first`` indexed out of bounds)
        if tid == 0:
            for r in range(N_QINT):
                Q[r, q] = 0
            Q[Q_LIM, q] = -1
        return
    for r in range(tid, n, cuda.blockDim.x):
        row = order[start + r]
        F[G, start + r] = inp.row_gain[row]
        F[S, start + r] = scores[row]
        F[W, start + r] = inp.weights[row] if inp.use_weights else 1.0
    cuda.syncthreads()  # the exp entries read the first position's score
    for r in range(tid, n, cuda.blockDim.x):
        _exp_entry(F, start, r, inp.sigma)
    cuda.syncthreads()
    if tid != 0:
        return
    kk = min(inp.k, n)
    lim = min(kk, inp.trunc)
    first, second = _fill_prefixes(inp.metric, F, start, n, kk)
    if inp.metric == _MRR:
        lim = min(lim, first + 1)  # below the first relevant row RR is unchanged
    Q[Q_LIM, q] = lim
    Q[Q_KK, q] = kk
    Q[Q_FIRST, q] = first
    Q[Q_SECOND, q] = second
    Q[Q_SPREAD, q] = 1 if F[S, start] != F[S, start + n - 1] else 0


@cuda.jit(device=True)
def _cut(inp, q, F, Q):
    """Query ``q``'s :class:`_Cut` (``lim < 0``: no pairs)."""
    start = inp.ptr[q]
    n = inp.ptr[q + 1] - start
    first = Q[Q_FIRST, q]
    a_first = F[A, start + first] if first < n else 0.0
    return _Cut(start, n, Q[Q_LIM, q], Q[Q_KK, q], first, Q[Q_SECOND, q], a_first, inp.qnorm[q],
                inp.norm and Q[Q_SPREAD, q] == 1)


@cuda.jit(device=True)
def _pair_dz(inp, F, c, a, b):
    """``|dZ| qnorm`` of the pair at positions ``a < b`` (0 for equal gains)."""
    ga = F[G, c.start + a]
    gb = F[G, c.start + b]
    if ga == gb:
        return 0.0
    return _dz(inp.metric, F, c.start, a, b, ga, gb, c.kk, c.first, c.second, c.a_first, inp.disc) * c.qn


@cuda.jit(device=True)
def _pair_parts(inp, F, c, a, b, dz):
    """``(sg, d, |dZ|, lambda, pw, h)`` of the pair at positions ``a < b`` with ``|dZ| qnorm = dz != 0``:
    its orientation, score distance and damped ``|dZ|``, the unweighted ``lambda``, the pair weight
    and the weighted ``h`` (the CPU's ``_metric_pairs``)."""
    sigma = inp.sigma
    sg, d, rho = _sigmoid(F, c.start, a, b, F[G, c.start + a], F[G, c.start + b], sigma)
    pw = _pair_weight(F[W, c.start + a], F[W, c.start + b])
    dz = _damped(dz, c.damp, d)
    lam, h = _lambda_hess(dz, rho, pw, sigma, sigma * sigma)
    return sg, d, dz, lam, pw, h


@cuda.jit(device=True)
def _pair(inp, F, c, a, b):
    """``(lambda, pw sg, h)`` of the pair at positions ``a < b``: the unweighted ``lambda``, the
    factor that weighs and signs it for the lower row (``grad_b += lambda pw sg``, ``grad_a -=``),
    and the weighted ``h``; zeros when ``|dZ| = 0``."""
    dz = _pair_dz(inp, F, c, a, b)
    if dz == 0.0:
        return 0.0, 0.0, 0.0
    sg, _, _, lam, pw, h = _pair_parts(inp, F, c, a, b, dz)
    return lam, pw * sg, h


@cuda.jit(cache=True)
def pair_rows(inp, pos, F, Q):
    i = cuda.grid(1)
    if i >= inp.qid.shape[0]:
        return
    c = _cut(inp, inp.qid[i], F, Q)
    me = pos[i]
    F[LG, c.start + me] = 0.0
    F[LH, c.start + me] = 0.0
    F[LS, c.start + me] = 0.0
    if c.lim < 0:
        return
    lg = 0.0
    lh = 0.0
    # Pairs where this row is the lower position b: upper positions a in increasing order.
    for a in range(min(me, c.lim)):
        lam, pwsg, h = _pair(inp, F, c, a, me)
        lg += lam * pwsg
        lh += h
    acc_g = 0.0
    acc_h = 0.0
    ls = 0.0
    if me < c.lim:
        for b in range(me + 1, c.n):
            lam, pwsg, h = _pair(inp, F, c, me, b)
            acc_g -= lam * pwsg
            acc_h += h
            ls += 2.0 * lam
    F[LS, c.start + me] = ls
    F[LG, c.start + me] = lg + acc_g
    F[LH, c.start + me] = lh + acc_h


@cuda.jit(cache=True)
def finish_queries(inp, hess_scale, F, Q, factor):
    """One thread per query: LightGBM's ``norm`` factor ``log2(1 + S) / S`` of query ``q``
    (``S = sum 2 lambda``, unweighted): the upper positions' parts ``F[LS]`` (``pair_rows``) added in
    position order, the CPU's order, so ``S`` is the CPU's bit for bit."""
    q = cuda.grid(1)
    if q >= inp.ptr.shape[0] - 1:
        return
    total = 0.0
    if inp.norm and Q[Q_LIM, q] >= 0:
        c = _cut(inp, q, F, Q)
        for a in range(min(c.n - 1, c.lim)):
            total += F[LS, c.start + a]
    f = _norm_factor(inp.norm, total)
    factor[0, q] = f
    factor[1, q] = f * hess_scale


@cuda.jit(cache=True)
def write_rows(qid, pos, ptr, F, Q, factor, out_grad, out_hess):
    i = grid_item(qid.shape[0])
    if i < 0 or Q[Q_LIM, qid[i]] < 0:
        return
    q = qid[i]
    t = ptr[q] + pos[i]
    out_grad[i] += factor[0, q] * F[LG, t]
    out_hess[i] += factor[1, q] * F[LH, t]


@cuda.jit(device=True)
def _upper(inp, F, Q, p):
    """``(cut, a, n_steps)`` of block ``p``'s upper position ``a`` in its query: ``blockDim.x``-wide
    steps over its lower positions (0: no pairs: a skipped query, ``a`` past the truncation or last)."""
    q = inp.qid[p]
    c = _cut(inp, q, F, Q)
    a = p - c.start
    steps = 0
    if c.lim >= 0 and a < min(c.n - 1, c.lim):
        steps = (c.n - a - 1 + cuda.blockDim.x - 1) // cuda.blockDim.x
    return c, a, steps


@cuda.jit(cache=True)
def count_pairs(inp, F, Q, counts):
    """Block ``p`` (one warp) per sorted position ``p = start + a``: upper position ``a``'s pairs with
    nonzero ``|dZ|``, its lanes taking the lower positions ``blockDim.x`` at a time."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    p = cuda.blockIdx.x
    if p >= inp.qid.shape[0]:
        return  # the whole block: no thread reaches a barrier
    c, a, steps = _upper(inp, F, Q, p)
    m = 0
    for k in range(steps):
        b = a + 1 + k * cuda.blockDim.x + cuda.threadIdx.x
        if b < c.n and _pair_dz(inp, F, c, a, b) != 0.0:
            m += 1
    total = block_sum(sh, m)
    if cuda.threadIdx.x == 0:
        counts[p] = total


@cuda.jit(cache=True)
def scan_pairs(counts, nq, offsets):
    """One block (``SCAN_THREADS`` threads at most): ``offsets[q]`` = pairs of the segments before
    ``q`` (``offsets[nq]``: all of them). Thread ``t`` sums a run of ``nq / blockDim.x`` consecutive
    segments, a block scan gives each run its start, and each thread writes its run's offsets:
    integers, so the same as one thread's running sum."""
    sh = cuda.shared.array(SCAN_THREADS, dtype=int64)
    if cuda.blockIdx.x != 0:
        return
    t = cuda.threadIdx.x
    per = (nq + cuda.blockDim.x - 1) // cuda.blockDim.x
    lo = min(nq, t * per)
    hi = min(nq, lo + per)
    s = 0
    for q in range(lo, hi):
        s += counts[q]
    run, total = block_scan(sh, s)
    for q in range(lo, hi):
        offsets[q] = run
        run += counts[q]
    if t == 0:
        offsets[nq] = total


@cuda.jit(cache=True)
def fill_pairs(inp, order, F, Q, factor, offsets, terms, deb, out_i, out_j, out_c):
    """Block ``p`` (one warp) per sorted position: the pairs of upper position ``a`` from
    ``offsets[p]``, by lower position: ``out_i`` the row of the higher label, ``out_j`` the other,
    ``out_c`` the coupling ``h`` times the hessian factor ``factor[1, q]``. With ``terms`` (the
    CPU's TERMS pass, after ``rank_rows`` and ``setup_queries`` only; ``factor[1]`` the hessian
    scale), each pair's terms debiased by ``t+`` of the better row's position and ``t-`` of the
    other's (``_lambdarank_terms.unbiased_pair``; ``deb`` a ``_lambdarank_records.Debias`` of device
    arrays) go to ``deb.lam`` / ``deb.cost`` / ``deb.est`` and the debiased hessian to ``out_c``;
    unnormalised."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    p = cuda.blockIdx.x
    if p >= inp.qid.shape[0]:
        return
    c, a, steps = _upper(inp, F, Q, p)
    hf = factor[1, inp.qid[p]]
    t = offsets[p]
    # the lower positions ``blockDim.x`` at a time; a fixed-order scan of the kept flags places the
    # kept pairs in the CPU's order (upper, then lower position)
    for k in range(steps):
        b = a + 1 + k * cuda.blockDim.x + cuda.threadIdx.x
        dz = _pair_dz(inp, F, c, a, b) if b < c.n else 0.0
        before, kept = block_scan(sh, 1 if dz != 0.0 else 0)
        if dz != 0.0:
            _fill_one(inp, order, F, c, a, b, dz, hf, t + before, terms, deb, (out_i, out_j, out_c))
        t += kept


@cuda.jit(cache=True)
def query_offsets(ptr, position_offsets, out):
    """``out[q]`` = the pairs before query ``q``'s (``q <= n_queries``), for ``clicks.Unbiased``."""
    q = cuda.grid(1)
    if q < ptr.shape[0]:
        out[q] = position_offsets[ptr[q]]


@cuda.jit(device=True)
def _fill_one(inp, order, F, c, a, b, dz, hf, t, terms, deb, out):
    """:func:`fill_pairs`' pair at positions ``a < b`` (``|dZ| qnorm = dz != 0``) written at ``t`` of
    ``out = (i, j, coupling)``."""
    out_i, out_j, out_c = out
    sg, d, dz, lam, _, h = _pair_parts(inp, F, c, a, b, dz)
    hi, lo = (a, b) if sg > 0 else (b, a)
    i = order[c.start + hi]
    j = order[c.start + lo]
    if terms:
        _, tp, tm = _tracked(deb.pos[i], deb.pos[j], deb.tplus, deb.tminus)
        lam, h, cost, est = _unbiased_pair(lam, h, dz, d, inp.sigma, tp, tm, deb.swapped)
        deb.lam[t] = lam
        deb.cost[t] = cost
        deb.est[t] = est
    out_i[t] = i
    out_j[t] = j
    out_c[t] = h * hf


#: The kernels that work a block of ``QUERY_THREADS`` threads per segment (``_launch.launch``): a
#: query (``setup_queries``) or an upper position (``count_pairs``, ``fill_pairs``).
BLOCK_PER_SEGMENT = (setup_queries, count_pairs, fill_pairs)
