"""GRAD_LOSS's pair terms of LambdaRank's NDCG pass (``_lambdarank_pass._ndcg_pairs``, MultiObjective's
per-label costs): every term of a pair (``rho``, the damping, the cost, ``2 lambda``, the signed weighted
lambda, the weighted hessian) computed in whole vectors for ``LOSS_ROWS`` upper rows at a time
(:func:`_rows_losses`), then added in the pair order (:func:`_ndcg_row_loss`), with the expressions of
``_lambdarank_pass._ndcg_row``, so the gradients are GRAD's bits and the costs the GPU's
(``_lambdarank_loss_cuda``). Measured: docs/multi-objective.md, "Every pair term of GRAD_LOSS in whole
vectors".
"""
import numpy as np
from numba import njit

from ._lambdarank_records import (LOSS_LANES, LOSS_ROWS, N_CHANNELS, TERM_COST, TERM_HESS, TERM_LAMBDA, TERM_LAMBDA2,
                                  Channel)
from ._lambdarank_terms import softplus_sorted

__all__ = ["_ndcg_row_loss", "_pad_losses", "_rows_losses"]


@njit(cache=True)
def _pad_losses(inp, n, F):
    """Before NDCG's GRAD_LOSS pairs of a sorted query of ``n`` rows: ``D`` into ``F[P]`` (read beside
    the other channels), and the ``LOSS_LANES`` columns past the query made harmless for
    :func:`_rows_losses`' last vector of a row (finite, gap 0: their losses are computed, never read)."""
    g, s, w, d, e = F[Channel.GAIN], F[Channel.SCORE], F[Channel.WEIGHT], F[Channel.P], F[Channel.EXP]
    d[:n] = inp.disc[:n]
    for r in range(n, n + LOSS_LANES):
        g[r] = 0.0
        s[r] = s[n - 1]
        w[r] = 0.0
        d[r] = 0.0
        e[r] = e[n - 1]  # > EXP_FLOOR (query_grad's check): rho's denominator stays positive


@njit(cache=True, error_model="numpy")
def _rows_losses(F, a0, a1, n, qn, sigma, zscale, damp):
    """GRAD_LOSS's pair terms of the upper positions ``a0 <= a < a1`` (at most ``LOSS_ROWS``): for ``b`` in
    ``a + 1 .. n - 1`` (and on to a whole number of ``LOSS_LANES``, the padding of :func:`_pad_losses`) the
    pair's cost ``w_ab |dZ_ab| softplus_sorted(s_a - s_b)``, ``2 lambda``, the signed weighted lambda and the
    weighted hessian, in the rows ``TERM_*`` of ``a`` (``N_CHANNELS + TERM_* + a - a0``), each with
    ``_ndcg_row``'s expressions, so the same bits (0 for equal grades). Its own loop, without the gradients'
    scatter and ordered sums, is one LLVM vectorises (both divisions in whole vectors, the softplus knots by
    a gather) with no scalar remainder; :func:`_ndcg_row_loss` then only adds each value in its order (the
    scalar loop did two divisions a pair: on AMD Zen 3 the loss pass took 1.4x the gradient pass).
    Unsigned indices: no negative-index wraparound. ``error_model="numpy"``: no zero-division branch
    (``0.01 + |d| > 0``, ``e_a + e_b > 0``). Not inlined (its vector registers pushed the pair loop's values
    onto the stack), so it is called once per ``LOSS_ROWS`` upper rows, with scalars and ``F``."""
    g, s, w, d, e = F[Channel.GAIN], F[Channel.SCORE], F[Channel.WEIGHT], F[Channel.P], F[Channel.EXP]
    sig2 = sigma * sigma
    for a in range(a0, a1):
        ga, da, sa, wa, ea = g[a], d[a], s[a], w[a], e[a]
        row = N_CHANNELS + a - a0
        cost, lam2, lams, hess = F[row + TERM_COST], F[row + TERM_LAMBDA2], F[row + TERM_LAMBDA], F[row + TERM_HESS]
        for t in range(a + 1, a + 1 + (n - a + LOSS_LANES - 2) // LOSS_LANES * LOSS_LANES):
            b = np.uint64(t)
            gb = g[b]
            eb = e[b]
            up = ga > gb
            rho = (eb if up else ea) / (ea + eb)
            dz = abs(ga - gb) * (da - d[b])
            dz *= qn
            gap = sa - s[b]
            if damp:
                dz = dz / (0.01 + abs(gap))
            lam = sigma * dz * rho
            lam2[b] = 2.0 * lam
            pw = 0.5 * (wa + w[b])
            lams[b] = lam * (pw * (1.0 if up else -1.0))
            hess[b] = sig2 * dz * rho * (1.0 - rho) * pw
            cost[b] = pw * dz * softplus_sorted(gap, up, sigma, zscale)


@njit(cache=True, inline="always")
def _ndcg_row_loss(a, n, F):
    """GRAD_LOSS's sums of the upper position ``a`` from :func:`_rows_losses`' terms, in ``_ndcg_row``'s
    order: ``(acc_g, acc_h, row_lambda, row_total)``, each lower row's lambda and hessian added to it."""
    lg, lh = F[Channel.LAMBDA_G], F[Channel.LAMBDA_H]
    row = N_CHANNELS + a % LOSS_ROWS
    cost, lam2, lams, hess = F[row + TERM_COST], F[row + TERM_LAMBDA2], F[row + TERM_LAMBDA], F[row + TERM_HESS]
    acc_g = 0.0
    acc_h = 0.0
    row_lambda = 0.0
    row_total = 0.0
    for b in range(a + 1, n):
        lam = lams[b]
        h = hess[b]
        row_lambda += lam2[b]
        row_total += cost[b]
        acc_g -= lam
        lg[b] += lam
        acc_h += h
        lh[b] += h
    return acc_g, acc_h, row_lambda, row_total
