"""numba.cuda kernels of LambdaRank / LambdaMART (Burges 2010, sections 3, 4, 7): the GPU twins of
``_lambdarank_kernels`` / ``_lambdarank_pass``, with the same float64 arithmetic.

Five launches per call, each over rows or queries (no atomics, results independent of the launch):

1. ``rank_rows`` (one thread per row): the row's position in its query sorted by descending score,
   ties by row order (the CPU's stable mergesort), by counting: O(n) per row, no sort.
2. ``setup_queries`` (one thread per query): the per-position arrays of ``_setup`` (gain, score,
   weight, ``exp`` table, ERR / MAP / MRR prefixes), the query's cutoffs and flags.
3. ``pair_rows`` (one thread per row): every pair of the row, ``|dZ|`` in O(1) from the prefixes.
   The row sums its own gradient in the CPU's order (pairs with upper rows first, by upper
   position, then its own pairs with lower rows), so the sums equal the CPU's bit for bit where
   ``exp`` / ``log`` agree.
4. ``finish_queries`` (per query) then ``write_rows`` (per row): LightGBM's ``norm`` factor and the
   convention's hessian scale, added into the outputs. The factor's ``sum 2 lambda`` is one running
   sum over the query's pairs in the CPU's order (by upper, then lower position), so it too equals
   the CPU's bit for bit (a sum of per-row partial sums differed in the last bits, and with it the
   couplings and the trees grown from them).

The pair couplings (``_lambdarank_kernels.lambdarank_couplings``' COUNT and FILL passes; driven by
``_cuda_couplings``) reuse the scratch of launches 1, 2 and 4, one thread per query:
``count_pairs`` (pairs with nonzero ``|dZ|``), ``scan_pairs`` (one thread: the queries' offsets, in
query order) and ``fill_pairs`` (rows ``i`` above ``j`` by label, coupling ``h`` times the query's
hessian factor), in the CPU's order: by query, upper position, lower position.

Positions are 0-based and relative to the query start; every per-position array is indexed
``start + position``. Query flags: ``lim`` < 0 marks a query that contributes nothing (fewer than
two rows or ``qnorm = 0``).
"""
import math

import numpy as np

from .._cuda_runtime import cuda_module
from ._lambdarank_pass import ERR, MAP, MRR, NDCG

cuda = cuda_module()

#: Rows of the float per-position scratch (``F[c, start + position]``).
G, S, W, E, P, A, C, PS, LG, LH = range(10)
N_FLOAT = 10
#: Rows of the int per-query scratch (``Q[c, query]``).
Q_LIM, Q_KK, Q_FIRST, Q_SECOND, Q_SPREAD = range(5)
N_QINT = 5
#: Smallest ``exp`` table entry used directly (``_lambdarank_pass._rho``).
_E_FLOOR = 1e-280


@cuda.jit(device=True)
def query_bounds(ptr, qid, i):
    """Row ``i``'s query as the row range ``start, end`` (one-thread-per-row kernels rank a row among
    its query's rows)."""
    q = qid[i]
    return ptr[q], ptr[q + 1]


@cuda.jit(cache=True)
def rank_rows(scores, ptr, qid, order, pos):
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    start, end = query_bounds(ptr, qid, i)
    si = scores[i]
    r = 0
    for j in range(start, end):
        sj = scores[j]
        if sj > si or (sj == si and j < i):
            r += 1
    pos[i] = r
    order[start + r] = i


def scratch(data, n, nq):
    """``(order, pos, F, Q, factor)``: the device scratch of one LambdaRank pass, reused every round
    (``data`` is the prepared data's ``devices.DeviceData``); the coupling launches read what the
    gradient launches left there."""
    return (data.scratch("order", (n,), np.int64), data.scratch("pos", (n,), np.int64),
            data.scratch("lambdarank_f", (N_FLOAT, max(n, 1)), np.float64),
            data.scratch("lambdarank_q", (N_QINT, max(nq, 1)), np.int64),
            data.scratch("lambdarank_factor", (2, max(nq, 1)), np.float64))


@cuda.jit(cache=True)
def setup_queries(scores, ptr, order, row_gain, qnorm, weights, use_weights, metric, k, trunc, sigma, F, Q):
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    start = ptr[q]
    n = ptr[q + 1] - start
    if n < 2 or qnorm[q] == 0.0:
        Q[Q_LIM, q] = -1
        return
    kk = min(k, n)
    lim = min(kk, trunc)
    for r in range(n):
        row = order[start + r]
        F[G, start + r] = row_gain[row]
        F[S, start + r] = scores[row]
        F[W, start + r] = weights[row] if use_weights else 1.0
    top = F[S, start]
    for r in range(n):
        F[E, start + r] = math.exp(sigma * (F[S, start + r] - top))
    first = n
    second = n
    if metric == ERR:
        p = 1.0
        acc = 0.0
        for r in range(n):
            g = F[G, start + r]
            if r < kk:
                F[P, start + r] = p / (r + 1.0)
                acc += g * F[P, start + r]
            else:
                F[P, start + r] = 0.0
            F[A, start + r] = acc
            F[C, start + r] = 1.0 / (1.0 - g)
            p *= 1.0 - g
    elif metric == MAP:
        hits = 0.0
        acc = 0.0
        for r in range(n):
            if F[G, start + r] > 0.0:
                hits += 1.0
                if r < kk:
                    acc += 1.0 / (r + 1.0)
            F[P, start + r] = hits / (r + 1.0) if r < kk else 0.0
            F[A, start + r] = (hits + 1.0) / (r + 1.0)
            F[PS, start + r] = acc
    elif metric == MRR:
        for r in range(n):
            F[A, start + r] = 1.0 / (r + 1.0) if r < kk else 0.0
            if F[G, start + r] > 0.0:
                if first == n:
                    first = r
                elif second == n:
                    second = r
        lim = min(lim, first + 1)
    Q[Q_LIM, q] = lim
    Q[Q_KK, q] = kk
    Q[Q_FIRST, q] = first
    Q[Q_SECOND, q] = second
    Q[Q_SPREAD, q] = 1 if F[S, start] != F[S, start + n - 1] else 0


@cuda.jit(device=True)
def _delta(metric, F, start, a, b, ga, gb, kk, first, second, a_first, disc):
    """``|dZ|`` (before ``qnorm``) of the pair at positions ``a < b``: ``_query_pass``'s formulas."""
    if metric == NDCG:
        return abs(ga - gb) * (disc[a] - disc[b])
    if metric == ERR:
        ca = F[C, start + a]
        mid = F[A, start + min(b - 1, kk - 1)] - F[A, start + a]
        return abs(F[P, start + a] * (ga - gb) + (gb - ga) * ca * mid
                   + F[P, start + b] * (gb - (1.0 - gb) * ga * ca))
    if metric == MAP:
        mid = F[PS, start + min(b - 1, kk - 1)] - F[PS, start + a]
        if ga > 0.0:
            return abs(F[P, start + b] - F[P, start + a] - mid)
        return abs(F[A, start + a] + mid - F[P, start + b])
    # MRR (the seam passes only the four codes; listwise.LambdaRank validates the metric)
    if ga > 0.0:
        return abs(a_first - F[A, start + min(b, second)]) if a == first else 0.0
    return abs(F[A, start + a] - a_first) if a < first else 0.0


@cuda.jit(device=True)
def _rho(e_hi, e_lo, d, sigma):
    if e_lo > _E_FLOOR:
        return e_lo / (e_lo + e_hi)
    return 1.0 / (1.0 + math.exp(sigma * d))


@cuda.jit(cache=True)
def pair_rows(ptr, qid, pos, qnorm, disc, metric, sigma, norm, F, Q):
    i = cuda.grid(1)
    if i >= qid.shape[0]:
        return
    q = qid[i]
    start = ptr[q]
    n = ptr[q + 1] - start
    me = pos[i]
    F[LG, start + me] = 0.0
    F[LH, start + me] = 0.0
    lim = Q[Q_LIM, q]
    if lim < 0:
        return
    kk = Q[Q_KK, q]
    first = Q[Q_FIRST, q]
    a_first = F[A, start + first] if first < n else 0.0
    second = Q[Q_SECOND, q]
    damp = norm != 0 and Q[Q_SPREAD, q] == 1
    qn = qnorm[q]
    sig2 = sigma * sigma
    lg = 0.0
    lh = 0.0
    # Pairs where this row is the lower position b: upper positions a in increasing order.
    for a in range(min(me, lim)):
        lam, pwsg, h = _pair(metric, F, start, a, me, kk, first, second, a_first, disc, qn, sigma, sig2, damp)
        lg += lam * pwsg
        lh += h
    acc_g = 0.0
    acc_h = 0.0
    if me < lim:
        for b in range(me + 1, n):
            lam, pwsg, h = _pair(metric, F, start, me, b, kk, first, second, a_first, disc, qn, sigma, sig2,
                                 damp)
            acc_g -= lam * pwsg
            acc_h += h
    F[LG, start + me] = lg + acc_g
    F[LH, start + me] = lh + acc_h


@cuda.jit(device=True)
def _pair(metric, F, start, a, b, kk, first, second, a_first, disc, qn, sigma, sig2, damp):
    """``(lambda, pw sg, h)`` of the pair at positions ``a < b``: the unweighted ``lambda``, the
    factor that weighs and signs it for the lower row (``grad_b += lambda pw sg``, ``grad_a -=``),
    and the weighted ``h``; zeros when ``|dZ| = 0``."""
    ga = F[G, start + a]
    gb = F[G, start + b]
    if ga == gb:
        return 0.0, 0.0, 0.0
    dz = _delta(metric, F, start, a, b, ga, gb, kk, first, second, a_first, disc)
    dz *= qn
    if dz == 0.0:
        return 0.0, 0.0, 0.0
    ea = F[E, start + a]
    eb = F[E, start + b]
    sa = F[S, start + a]
    sb = F[S, start + b]
    if ga > gb:
        sg = 1.0
        d = sa - sb
        rho = _rho(ea, eb, d, sigma)
    else:
        sg = -1.0
        d = sb - sa
        rho = _rho(eb, ea, d, sigma)
    if damp:
        dz = dz / (0.01 + abs(d))
    lam = sigma * dz * rho
    pw = 0.5 * (F[W, start + a] + F[W, start + b])
    h = sig2 * dz * rho * (1.0 - rho) * pw
    return lam, pw * sg, h


@cuda.jit(cache=True)
def finish_queries(ptr, qnorm, disc, metric, sigma, norm, hess_scale, F, Q, factor):
    """Per query: LightGBM's ``norm`` factor ``log2(1 + S) / S`` (``S = sum 2 lambda``, unweighted,
    summed in the CPU's pair order)."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    f = 1.0
    if norm != 0 and Q[Q_LIM, q] >= 0:
        start, n, lim, kk, first, second, a_first = _query_pairs(ptr, q, F, Q)
        damp = Q[Q_SPREAD, q] == 1
        total = 0.0
        for a in range(min(n - 1, lim)):
            for b in range(a + 1, n):
                lam, _, _ = _pair(metric, F, start, a, b, kk, first, second, a_first, disc, qnorm[q], sigma,
                                  sigma * sigma, damp)
                total += 2.0 * lam
        if total > 0.0:
            f = math.log2(1.0 + total) / total
    factor[0, q] = f
    factor[1, q] = f * hess_scale


@cuda.jit(cache=True)
def write_rows(qid, pos, ptr, F, Q, factor, out_grad, out_hess):
    i = cuda.grid(1)
    if i >= qid.shape[0]:
        return
    q = qid[i]
    if Q[Q_LIM, q] < 0:
        return
    t = ptr[q] + pos[i]
    out_grad[i] += factor[0, q] * F[LG, t]
    out_hess[i] += factor[1, q] * F[LH, t]


@cuda.jit(device=True)
def _query_pairs(ptr, q, F, Q):
    """``(start, n, lim, kk, first, second, a_first)`` of query ``q`` (``lim < 0``: no pairs)."""
    start = ptr[q]
    n = ptr[q + 1] - start
    first = Q[Q_FIRST, q]
    a_first = F[A, start + first] if first < n else 0.0
    return start, n, Q[Q_LIM, q], Q[Q_KK, q], first, Q[Q_SECOND, q], a_first


@cuda.jit(device=True)
def _counted(metric, F, start, a, b, kk, first, second, a_first, disc, qn):
    """True when the pair at positions ``a < b`` has nonzero ``|dZ|`` (the CPU's COUNT / FILL test)."""
    ga = F[G, start + a]
    gb = F[G, start + b]
    if ga == gb:
        return False
    return _delta(metric, F, start, a, b, ga, gb, kk, first, second, a_first, disc) * qn != 0.0


@cuda.jit(cache=True)
def count_pairs(ptr, qnorm, disc, metric, F, Q, counts):
    """Per query: its pairs with nonzero ``|dZ|`` (0 for a query that contributes nothing)."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    start, n, lim, kk, first, second, a_first = _query_pairs(ptr, q, F, Q)
    c = 0
    if lim >= 0:
        for a in range(min(n - 1, lim)):
            for b in range(a + 1, n):
                if _counted(metric, F, start, a, b, kk, first, second, a_first, disc, qnorm[q]):
                    c += 1
    counts[q] = c


@cuda.jit(cache=True)
def scan_pairs(counts, nq, offsets):
    """One thread: ``offsets[q]`` = pairs of the queries before ``q`` (``offsets[nq]``: all of them)."""
    if cuda.grid(1) != 0:
        return
    total = 0
    for q in range(nq):
        offsets[q] = total
        total += counts[q]
    offsets[nq] = total


@cuda.jit(cache=True)
def fill_pairs(ptr, order, qnorm, disc, metric, sigma, norm, F, Q, factor, offsets, out_i, out_j, out_c):
    """Per query: its pairs from ``offsets[q]``, by upper then lower position: ``out_i`` the row of
    the higher label, ``out_j`` the other, ``out_c`` the coupling ``h`` times the hessian factor."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    start, n, lim, kk, first, second, a_first = _query_pairs(ptr, q, F, Q)
    if lim < 0:
        return
    qn = qnorm[q]
    damp = norm != 0 and Q[Q_SPREAD, q] == 1
    hf = factor[1, q]
    t = offsets[q]
    for a in range(min(n - 1, lim)):
        for b in range(a + 1, n):
            if not _counted(metric, F, start, a, b, kk, first, second, a_first, disc, qn):
                continue
            _, _, h = _pair(metric, F, start, a, b, kk, first, second, a_first, disc, qn, sigma, sigma * sigma,
                            damp)
            hi, lo = (a, b) if F[G, start + a] > F[G, start + b] else (b, a)
            out_i[t] = order[start + hi]
            out_j[t] = order[start + lo]
            out_c[t] = h * hf
            t += 1
