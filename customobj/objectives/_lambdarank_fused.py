"""The fused NDCG pair pass of ``m`` LambdaRank labels on the same scores (``MultiObjective``'s common case,
issue 41): each query sorted once, each pair's shared terms computed once, every label's gradients,
hessians and GRAD_LOSS cost the bits of its own single-label pass (``_lambdarank_pass._ndcg_pairs``).

What the labels share, when their options agree (:func:`fusable`: every label NDCG, the same ``sigma``,
``norm``, cutoff ``k``, truncation and discount row): the sorted scores, the ``exp`` table, the discounts,
and so per pair of sorted positions ``a < b`` both orientations of ``rho`` (``e_b / (e_a + e_b)`` and
``e_a / (e_a + e_b)``: the label's grades pick one, the same division as its own pass), ``lambdarank_norm``'s
damping ``0.01 + |s_a - s_b|`` and the softplus knot of the cost. What each label keeps: its gains, weights,
``qnorm`` and so its ``|dZ|``, lambdas, hessians and sums.

How, per block of ``LOSS_ROWS`` upper rows: :func:`_shared_rows` writes the shared terms of every pair of
the block, vectorised; then per label :func:`_label_rows` computes every pair's lambda, hessian and cost,
vectorised over ``b``, writing them to scratch rows, scatters them in a vector loop of their own (a row's
pairs go to distinct ``b``, so ``lg[b] += lambda`` has no conflict), and adds each upper row's own sums in a
scalar loop in the pair order, two rows' sums interleaved (the order of the single-label pass: float sums
are not reassociated). An upper row ``a`` receives
its own sum only after every row above it has scattered into it, as in the single-label pass, so every
value is added in the same order. A label with ``|dZ| = 0`` at a pair adds exact zeros there, as its own
pass does. Rows run on to whole vectors of ``LOSS_LANES`` over padding columns (never read back).

Queries whose ``exp`` table underflows (``_lambdarank_pass.query_grad`` then takes the general loop) are
left to the caller's per-label walk (:func:`fused_query` returns False). So are, by the driver's gate
(``FUSED_MIN_ROWS``, ``FUSED_LOSS``: timed by benchmarks/fused_gate.py, docs/multi-objective.md), queries
under 40 rows and every query in GRAD_LOSS, where the per-row set-up costs more than the shared terms save,
and queries where a label has at most ``_lambdarank_grades.WALK_SHARE_FUSED`` of its pairs of different gains
(its own grade walk, over those pairs only, is faster than the fused pass over every pair).
"""
import math

import numpy as np
from numba import njit

from ._lambdarank_records import LOSS_LANES, LOSS_ROWS, FusedCut, Metric
from ._lambdarank_terms import _SOFTPLUS_KNOTS, _SOFTPLUS_LAST, EXP_FLOOR, SOFTPLUS_STEP, norm_factor

#: The driver's gate (``_lambdarank_kernels.LabelInputs``' defaults; benchmarks/fused_gate.py measured
#: them): queries of fewer rows take the per-label walk, and GRAD_LOSS takes it when FUSED_LOSS is False.
FUSED_MIN_ROWS = 40
FUSED_LOSS = False

# Rows of a label's scratch (:func:`scratch`'s first array: one (N_LABEL_ROWS, width) slab a label).
GAIN, WEIGHT, LAMBDA_G, LAMBDA_H = 0, 1, 2, 3
N_LABEL_ROWS = 4
# Rows of the shared scratch: the sorted query's scores, exp table and discounts, then per block row ``r``
# (``LOSS_ROWS`` of each) the shared pair terms and the current label's pair values.
SCORE, EXP, DISC = 0, 1, 2
RHO_UP = 3  # e_b / (e_a + e_b): rho when a holds the better row
RHO_DOWN = RHO_UP + LOSS_ROWS  # e_a / (e_a + e_b)
DAMP = RHO_DOWN + LOSS_ROWS  # 0.01 + |s_a - s_b| (norm)
GAP = DAMP + LOSS_ROWS  # sigma (s_a - s_b): the cost's linear part when b holds the better row
KNOT = GAP + LOSS_ROWS  # the softplus table's value at |sigma (s_a - s_b)|
# The current label's pair values: LOSS_ROWS + 1 rows each, the last never written (zeros): the ordered sums
# take two upper rows at a time, and a block's odd last row is paired with it (its sums unread).
PAIR_ROWS = LOSS_ROWS + 1
LAMBDA0 = KNOT + LOSS_ROWS  # the label's sigma |dZ| rho (its norm sum)
LAMBDA = LAMBDA0 + PAIR_ROWS  # its signed, weighted lambda
HESS = LAMBDA + PAIR_ROWS
COST = HESS + PAIR_ROWS
N_SHARED_ROWS = COST + PAIR_ROWS


def fusable(metric: np.ndarray, k: np.ndarray, trunc: np.ndarray, sigma: np.ndarray, norm: np.ndarray,
            disc: np.ndarray) -> bool:
    """Whether ``m >= 2`` stacked labels (``_lambdarank_kernels.LabelInputs``' option arrays, ``disc`` its
    (m, d) rows) can share one pair pass: every one NDCG with the same cutoff, truncation, ``sigma``,
    ``norm`` and discount row. Otherwise each label is walked on its own (the same results)."""
    if metric.size < 2 or np.any(metric != int(Metric.NDCG)):
        return False
    same = [np.all(a == a[0]) for a in (k, trunc, sigma, norm)]
    return bool(all(same) and np.all(disc == disc[0]))


@njit(cache=True)
def scratch(m, size):
    """``(labels, shared)``: the fused pass's scratch for queries of at most ``size`` rows (each row padded by
    ``LOSS_LANES`` columns for the last vector of a pair row)."""
    # zeros: the sums' unwritten partner row (and any column a row's vectors never reach) reads as 0.0
    return np.zeros((m, N_LABEL_ROWS, size + LOSS_LANES)), np.zeros((N_SHARED_ROWS, size + LOSS_LANES))


@njit(cache=True, error_model="numpy")
def _shared_rows(X, a0, a1, cut):
    """The shared pair terms of the upper positions ``a0 <= a < a1``, row ``r = a - a0`` of each block channel
    at column ``b`` (``a < b``, on to whole vectors). ``error_model="numpy"``: no zero-division branch
    (``e_a + e_b > 0``, ``0.01 + |d| > 0``); unsigned indices: no wraparound branch."""
    n, sigma, zscale, loss = cut.n, cut.sigma, cut.zscale, cut.loss
    s, e = X[SCORE], X[EXP]
    for a in range(a0, a1):
        r = a - a0
        sa, ea = s[a], e[a]
        up, down, damp, gap_, knot = X[RHO_UP + r], X[RHO_DOWN + r], X[DAMP + r], X[GAP + r], X[KNOT + r]
        for t in range(a + 1, a + 1 + (n - a + LOSS_LANES - 2) // LOSS_LANES * LOSS_LANES):
            b = np.uint64(t)
            eb = e[b]
            den = ea + eb  # rho's denominator: _ndcg_pairs' (e_a + e_b)
            up[b] = eb / den
            down[b] = ea / den
            gap = sa - s[b]
            damp[b] = 0.01 + abs(gap)
            if loss:  # _lambdarank_terms.softplus_sorted's two parts, the same operations
                z = gap * zscale
                if not z < _SOFTPLUS_LAST:
                    z = _SOFTPLUS_LAST
                i = int(z)
                u = np.uint64(i)
                gap_[b] = sigma * gap
                knot[b] = _SOFTPLUS_KNOTS[u, 0] + (z - i) * _SOFTPLUS_KNOTS[u, 1]


def _label_rows_of(loss):
    """The per-label pair kernel of one mode (``loss``: GRAD_LOSS, else GRAD; a compile-time constant, as
    ``_lambdarank_pass._ndcg_loop``'s flags). Returns the njit kernel
    ``rows(Y, X, a0, a1, cut, qn, sum_lambda, total) -> (sum_lambda, total)`` (``cut``: a ``FusedCut``)."""

    def rows(Y, X, a0, a1, cut, qn, sum_lambda, total):
        # One label's pairs of the upper positions a0 <= a < a1: _ndcg_pairs' expressions, pair by pair.
        n, sigma, sig2, damp, norm = cut.n, cut.sigma, cut.sig2, cut.damp, cut.norm
        g, w, lg, lh, d = Y[GAIN], Y[WEIGHT], Y[LAMBDA_G], Y[LAMBDA_H], X[DISC]
        for a in range(a0, a1):
            r = a - a0
            ga, da, wa = g[a], d[a], w[a]
            up_, down_, damp_, gap_, knot_ = X[RHO_UP + r], X[RHO_DOWN + r], X[DAMP + r], X[GAP + r], X[KNOT + r]
            l0, lam_, h_, c_ = X[LAMBDA0 + r], X[LAMBDA + r], X[HESS + r], X[COST + r]
            for t in range(a + 1, a + 1 + (n - a + LOSS_LANES - 2) // LOSS_LANES * LOSS_LANES):
                b = np.uint64(t)
                gb = g[b]
                up = ga > gb  # the upper position a holds the better row
                dz = abs(ga - gb) * (da - d[b])
                dz *= qn  # 0 for equal grades: the pair adds exact zeros
                ru = up_[b]  # both loaded, then selected: a select of loads would not vectorise
                rd = down_[b]
                rho = ru if up else rd
                if damp:
                    dz = dz / damp_[b]
                lam = sigma * dz * rho
                l0[b] = lam
                pw = 0.5 * (wa + w[b])
                h = sig2 * dz * rho * (1.0 - rho) * pw
                lam *= pw * (1.0 if up else -1.0)
                lam_[b] = lam
                h_[b] = h
                if loss:
                    gb_ = gap_[b]
                    c_[b] = pw * dz * ((0.0 if up else gb_) + knot_[b])
            for t in range(a + 1, a + 1 + (n - a + LOSS_LANES - 2) // LOSS_LANES * LOSS_LANES):
                b = np.uint64(t)  # the scatter apart: in the loop above its two more streams kept it scalar (LLVM)
                lg[b] += lam_[b]
                lh[b] += h_[b]
        # Each upper row's own sums, in the pair order, two rows at a time with their sums interleaved: each
        # running sum adds one value a pair (an add's latency, 4 cycles), so one row alone waits on it (llvm-mca).
        # A block's odd last row is paired with the zero row past the block (PAIR_ROWS), whose sums are unread.
        for a in range(a0, a1, 2):
            r = a - a0
            l0, lam_, h_, c_ = X[LAMBDA0 + r], X[LAMBDA + r], X[HESS + r], X[COST + r]
            l0_, lam2, h2, c2 = X[LAMBDA0 + r + 1], X[LAMBDA + r + 1], X[HESS + r + 1], X[COST + r + 1]
            if a + 1 == a1:
                z = LOSS_ROWS  # the zero row
                l0_, lam2, h2, c2 = X[LAMBDA0 + z], X[LAMBDA + z], X[HESS + z], X[COST + z]
            b = np.uint64(a + 1)  # row a's first pair, its own: the single-label pass's first adds, from 0.0
            row_lambda = 0.0 + 2.0 * l0[b] if norm else 0.0
            acc_g = 0.0 - lam_[b]
            acc_h = 0.0 + h_[b]
            row_total = 0.0 + c_[b] if loss else 0.0
            rl2, g2, hh2, rt2 = 0.0, 0.0, 0.0, 0.0
            for t in range(a + 2, n):
                b = np.uint64(t)
                if norm:  # the norm factor's sum (unread without norm)
                    row_lambda += 2.0 * l0[b]
                    rl2 += 2.0 * l0_[b]
                acc_g -= lam_[b]
                g2 -= lam2[b]
                acc_h += h_[b]
                hh2 += h2[b]
                if loss:
                    row_total += c_[b]
                    rt2 += c2[b]
            sum_lambda += row_lambda
            total += row_total
            lg[a] += acc_g
            lh[a] += acc_h
            if a + 1 < a1:
                sum_lambda += rl2
                total += rt2
                lg[a + 1] += g2
                lh[a + 1] += hh2
        return sum_lambda, total

    rows.__qualname__ = rows.__name__ = "_label_rows_loss" if loss else "_label_rows_grad"  # own cache files
    return njit(cache=True, error_model="numpy")(rows)


_LABEL_ROWS_GRAD = _label_rows_of(False)
_LABEL_ROWS_LOSS = _label_rows_of(True)


@njit(cache=True)
def _label_rows(Y, X, a0, a1, cut, qn, sum_lambda, total):
    if cut.loss:
        return _LABEL_ROWS_LOSS(Y, X, a0, a1, cut, qn, sum_lambda, total)
    return _LABEL_ROWS_GRAD(Y, X, a0, a1, cut, qn, sum_lambda, total)


@njit(cache=True)
def fused_query(loss, L, q, n, order, Xl, X, sums, grads, hess, per_query):
    """Query ``q`` (``n >= 2`` rows sorted into ``order``) of the fusable stacked labels ``L``: adds each label's
    gradients and hessians into row ``k`` of ``grads`` / ``hess`` and (``loss``) writes its GRAD_LOSS utility
    to ``per_query[k, q]``, the bits of ``_lambdarank_pass.query_grad`` per label; labels with ``qnorm`` 0
    skipped as there. ``Xl``, ``X``: :func:`scratch`; ``sums``: (2, m) float scratch. Returns False, having
    written nothing, where the exp table underflows (the caller then walks each label on its own)."""
    m = L.metric.size
    sigma, norm = L.sigma[0], L.norm[0]
    scores, disc = L.scores, L.disc[0]
    s, e, d = X[SCORE], X[EXP], X[DISC]
    for r in range(n):
        s[r] = scores[order[r]]
    for r in range(n):  # _lambdarank_terms.exp_entry's expression
        e[r] = math.exp(sigma * (s[r] - s[0]))
    if not e[n - 1] > EXP_FLOOR:
        return False
    for r in range(n):
        d[r] = disc[r]
    for r in range(n, n + LOSS_LANES):  # the padding read by the last vector of a row: finite, never read back
        s[r] = s[n - 1]
        e[r] = e[n - 1]
        d[r] = 0.0
    kk = min(L.k[0], n)
    lim = min(kk, L.trunc[0])
    cut = FusedCut(n, sigma, sigma * sigma, norm and s[0] != s[n - 1], norm, sigma * (1.0 / SOFTPLUS_STEP), loss)
    for k in range(m):
        if L.qnorm[k, q] == 0.0:
            continue
        Y = Xl[k]
        g, w, lg, lh = Y[GAIN], Y[WEIGHT], Y[LAMBDA_G], Y[LAMBDA_H]
        gain, weights, use_weights = L.row_gain[k], L.weights[k], L.use_weights[k]
        for r in range(n):  # _lambdarank_pass._setup's
            g[r] = gain[order[r]]
            w[r] = weights[order[r]] if use_weights else 1.0
            lg[r] = 0.0
            lh[r] = 0.0
        for r in range(n, n + LOSS_LANES):  # the padding: finite, so the scatter's last vector adds no NaN there
            g[r] = 0.0
            w[r] = 0.0
            lg[r] = 0.0
            lh[r] = 0.0
        sums[0, k] = 0.0
        sums[1, k] = 0.0
    for a0 in range(0, min(n - 1, lim), LOSS_ROWS):
        a1 = min(a0 + LOSS_ROWS, n - 1, lim)
        _shared_rows(X, a0, a1, cut)
        for k in range(m):
            qn = L.qnorm[k, q]
            if qn != 0.0:
                sums[0, k], sums[1, k] = _label_rows(Xl[k], X, a0, a1, cut, qn, sums[0, k], sums[1, k])
    for k in range(m):  # query_grad's writes
        if L.qnorm[k, q] == 0.0:
            continue
        lg, lh = Xl[k, LAMBDA_G], Xl[k, LAMBDA_H]
        factor = norm_factor(norm, sums[0, k])
        hfactor = factor * L.hess_scale[k]
        out_g, out_h = grads[k], hess[k]
        for r in range(n):
            out_g[order[r]] += factor * lg[r]
            out_h[order[r]] += hfactor * lh[r]
        per_query[k, q] = sums[1, k] * factor
    return True
