"""The per-query pass of LambdaRank / LambdaMART (Burges 2010, sections 3, 4, 7).

The drivers in ``_lambdarank_kernels`` sort each query and call one kernel per query, by mode:
``query_grad`` (GRAD, FILL, GRAD_FILL, GRAD_LOSS), ``query_loss`` (LOSS), ``query_count`` (COUNT). Each is
``_setup`` (per-position arrays), one pair loop, then the query's norm factor and writes. The
codes, records and scratch channels live in ``_lambdarank_records``.

For the pair at sorted positions ``a < b`` with different gains, ``|dZ|`` is the change of the
metric when the two rows swap positions, computed in O(1) from per-query prefix arrays (so a query
costs O(n^2), never O(n^3)):

- NDCG: ``|g_a - g_b| |D_a - D_b| / IDCG@k`` with ``D`` zero beyond ``k`` (or not: DISCOUNT_FULL).
- ERR: Burges' sec. 3 formula with ``P[a] = prod_{m<a} T_m`` and ``A[a]`` = ERR summed up to ``a``.
- MAP: prefix counts ``C`` of relevant rows and prefix sums ``S`` of ``1/rank`` over relevant rows.
- MRR: only the first (and second) relevant position matter.

Positions are 0-based here (rank = position + 1). A pair can change the metric only if its upper
row is within the cutoff ``kk``, and ``truncation`` (LightGBM's ``lambdarank_truncation_level``)
keeps only pairs whose upper row is in the top ``trunc``; the outer loop stops at the smaller.

NDCG pairs run through ``_ndcg_pairs`` (counted by ``_ndcg_count``), a branch-free loop (the
``y_i > y_j`` / ``y_i == y_j`` branches are unpredictable on real labels); equal-grade pairs add
exact zeros there, so it returns the same bits as the general loop. Where a query has few gains, each
upper row walks only its lower rows of another gain (``_lambdarank_grades``' lists: the same bits for a
fraction of the pairs). Each query is sorted by numba's mergesort argsort. What these choices were measured
against: docs/kernel-notes.md.

``row_gain`` holds, per row: NDCG the gain ``G(y)``; ERR the probability ``R``; MAP/MRR the binary
relevance. ``qnorm`` per query: NDCG ``1/IDCG@k``, MAP ``1/#relevant`` (capped at ``k``), ERR/MRR 1;
0 makes the query contribute nothing.

The other metrics, and the loss, share one pair loop, ``_metric_pairs``, where the modes meet as
loop-invariant flags instead of in three copies of the loop. Its per-pair math (``|dZ|``, ``rho``,
lambda, hessian) and the prefix tables are ``_lambdarank_terms``', shared with the GPU kernels.
"""
import numpy as np
from numba import njit

from . import _lambdarank_grades as GR  # WALK_SHARE_* read from there (benchmarks/grade_walk.py sets them)
from ._lambdarank_loss_rows import _ndcg_row_loss, _pad_losses, _rows_losses
from ._lambdarank_records import LOSS_ROWS, Channel, IntChannel, Metric, Mode
from ._lambdarank_terms import (EXP_FLOOR, damped, err_dz, exp_table, fill_prefixes, lambda_hess, map_dz, mrr_dz,
                                SOFTPLUS_STEP, ndcg_dz, norm_factor, pair_weight, rho, softplus, softplus_sorted,
                                unbiased_pair)
from ._pairwise_terms import tracked_propensities

#: The pre-enum names of the codes (aliases of the members; the codes' home is ``_lambdarank_records``).
NDCG, ERR, MAP, MRR = Metric
GRAD, LOSS, COUNT, FILL, GRAD_FILL, TERMS, GRAD_LOSS = Mode


@njit(cache=True)
def _sort_query(scores, start, n, neg, order):
    """``order[:n]`` = rows of the query by descending score, ties by row order (stable)."""
    for t in range(n):
        neg[t] = -scores[start + t]
    idx = np.argsort(neg[:n], kind="mergesort")
    for r in range(n):
        order[r] = start + idx[r]


@njit(cache=True)
def _setup(inp, n, kk, order, F):
    """Fill the per-position arrays of one sorted query: gain, score and weight of the row at each
    position, then the metric's prefix tables (``_lambdarank_terms.fill_prefixes``). Returns the
    first and second relevant positions (``n`` when absent; used by MRR)."""
    scores, row_gain, weights, use_weights = inp.scores, inp.row_gain, inp.weights, inp.use_weights
    g, s, w = F[Channel.GAIN], F[Channel.SCORE], F[Channel.WEIGHT]
    for r in range(n):
        g[r] = row_gain[order[r]]
        s[r] = scores[order[r]]
        w[r] = weights[order[r]] if use_weights else 1.0
    return fill_prefixes(inp.metric, F, 0, n, kk)


@njit(cache=True)
def _ndcg_count(q, disc, g):
    """COUNT of the NDCG pairs of one sorted query: those with nonzero ``|dZ|``."""
    n, qn = q.n, q.qn
    count = 0
    for a in range(min(n - 1, q.lim)):
        ga = g[a]
        da = disc[a]
        for b in range(a + 1, n):
            dz = abs(ga - g[b]) * (da - disc[b])
            dz *= qn
            count += 1 if dz != 0.0 else 0
    return count


@njit(cache=True, inline="always")
def _ndcg_row(flags, a, t0, t1, lower, q, sigma, zscale, disc, order, F, I):
    """The pairs ``(a, b)``, ``b > a``, of the upper position ``a`` of a sorted NDCG query: ``b`` in
    ``t0 .. t1 - 1`` (the walk over every pair), or ``lower[t0:t1]`` when ``walk`` (the grade walk,
    ``_lambdarank_grades``: the lower rows of another gain); returns ``(acc_g, acc_h, row_lambda, m,
    row_total)``, ``row_total`` the pairs' costs when ``loss`` (GRAD_LOSS on the grade walk; the walk over
    every pair takes :func:`_ndcg_row_loss`' vector terms), with ``_rows_losses``' expressions: the same bits.
    ``flags`` = ``(grad, fill, loss, damp, walk)``, ``damp`` ``lambdarank_norm``'s division by
    ``0.01 + |s_a - s_b|``: a tuple of constants of each inlined copy (:func:`_ndcg_pairs`; one argument, not
    five: tests/test_kernel_arguments.py): LLVM unswitched the damping test out
    of GRAD's loop but left it inside GRAD_LOSS's on AMD Zen 3 (about 12 more instructions a pair, both
    divisions' registers live); a constant decides it the same way on every CPU
    (``benchmarks/pair_loop_asm.py``)."""
    grad, fill, loss, damp, walk = flags
    qn = q.qn
    g, s, w, e = F[Channel.GAIN], F[Channel.SCORE], F[Channel.WEIGHT], F[Channel.EXP]
    lg, lh, lc = F[Channel.LAMBDA_G], F[Channel.LAMBDA_H], F[Channel.LOCAL_C]
    li, lj = I[IntChannel.LOCAL_I], I[IntChannel.LOCAL_J]
    sig2 = sigma * sigma
    ga, da, ea, sa, wa, oa = g[a], disc[a], e[a], s[a], w[a], order[a]
    acc_g = 0.0
    acc_h = 0.0
    row_lambda = 0.0  # a's own sum first: the GPU sums each upper row's pairs on its own (pair_rows)
    row_total = 0.0
    m = 0
    for t in range(t0, t1):
        b = np.uint64(lower[np.uint64(t)]) if walk else np.uint64(t)  # unsigned: no negative-index wraparound
        gb = g[b]
        up = ga > gb  # the upper position a holds the better row
        eb = e[b]
        rho = (eb if up else ea) / (ea + eb)
        dz = abs(ga - gb) * (da - disc[b])
        dz *= qn  # 0 for equal grades: the pair then adds exact zeros
        nz = dz != 0.0
        gap = sa - s[b]
        if damp:
            dz = dz / (0.01 + abs(gap))
        lam = sigma * dz * rho
        row_lambda += 2.0 * lam
        pw = 0.5 * (wa + w[b])
        h = sig2 * dz * rho * (1.0 - rho) * pw
        if loss:
            row_total += pw * dz * softplus_sorted(gap, up, sigma, zscale)
        if grad:
            lam *= pw * (1.0 if up else -1.0)
            acc_g -= lam
            lg[b] += lam
            acc_h += h
            lh[b] += h
        if fill:
            ob = order[b]
            li[m] = oa if up else ob
            lj[m] = ob if up else oa
            lc[m] = h
            m += 1 if nz else 0
    return acc_g, acc_h, row_lambda, m, row_total


@njit(cache=True, inline="always")
def _ndcg_pairs(grad, fill, loss, inp, q, spread, order, F, I, out):
    """NDCG pairs of one sorted query without data-dependent branches; returns (count, sum_lambda,
    total), ``total`` GRAD_LOSS's utility when ``loss`` (LOSS's terms, each upper row's summed first as the
    GPU sums them, ``_lambdarank_loss_cuda``, each with
    ``_lambdarank_terms.softplus_tabled``, read by ``softplus_sorted``: within ``SOFTPLUS_TABLE_ERROR`` per
    unit of ``w |dZ|``). Compiled once per mode by :func:`_ndcg_loop` (``grad``, ``fill``, ``loss``
    constants there); each upper row's pairs by :func:`_ndcg_row`, damped or not.

    Two walks, the same bits (``_lambdarank_grades``): where :func:`~._lambdarank_grades.grade_lists` finds
    few gains and few pairs of different gains, each upper row walks only its lower rows of another gain;
    else every pair, GRAD_LOSS's pair terms from :func:`_rows_losses` (``LOSS_ROWS`` upper rows at a time,
    in whole vectors).

    Needs every ``e[r] > EXP_FLOOR`` (``_lambdarank_terms.rho``'s table branch for all pairs). ``rho`` is
    ``e_lo / (e_a + e_b)``, the same bits as ``rho``. FILL writes each upper row's pairs to the
    local ``li/lj/lc`` and advances only past nonzero ``|dZ|`` (branch-free compaction).
    """
    disc, sigma, norm = inp.disc, inp.sigma, inp.norm
    n, lim, qn, at = q.n, q.lim, q.qn, q.at
    lg, lh, lc = F[Channel.LAMBDA_G], F[Channel.LAMBDA_H], F[Channel.LOCAL_C]
    li, lj = I[IntChannel.LOCAL_I], I[IntChannel.LOCAL_J]
    grade, above, same = I[IntChannel.GRADE], I[IntChannel.SAME_ABOVE], I[IntChannel.GRADE_COUNT]
    out_i, out_j, out_c = out.pair_i, out.pair_j, out.pair_c
    zscale = sigma * (1.0 / SOFTPLUS_STEP)
    damp = norm and spread
    count = 0
    sum_lambda = 0.0
    total = 0.0
    share = GR.WALK_SHARE_FILL if fill else GR.WALK_SHARE_LOSS if loss else GR.WALK_SHARE_GRAD  # this mode's
    walk = GR.grade_lists(n, F, I, share) > 0
    if loss and not walk:
        _pad_losses(inp, n, F)
    # The walk over (a, b) repeats _metric_pairs' on purpose: this copy has no branch on the grades,
    # measured about 10% faster for NDCG (docs/kernel-notes.md, one thread, truncation 30)
    for a in range(min(n - 1, lim)):
        m = 0
        row_total = 0.0  # a's own sums first: the GPU sums each upper row's pairs (and losses) on its own
        if walk:
            k = grade[a]
            lower = I[IntChannel.OTHERS + k]
            t0, t1 = a - above[a], n - same[k]  # a's lower rows of another gain
            if damp:
                acc_g, acc_h, row_lambda, m, row_total = _ndcg_row((grad, fill, loss, True, True), a, t0, t1, lower, q,
                                                                   sigma, zscale, disc, order, F, I)
            else:
                acc_g, acc_h, row_lambda, m, row_total = _ndcg_row((grad, fill, loss, False, True), a, t0, t1, lower, q,
                                                                   sigma, zscale, disc, order, F, I)
        elif loss:
            if a % LOSS_ROWS == 0:
                _rows_losses(F, a, min(a + LOSS_ROWS, n - 1, lim), n, qn, sigma, zscale, damp)
            acc_g, acc_h, row_lambda, row_total = _ndcg_row_loss(a, n, F)
        elif damp:
            acc_g, acc_h, row_lambda, m, _ = _ndcg_row((grad, fill, False, True, False), a, a + 1, n, grade, q, sigma,
                                                       zscale, disc, order, F, I)
        else:
            acc_g, acc_h, row_lambda, m, _ = _ndcg_row((grad, fill, False, False, False), a, a + 1, n, grade, q, sigma,
                                                       zscale, disc, order, F, I)
        sum_lambda += row_lambda
        total += row_total
        if grad:
            lg[a] += acc_g
            lh[a] += acc_h
        if fill:
            for t in range(m):
                out_i[at + count + t] = li[t]
                out_j[at + count + t] = lj[t]
                out_c[at + count + t] = lc[t]
            count += m
    return count, sum_lambda, total


def _ndcg_loop(grad, fill, loss):
    """The NDCG pair loop of one mode, its flags compile-time constants (the loop's closure): each mode's
    loop holds only its own work and registers (a flag tested per pair, and the other modes' values kept
    live across the loop, cost GRAD_LOSS about 20 instructions a pair: ``benchmarks/pair_loop_asm.py``).
    Returns the njit kernel ``pairs(inp, q, spread, order, F, I, out)``."""

    def pairs(inp, q, spread, order, F, I, out):
        return _ndcg_pairs(grad, fill, loss, inp, q, spread, order, F, I, out)

    # Each mode's loop gets a qualname of its own, so cache files of its own: numba names a function's
    # cache files by qualname and tells closures apart only by a key in their one shared index, so the four
    # modes shared one index, where a cold-cache race between processes served one mode's machine code for
    # another's (GRAD returned GRAD_LOSS's utility in the suite; _numba_cache._index_lock now closes it).
    flags = ("grad" if grad else "") + ("fill" if fill else "") + ("loss" if loss else "")
    pairs.__qualname__ = pairs.__name__ = f"_ndcg_pairs_{flags}"
    # error_model="numpy": no zero-division branch per pair (3 instructions a division); no division here
    # can be by 0: rho's e_a + e_b > 2 EXP_FLOOR (query_grad's check) and damped's 0.01 + |d|
    return njit(cache=True, error_model="numpy")(pairs)


_NDCG_GRAD = _ndcg_loop(True, False, False)
_NDCG_GRAD_LOSS = _ndcg_loop(True, False, True)
_NDCG_FILL = _ndcg_loop(False, True, False)
_NDCG_GRAD_FILL = _ndcg_loop(True, True, False)


@njit(cache=True)
def _ndcg_mode_pairs(mode, inp, q, spread, order, F, I, out):
    """``_ndcg_pairs`` of ``mode`` (GRAD, GRAD_LOSS, FILL, GRAD_FILL) through its own compiled loop."""
    if mode == Mode.GRAD:
        return _NDCG_GRAD(inp, q, spread, order, F, I, out)
    if mode == Mode.GRAD_LOSS:
        return _NDCG_GRAD_LOSS(inp, q, spread, order, F, I, out)
    if mode == Mode.FILL:
        return _NDCG_FILL(inp, q, spread, order, F, I, out)
    if mode == Mode.GRAD_FILL:
        return _NDCG_GRAD_FILL(inp, q, spread, order, F, I, out)
    return 0, 0.0, 0.0  # unreachable: query_grad sends only these modes here


# LOSS's and COUNT's calls of _metric_pairs pass their mode and spread typed as query_grad's (int64, bool):
# an IntEnum member or a literal False is another signature, and each compiles this long loop again
# (three compilations on a cold cache before). numpy scalars, not Python ones: numba types those as literals.
_LOSS_MODE = np.int64(Mode.LOSS)
_COUNT_MODE = np.int64(Mode.COUNT)
_NO_SPREAD = np.bool_(False)


@njit(cache=True)
def _metric_pairs(mode, inp, q, first, second, spread, order, F, out, deb):
    """The general pair loop of one sorted query (every metric; NDCG when ``_ndcg_pairs`` cannot
    serve, and TERMS). Returns ``(count, sum_lambda, total)``: pairs with nonzero ``|dZ|`` (COUNT;
    written by FILL and TERMS), the sum of ``2 lambda`` (for the norm factor) and the utility (LOSS).
    TERMS writes each pair's debiased terms (``_lambdarank_terms.unbiased_pair`` with the
    propensities of :class:`~._lambdarank_records.Debias` ``deb``).

    The formulas are ``_lambdarank_terms``'; the table entries they take are read here from the
    channels' views (``_lambdarank_terms.pair_dz`` reads the same from ``F``: 1.7-1.9x slower here)."""
    metric, disc, sigma = inp.metric, inp.disc, inp.sigma
    n, kk, qn, at = q.n, q.kk, q.qn, q.at
    lim = min(q.lim, first + 1) if metric == Metric.MRR else q.lim  # below the first relevant row RR is unchanged
    g, s, w, e = F[Channel.GAIN], F[Channel.SCORE], F[Channel.WEIGHT], F[Channel.EXP]
    P, A, C, S = F[Channel.P], F[Channel.A], F[Channel.C], F[Channel.S]
    lg, lh = F[Channel.LAMBDA_G], F[Channel.LAMBDA_H]
    out_i, out_j, out_c = out.pair_i, out.pair_j, out.pair_c
    a_first = A[first] if first < n else 0.0
    grad = mode == Mode.GRAD or mode == Mode.GRAD_FILL or mode == Mode.GRAD_LOSS
    with_loss = mode == Mode.GRAD_LOSS
    terms = mode == Mode.TERMS
    fill = mode == Mode.FILL or mode == Mode.GRAD_FILL or terms
    damp = inp.norm and spread
    sig2 = sigma * sigma
    zscale = sigma * (1.0 / SOFTPLUS_STEP)
    sum_lambda = 0.0
    total = 0.0
    count = 0
    for a in range(min(n - 1, lim)):
        ga = g[a]
        ea = e[a]
        sa = s[a]
        acc_g = 0.0
        acc_h = 0.0
        row_lambda = 0.0
        row_total = 0.0  # GRAD_LOSS: a's own sum first, as in _ndcg_pairs (LOSS keeps its one running sum)
        for b in range(a + 1, n):
            gb = g[b]
            if ga == gb:
                continue
            if metric == Metric.NDCG:
                dz = ndcg_dz(ga, gb, disc[a], disc[b])
            elif metric == Metric.ERR:
                dz = err_dz(ga, gb, P[a], P[b], C[a], A[min(b - 1, kk - 1)] - A[a])
            elif metric == Metric.MAP:
                dz = map_dz(ga, P[a], P[b], A[a], S[min(b - 1, kk - 1)] - S[a])
            elif metric == Metric.MRR:
                dz = mrr_dz(ga, a, first, a_first, A[min(b, second)], A[a])
            else:  # unreachable: the drivers refuse unknown metrics before any query
                dz = 0.0
            dz *= qn
            if dz == 0.0:
                continue
            if mode == Mode.COUNT:
                count += 1
                continue
            # sg = +1 when the upper position a holds the better row
            if ga > gb:
                sg = 1.0
                d = sa - s[b]
                rho_ = rho(ea, e[b], d, sigma)
            else:
                sg = -1.0
                d = s[b] - sa
                rho_ = rho(e[b], ea, d, sigma)
            dz = damped(dz, damp, d)
            pw = pair_weight(w[a], w[b])
            lam, h = lambda_hess(dz, rho_, pw, sigma, sig2)
            row_lambda += 2.0 * lam
            if mode == Mode.LOSS:
                total += pw * dz * softplus(-sigma * d)
                count += 1
                continue
            if with_loss:  # GRAD_LOSS's costs: the tabled softplus, within SOFTPLUS_TABLE_ERROR per pair
                row_total += pw * dz * softplus_sorted(sa - s[b], sg > 0.0, sigma, zscale)
            if grad:
                lam *= pw * sg
                acc_g -= lam
                lg[b] += lam
                acc_h += h
                lh[b] += h
            if fill:
                hi, lo = (a, b) if sg > 0 else (b, a)
                t = at + count
                out_i[t] = order[hi]
                out_j[t] = order[lo]
                if terms:  # the better row is the clicked one: t+ of its position, t- of the other's
                    _, tp, tm = tracked_propensities(deb.pos[order[hi]], deb.pos[order[lo]], deb.tplus, deb.tminus)
                    deb.lam[t], h, deb.cost[t], deb.est[t] = unbiased_pair(lam, h, dz, d, sigma, tp, tm, deb.swapped)
                out_c[t] = h
            count += 1
        sum_lambda += row_lambda
        total += row_total  # + 0.0 in LOSS: its running sum unchanged
        if grad:
            lg[a] += acc_g
            lh[a] += acc_h
    return count, sum_lambda, total


@njit(cache=True)
def _sorted_scores(inp, q, order, F):
    """``_setup`` and the exp table of one query; returns (first, second, spread)."""
    return _sorted_scores_ready(inp, q, order, F, False)


@njit(cache=True)
def _sorted_scores_ready(inp, q, order, F, exp_ready):
    """:func:`_sorted_scores`, its exp table left as it is when ``exp_ready`` (another label's pass of the
    same query and ``sigma`` made it: ``_lambdarank_kernels._run_labels``; the same bits)."""
    first, second = _setup(inp, q.n, q.kk, order, F)
    if not exp_ready:
        exp_table(F, 0, q.n, inp.sigma)
    s = F[Channel.SCORE]
    return first, second, s[0] != s[q.n - 1]


@njit(cache=True)
def query_grad(mode, inp, out, q, order, F, I, deb, exp_ready):
    """GRAD adds the query's gradients and hessians into ``out.grad/out.hess``; FILL writes its
    pairs with nonzero ``|dZ|`` (rows, coupling) to ``out.pair_*`` from ``q.at``; GRAD_FILL does
    both in one pair pass; GRAD_LOSS adds GRAD's (the same bits) and returns the query's utility from the
    same pair pass (``query_loss``'s, each pair's softplus from ``softplus_tabled``); TERMS writes FILL's pairs with their debiased terms (``deb``, unnormalised:
    the caller normalises the debiased sums). Hessians and couplings are multiplied by
    ``inp.hess_scale`` (1 but for XGBoost's convention, see ``_parity.py``) once per row, outside
    the pair loop. ``order[:n]`` are the query's rows by score, ``F`` / ``I`` the block's scratch
    (rows named by ``Channel`` / ``IntChannel``). ``exp_ready``: ``F``'s exp table is already this query's at
    ``inp.sigma`` (another label's pass made it)."""
    n = q.n
    first, second, spread = _sorted_scores_ready(inp, q, order, F, exp_ready)
    grad = mode == Mode.GRAD or mode == Mode.GRAD_FILL or mode == Mode.GRAD_LOSS
    fill = mode == Mode.FILL or mode == Mode.GRAD_FILL or mode == Mode.TERMS
    lg, lh = F[Channel.LAMBDA_G], F[Channel.LAMBDA_H]
    if grad:
        lg[:n] = 0.0
        lh[:n] = 0.0
    if inp.metric == Metric.NDCG and F[Channel.EXP, n - 1] > EXP_FLOOR and mode != Mode.TERMS:
        count, sum_lambda, total = _ndcg_mode_pairs(mode, inp, q, spread, order, F, I, out)
    else:
        count, sum_lambda, total = _metric_pairs(mode, inp, q, first, second, spread, order, F, out, deb)
    factor = 1.0 if mode == Mode.TERMS else norm_factor(inp.norm, sum_lambda)
    hfactor = factor * inp.hess_scale
    if grad:
        out_grad, out_hess = out.grad, out.hess
        for r in range(n):
            out_grad[order[r]] += factor * lg[r]
            out_hess[order[r]] += hfactor * lh[r]
    if fill:
        out_c = out.pair_c
        for t in range(q.at, q.at + count):
            out_c[t] *= hfactor
    return total * factor  # GRAD_LOSS: the query's utility (tabled softplus); 0 otherwise


@njit(cache=True)
def query_loss(inp, out, q, order, F, deb):
    """LOSS: the query's utility ``sum_pairs w_ij |dZ_ij| log(1 + exp(-sigma d))`` (times the
    frozen norm factor). ``out`` and ``deb`` are only passed through (LOSS writes nothing)."""
    first, second, spread = _sorted_scores(inp, q, order, F)
    _, sum_lambda, total = _metric_pairs(_LOSS_MODE, inp, q, first, second, spread, order, F, out, deb)
    return total * norm_factor(inp.norm, sum_lambda)


@njit(cache=True)
def query_count(inp, out, q, order, F, deb):
    """COUNT: the number of the query's pairs with nonzero ``|dZ|`` (what FILL and TERMS will write;
    ``out`` and ``deb`` are only passed through)."""
    first, second = _setup(inp, q.n, q.kk, order, F)
    if inp.metric == Metric.NDCG:
        return _ndcg_count(q, inp.disc, F[Channel.GAIN])
    count, _, _ = _metric_pairs(_COUNT_MODE, inp, q, first, second, _NO_SPREAD, order, F, out, deb)
    return count
