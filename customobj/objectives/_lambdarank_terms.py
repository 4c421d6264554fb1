"""The scalar math of LambdaRank / LambdaMART (Burges 2010, sections 3, 4, 7), shared by the CPU
pass (``_lambdarank_pass``) and the GPU kernels (``_cuda_lambdarank``, through
``customobj._cuda_runtime.device_function``).

Design note (see ``_pair_terms`` for what every terms module shares and why): one sorted query's
per-position tables live in the rows of a float scratch ``F`` named by
:class:`~._lambdarank_records.Channel` (``F[Channel.P, o + r]`` for position ``r``); the CPU keeps
one query per block scratch (offset ``o = 0``), the GPU all queries side by side (``o`` = the
query's first row). Shared here: the tables of a sorted query (:func:`fill_prefixes`,
:func:`exp_table`), the pair's ``|dZ|`` from them (:func:`pair_dz`), its orientation and ``rho``
(:func:`pair_sigmoid`, :func:`rho`), its lambda, weight and hessian (:func:`pair_lambda`), the
``norm`` damping and factor, and the loss's softplus. What stays per target: the pair loops. The
CPU scatters each pair into both rows of one query and keeps a branch-free NDCG loop (about 10%
faster than the general one); the GPU gives each row a thread that gathers its own pairs in the
CPU's order. An unknown metric gives NaN here; both drivers refuse it before any query.

Measured (``benchmarks/objectives.py``, old and new code interleaved on a shared, loaded machine):
with :func:`pair_dz` called from the CPU's general pair loop (``inline="always"``), the ERR / MAP
/ MRR passes keep their speed (the ratios are in the commit and the lead's report); an earlier
separate ``|dZ|`` function over per-channel views had cost 4-6x, from the array arguments' reference
counts in each call. Here the one 2-D table ``F`` is passed and the call is inlined.

Examples
--------
>>> rho(1.0, 1.0, 0.0, 1.0)
0.5
>>> rho(1.0, 0.0, 2000.0, 1.0)  # exp(2000) overflows: rho is 0, as the compiled CPU pass gives
0.0
"""
import math

from numba import njit

from ._lambdarank_records import Channel, Metric

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


@njit(cache=True)
def fill_prefixes(metric, F, o, n, kk):
    """The metric's prefix tables of one sorted query of ``n`` rows (gains in ``F[Channel.GAIN]``),
    so that ``|dZ|`` needs no division in the pair loop.

    ERR: ``P[r] = prod_{m<r} T_m / (r + 1)`` (0 beyond the cutoff), ``A[r]`` = ERR summed up to
    ``r``, ``C[r] = 1 / T_r``. MAP: ``P[r] = hits_r / (r + 1)`` (0 beyond the cutoff),
    ``A[r] = (hits_r + 1) / (r + 1)``, ``S[r]`` = sum of ``1/(m + 1)`` over relevant ``m <= r``
    within the cutoff. MRR: ``A[r] = 1 / (r + 1)`` within the cutoff, else 0.
    Returns the first and second relevant positions (``n`` when absent; used by MRR).
    """
    first = n
    second = n
    if metric == Metric.ERR:
        p = 1.0
        acc = 0.0
        for r in range(n):
            g = F[Channel.GAIN, o + r]
            if r < kk:
                F[Channel.P, o + r] = p / (r + 1.0)
                acc += g * F[Channel.P, o + r]
            else:
                F[Channel.P, o + r] = 0.0
            F[Channel.A, o + r] = acc
            F[Channel.C, o + r] = 1.0 / (1.0 - g)  # R < 1, see listwise.LambdaRank._state
            p *= 1.0 - g
    elif metric == Metric.MAP:
        hits = 0.0
        acc = 0.0
        for r in range(n):
            if F[Channel.GAIN, o + r] > 0.0:
                hits += 1.0
                if r < kk:
                    acc += 1.0 / (r + 1.0)
            F[Channel.P, o + r] = hits / (r + 1.0) if r < kk else 0.0
            F[Channel.A, o + r] = (hits + 1.0) / (r + 1.0)
            F[Channel.S, o + r] = acc
    elif metric == Metric.MRR:
        for r in range(n):
            F[Channel.A, o + r] = 1.0 / (r + 1.0) if r < kk else 0.0
            if F[Channel.GAIN, o + r] > 0.0:
                if first == n:
                    first = r
                elif second == n:
                    second = r
    return first, second


@njit(cache=True)
def exp_table(F, o, n, sigma):
    """``F[Channel.EXP, o + r] = exp(sigma (s_r - s_0))`` in ``(0, 1]``: ``rho`` of a pair is then
    one division instead of one ``exp``."""
    for r in range(n):
        F[Channel.EXP, o + r] = math.exp(sigma * (F[Channel.SCORE, o + r] - F[Channel.SCORE, o]))


@njit(cache=True, inline="always")
def pair_dz(metric, F, o, a, b, ga, gb, kk, first, second, a_first, disc):
    """``|dZ|`` (before ``qnorm``) of the pair at sorted positions ``a < b`` with gains ``ga != gb``:
    the change of the metric when the two rows swap (``first``, ``second``, ``a_first``: MRR's
    first and second relevant positions and ``A[first]``). NaN for an unknown metric."""
    if metric == Metric.NDCG:
        return abs(ga - gb) * (disc[a] - disc[b])
    if metric == Metric.ERR:
        # Burges sec. 3: the rank-a term, the rows between a and b (their prefix product changes
        # by T_b / T_a), the rank-b term; rows below b are unchanged.
        ca = F[Channel.C, o + a]
        mid = F[Channel.A, o + min(b - 1, kk - 1)] - F[Channel.A, o + a]
        return abs(F[Channel.P, o + a] * (ga - gb) + (gb - ga) * ca * mid
                   + F[Channel.P, o + b] * (gb - (1.0 - gb) * ga * ca))
    if metric == Metric.MAP:
        mid = F[Channel.S, o + min(b - 1, kk - 1)] - F[Channel.S, o + a]
        if ga > 0.0:  # the relevant row moves down from a to b
            return abs(F[Channel.P, o + b] - F[Channel.P, o + a] - mid)
        return abs(F[Channel.A, o + a] + mid - F[Channel.P, o + b])
    if metric == Metric.MRR:
        if ga > 0.0:
            return abs(a_first - F[Channel.A, o + min(b, second)]) if a == first else 0.0
        return abs(F[Channel.A, o + a] - a_first) if a < first else 0.0
    return math.nan  # unknown metric: the drivers refuse it before any query


@njit(cache=True, inline="always")
def pair_sigmoid(F, o, a, b, ga, gb, sigma):
    """``(sg, d, rho)`` of the pair at positions ``a < b``: ``sg = +1`` when the upper position
    holds the better row, ``d = s_better - s_worse``, ``rho = 1 / (1 + exp(sigma d))``."""
    if ga > gb:
        d = F[Channel.SCORE, o + a] - F[Channel.SCORE, o + b]
        return 1.0, d, rho(F[Channel.EXP, o + a], F[Channel.EXP, o + b], d, sigma)
    d = F[Channel.SCORE, o + b] - F[Channel.SCORE, o + a]
    return -1.0, d, rho(F[Channel.EXP, o + b], F[Channel.EXP, o + a], d, sigma)


@njit(cache=True, inline="always")
def damped(dz, damp, d):
    """LightGBM's ``lambdarank_norm``: each pair damped by its score distance (``damp``: norm is on
    and the query's scores do not all tie)."""
    if damp:
        return dz / (0.01 + abs(d))
    return dz


@njit(cache=True, inline="always")
def pair_lambda(F, o, a, b, dz, rho_, sigma, sig2):
    """``(lambda, pw, h)``: the pair's unweighted lambda, its weight ``(w_a + w_b) / 2`` and its
    weighted hessian ``sigma^2 |dZ| rho (1 - rho) pw``."""
    pw = 0.5 * (F[Channel.WEIGHT, o + a] + F[Channel.WEIGHT, o + b])
    return sigma * dz * rho_, pw, sig2 * dz * rho_ * (1.0 - rho_) * pw


@njit(cache=True, inline="always")
def norm_factor(norm, sum_lambda):
    """LightGBM's ``lambdarank_norm``: the query's lambdas scaled by ``log2(1 + S) / S``."""
    if norm and sum_lambda > 0.0:
        return math.log2(1.0 + sum_lambda) / sum_lambda
    return 1.0
