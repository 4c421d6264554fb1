"""The scalar math of LambdaRank / LambdaMART (Burges 2010, sections 3, 4, 7), shared by the CPU
pass (``_lambdarank_pass``) and the GPU kernels (``_lambdarank_cuda``, through
``customobj._cuda_runtime.device_function``).

Design note (see ``_pairwise_terms`` for what every terms module shares and why): one sorted query's
per-position tables live in the rows of a float scratch ``F`` named by
:class:`~._lambdarank_records.Channel` (``F[Channel.P, o + r]`` for position ``r``); the CPU keeps
one query per block scratch (offset ``o = 0``), the GPU all queries side by side (``o`` = the
query's first row). Shared here: the tables of a sorted query (:func:`fill_prefixes`,
:func:`exp_table`), the pair's ``|dZ|`` from them (:func:`pair_dz`), its orientation and ``rho``
(:func:`pair_sigmoid`, :func:`rho`), its lambda, weight and hessian (:func:`pair_lambda`), the
``norm`` damping and factor, and the loss's softplus. What stays per target: the pair loops. The
CPU scatters each pair into both rows of one query and keeps a branch-free NDCG loop; the GPU gives
each row a thread that gathers its own pairs in the CPU's order. An unknown metric gives NaN here; both drivers refuse it before any query.

The per-pair formulas are scalar functions (:func:`ndcg_dz`, :func:`err_dz`, :func:`map_dz`,
:func:`mrr_dz`, :func:`rho`, :func:`damped`, :func:`lambda_hess`): no array arguments, so LLVM inlines
them into any loop. Which table entries they read is per target: :func:`pair_dz` /
:func:`pair_sigmoid` read them from ``F`` (the GPU); the CPU's general pair loop reads them from
per-channel views hoisted out of its inner loop, which measured faster than calling them (2-D loads
per pair; the measurements: docs/kernel-notes.md).

Examples
--------
>>> rho(1.0, 1.0, 0.0, 1.0)
0.5
>>> rho(1.0, 0.0, 2000.0, 1.0)  # exp(2000) overflows: rho is 0, as the compiled CPU pass gives
0.0
"""
import math

import numpy as np
from numba import njit

from ._lambdarank_records import Channel, Metric
from ._pairwise_terms import debias_scale

# The channels and metric codes as plain ints: numba's CUDA target takes no IntEnum as an index.
_GAIN, _SCORE, _WEIGHT, _EXP = int(Channel.GAIN), int(Channel.SCORE), int(Channel.WEIGHT), int(Channel.EXP)
_P, _A, _C, _S = int(Channel.P), int(Channel.A), int(Channel.C), int(Channel.S)
_NDCG, _ERR, _MAP, _MRR = int(Metric.NDCG), int(Metric.ERR), int(Metric.MAP), int(Metric.MRR)

#: Smallest ``exp`` table entry used directly by :func:`rho` (below it the table has underflowed).
EXP_FLOOR = 1e-280
#: Largest ``x`` with a finite ``exp(x)`` in float64 (``log`` of the largest double); beyond it
#: ``1 / (1 + exp(x))`` is 0, which compiled code gets from ``exp``'s inf and Python's ``math.exp``
#: (the GPU kernels under the simulator) would raise ``OverflowError`` for instead.
EXP_ARG_MAX = 709.782712893384


@njit(cache=True, inline="always")
def rho(e_hi, e_lo, d, sigma):
    """``1 / (1 + exp(sigma d))`` with ``d = s_hi - s_lo``, from the ``exp`` table entries of the two
    rows; the direct ``exp`` when the table underflows, 0 where that ``exp`` overflows."""
    if e_lo > EXP_FLOOR:
        return e_lo / (e_lo + e_hi)
    x = sigma * d
    if x > EXP_ARG_MAX:
        return 0.0
    return 1.0 / (1.0 + math.exp(x))


@njit(cache=True, inline="always")
def softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


#: The softplus table of the fused gradient + loss pass (GRAD_LOSS, the per-label costs ``MultiObjective``
#: reads each round): ``f(z) = log(1 + exp(-z))`` at ``z = k h``, ``h = SOFTPLUS_STEP``, up to
#: ``SOFTPLUS_RANGE`` (``f(40) = 4.2e-18``), its last entry repeated so that the end needs no branch.
#: The exact per-pair ``log1p(exp(.))`` made that pass 2.5x the gradient pass (docs/multi-objective.md).
SOFTPLUS_STEP = 1.0 / 64.0
SOFTPLUS_RANGE = 40.0
_SOFTPLUS_LAST = SOFTPLUS_RANGE / SOFTPLUS_STEP
_SOFTPLUS_TABLE = np.log1p(np.exp(-np.arange(int(_SOFTPLUS_LAST) + 2) * SOFTPLUS_STEP))
_SOFTPLUS_TABLE[-1] = _SOFTPLUS_TABLE[-2]
_SOFTPLUS_TABLE.setflags(write=False)
#: Row ``i``: ``(T[i], T[i + 1] - T[i])``, the knot and its slope (the same IEEE subtraction
#: :func:`softplus_tabled` does per call) side by side: one base address and one index per pair.
_SOFTPLUS_KNOTS = np.ascontiguousarray(np.column_stack([_SOFTPLUS_TABLE[:-1], np.diff(_SOFTPLUS_TABLE)]))
_SOFTPLUS_KNOTS.setflags(write=False)
#: Largest absolute error of :func:`softplus_tabled` beside the rounding of its result (``2^-52`` of it):
#: linear interpolation is within ``h^2 / 8 max|f''|`` and ``f'' = sigmoid (1 - sigmoid) <= 1/4``; past
#: the range ``f <= exp(-40)``; the table's and the interpolation's rounding add less than 1e-15.
SOFTPLUS_TABLE_ERROR = SOFTPLUS_STEP * SOFTPLUS_STEP / 32.0 + 1e-15


@njit(cache=True, inline="always")
def softplus_tabled(x):
    """``log(1 + exp(x))`` within ``SOFTPLUS_TABLE_ERROR`` (plus ``2^-52`` of the result) as
    ``max(x, 0) + f(|x|)``, ``f`` interpolated linearly in ``_SOFTPLUS_TABLE``: no ``exp`` or ``log``
    per pair. A NaN ``x`` reads the table's end (never out of bounds).

    >>> abs(softplus_tabled(0.3) - softplus(0.3)) <= SOFTPLUS_TABLE_ERROR
    True
    """
    z = abs(x) * (1.0 / SOFTPLUS_STEP)
    if not z < _SOFTPLUS_LAST:
        z = _SOFTPLUS_LAST
    i = int(z)
    lo = _SOFTPLUS_TABLE[i]
    return max(x, 0.0) + (lo + (z - i) * (_SOFTPLUS_TABLE[i + 1] - lo))


@njit(cache=True, inline="always")
def softplus_sorted(gap, up, sigma, zscale):
    """:func:`softplus_tabled` of a pair of a sorted query, the same bits with fewer operations per pair:
    ``gap = s_a - s_b >= 0`` (``a`` above ``b``), ``up`` when ``a`` holds the better row, ``zscale =
    sigma / SOFTPLUS_STEP`` (per pass). The pair's loss argument is ``x = -sigma d`` with ``d = s_better -
    s_worse``, so ``|x| = sigma gap`` (no ``abs``, no sign select) and ``max(x, 0)`` is ``0`` when ``up``,
    else ``sigma gap`` (no ``max``); the slope is read beside the knot in ``_SOFTPLUS_KNOTS`` (no subtraction). Scaling
    by the power of two ``1 / SOFTPLUS_STEP`` is exact, so the index and the fraction are
    :func:`softplus_tabled`'s (tests/test_objectives_lambdarank_terms.py compares the bits).

    >>> softplus_sorted(0.3, False, 1.0, 64.0) == softplus_tabled(0.3)
    True
    """
    z = gap * zscale  # >= 0: the pass's scores are finite and sorted (``Objective`` refuses others)
    if not z < _SOFTPLUS_LAST:
        z = _SOFTPLUS_LAST
    i = int(z)
    u = np.uint64(i)  # 0 <= i <= _SOFTPLUS_LAST: an unsigned index needs no negative-index wraparound per pair
    return (0.0 if up else sigma * gap) + (_SOFTPLUS_KNOTS[u, 0] + (z - i) * _SOFTPLUS_KNOTS[u, 1])


@njit(cache=True)
def fill_prefixes(metric, F, o, n, kk):
    """The metric's prefix tables of one sorted query of ``n`` rows (gains in ``F[_GAIN]``),
    so that ``|dZ|`` needs no division in the pair loop.

    ERR: ``P[r] = prod_{m<r} T_m / (r + 1)`` (0 beyond the cutoff), ``A[r]`` = ERR summed up to
    ``r``, ``C[r] = 1 / T_r``. MAP: ``P[r] = hits_r / (r + 1)`` (0 beyond the cutoff),
    ``A[r] = (hits_r + 1) / (r + 1)``, ``S[r]`` = sum of ``1/(m + 1)`` over relevant ``m <= r``
    within the cutoff. MRR: ``A[r] = 1 / (r + 1)`` within the cutoff, else 0.
    Returns the first and second relevant positions (``n`` when absent; used by MRR).
    """
    first = n
    second = n
    if metric == _ERR:
        p = 1.0
        acc = 0.0
        for r in range(n):
            g = F[_GAIN, o + r]
            if r < kk:
                F[_P, o + r] = p / (r + 1.0)
                acc += g * F[_P, o + r]
            else:
                F[_P, o + r] = 0.0
            F[_A, o + r] = acc
            F[_C, o + r] = 1.0 / (1.0 - g)  # R < 1, see listwise.LambdaRank._state
            p *= 1.0 - g
    elif metric == _MAP:
        hits = 0.0
        acc = 0.0
        for r in range(n):
            if F[_GAIN, o + r] > 0.0:
                hits += 1.0
                if r < kk:
                    acc += 1.0 / (r + 1.0)
            F[_P, o + r] = hits / (r + 1.0) if r < kk else 0.0
            F[_A, o + r] = (hits + 1.0) / (r + 1.0)
            F[_S, o + r] = acc
    elif metric == _MRR:
        for r in range(n):
            F[_A, o + r] = 1.0 / (r + 1.0) if r < kk else 0.0
            if F[_GAIN, o + r] > 0.0:
                if first == n:
                    first = r
                elif second == n:
                    second = r
    return first, second


@njit(cache=True)
def exp_table(F, o, n, sigma):
    """``F[_EXP, o + r] = exp(sigma (s_r - s_0))`` in ``(0, 1]``: ``rho`` of a pair is then
    one division instead of one ``exp``."""
    for r in range(n):
        exp_entry(F, o, r, sigma)


@njit(cache=True)
def exp_entry(F, o, r, sigma):
    """Entry ``r`` of :func:`exp_table` (the GPU's threads of a query fill the entries in parallel)."""
    F[_EXP, o + r] = math.exp(sigma * (F[_SCORE, o + r] - F[_SCORE, o]))


@njit(cache=True)
def ndcg_dz(ga, gb, da, db):
    """NDCG's ``|dZ|`` of a pair with gains ``ga``, ``gb`` and discounts ``da``, ``db`` (before ``qnorm``)."""
    return abs(ga - gb) * (da - db)


@njit(cache=True)
def err_dz(ga, gb, pa, pb, ca, mid):
    """ERR's ``|dZ|`` (Burges sec. 3) of the pair at positions ``a < b``: the rank-a term, the rows
    between a and b (their prefix product changes by ``T_b / T_a``; ``mid = A[min(b - 1, k - 1)] -
    A[a]``), the rank-b term; rows below b are unchanged. ``pa``, ``pb`` = ``P[a]``, ``P[b]``, ``ca`` = ``C[a]``."""
    return abs(pa * (ga - gb) + (gb - ga) * ca * mid + pb * (gb - (1.0 - gb) * ga * ca))


@njit(cache=True)
def map_dz(ga, pa, pb, aa, mid):
    """MAP's ``|dZ|`` of the pair at positions ``a < b`` (``mid = S[min(b - 1, k - 1)] - S[a]``,
    ``aa = A[a]``)."""
    if ga > 0.0:  # the relevant row moves down from a to b
        return abs(pb - pa - mid)
    return abs(aa + mid - pb)


@njit(cache=True)
def mrr_dz(ga, a, first, a_first, a_low, aa):
    """MRR's ``|dZ|`` of the pair at positions ``a < b``: only the first relevant position matters
    (``a_first = A[first]``, ``a_low = A[min(b, second)]``, ``aa = A[a]``)."""
    if ga > 0.0:
        return abs(a_first - a_low) if a == first else 0.0
    return abs(aa - a_first) if a < first else 0.0


@njit(cache=True)
def pair_dz(metric, F, o, a, b, ga, gb, kk, first, second, a_first, disc):
    """``|dZ|`` (before ``qnorm``) of the pair at sorted positions ``a < b`` with gains ``ga != gb``
    read from the tables ``F`` (the GPU's pair functions; the CPU's general pair loop makes the same
    calls from its per-channel views). NaN for an unknown metric."""
    if metric == _NDCG:
        return ndcg_dz(ga, gb, disc[a], disc[b])
    if metric == _ERR:
        mid = F[_A, o + min(b - 1, kk - 1)] - F[_A, o + a]
        return err_dz(ga, gb, F[_P, o + a], F[_P, o + b], F[_C, o + a], mid)
    if metric == _MAP:
        mid = F[_S, o + min(b - 1, kk - 1)] - F[_S, o + a]
        return map_dz(ga, F[_P, o + a], F[_P, o + b], F[_A, o + a], mid)
    if metric == _MRR:
        return mrr_dz(ga, a, first, a_first, F[_A, o + min(b, second)], F[_A, o + a])
    return math.nan  # unknown metric: the drivers refuse it before any query


@njit(cache=True)
def pair_sigmoid(F, o, a, b, ga, gb, sigma):
    """``(sg, d, rho)`` of the pair at positions ``a < b``: ``sg = +1`` when the upper position
    holds the better row, ``d = s_better - s_worse``, ``rho = 1 / (1 + exp(sigma d))``."""
    if ga > gb:
        d = F[_SCORE, o + a] - F[_SCORE, o + b]
        return 1.0, d, rho(F[_EXP, o + a], F[_EXP, o + b], d, sigma)
    d = F[_SCORE, o + b] - F[_SCORE, o + a]
    return -1.0, d, rho(F[_EXP, o + b], F[_EXP, o + a], d, sigma)


@njit(cache=True, inline="always")
def damped(dz, damp, d):
    """LightGBM's ``lambdarank_norm``: each pair damped by its score distance (``damp``: norm is on
    and the query's scores do not all tie)."""
    if damp:
        return dz / (0.01 + abs(d))
    return dz


@njit(cache=True)
def lambda_hess(dz, rho_, pw, sigma, sig2):
    """``(lambda, h)``: the pair's unweighted lambda ``sigma |dZ| rho`` and its hessian
    ``sigma^2 |dZ| rho (1 - rho)`` times the pair weight ``pw``."""
    return sigma * dz * rho_, sig2 * dz * rho_ * (1.0 - rho_) * pw


@njit(cache=True)
def pair_weight(wa, wb):
    """The pair weight ``(w_a + w_b) / 2`` of two rows' weights."""
    return 0.5 * (wa + wb)


@njit(cache=True, inline="always")
def norm_factor(norm, sum_lambda):
    """LightGBM's ``lambdarank_norm``: the query's lambdas scaled by ``log2(1 + S) / S``."""
    if norm and sum_lambda > 0.0:
        return math.log2(1.0 + sum_lambda) / sum_lambda
    return 1.0


@njit(cache=True)
def unbiased_pair(lam, h, dz, d, sigma, tp, tm, swapped):
    """XGBoost's ``LambdaGrad<unbiased>`` (Hu et al., WWW 2019, sec. 4-5): ``(lambda, h, cost, est)``
    of a pair with unweighted ``lam`` and ``h`` (:func:`lambda_hess`), ``|dZ|`` ``dz`` and
    ``d = s_better - s_worse``, debiased by the propensities ``tp`` (``t+`` of the better, clicked
    row's position) and ``tm`` (``t-`` of the other's): lambda, hessian and the loss
    ``|dZ| softplus(-sigma d)`` divided by ``t+ t-`` (:func:`~._pairwise_terms.debias_scale`).
    ``est``, the cost the propensity estimate sums, stays undebiased: the swapped pair's
    ``|dZ| softplus(sigma d)`` (``swapped``, XGBoost's ``log(1 / (1 - sigmoid))``) or the loss."""
    u = debias_scale(tp, tm)
    x = sigma * d
    cost = dz * softplus(-x)
    est = dz * softplus(x) if swapped else cost
    return lam * u, h * u, cost * u, est
