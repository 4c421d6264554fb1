"""The scalar math of one pair of the pairwise losses, shared by the CPU and the GPU kernels.

Design note (the terms modules: ``_pairwise_terms``, ``_pointwise_terms``, ``_lambdarank_terms``,
``_structured_terms``). What is shared: every formula evaluated per pair, per row or per sorted
position, written once here as a plain ``@njit`` function over scalars (and, where a formula reads
a per-query table, over the table and an offset into it) with ``math.*`` only. ``np.exp`` /
``np.log1p`` do not compile for the GPU; ``math.exp`` / ``math.log1p`` give the CPU the same bits
(``benchmarks/objective_bits.py`` compares every loss's outputs byte for byte). The CPU kernels
(``_pairwise_kernels``, ...) call these functions directly; the GPU kernels (``_pairwise_cuda``,
...) call their GPU form, ``customobj._cuda_runtime.device_function(fn)`` (the one switch,
simulator included). What stays per target: the drivers, i.e. how the work is split and the
memory walked. The CPU loops over queries and scatters a pair into both of its rows; the GPU gives
each row (or query) a thread that gathers its own pairs in the CPU's order, so that a row's sum
has the CPU's bits without atomics. Those loops differ by target on purpose and are not shared.

An unknown code is never computed as another loss: these functions return NaN for it, and every
driver (CPU and GPU seam) refuses unknown codes before its loop.

The pair loss ``phi(d; theta)`` with ``d = s_i - s_j`` (row ``i`` should rank above row ``j``):

- ``LOGISTIC``     ``log(1 + exp(-theta d))``                 (RankNet, ``theta = sigma``)
- ``SQ_HINGE``     ``max(0, theta - d)^2``                     (RankSVM, QBRank, PreferencePairs)
- ``EXPONENTIAL``  ``exp(-theta d)``, exponent clipped at ``EXP_CLIP`` (MPBoost, ``theta = D_ij``)

Examples
--------
>>> pair_grad(PairKind.LOGISTIC, 0.0, 1.0)
(-0.5, 0.25)
>>> pair_theta(Theta.LDD, 3.0, 1.0, 0.5)
1.0
"""
import math
from enum import IntEnum

from numba import njit

from .._validation import MIN_PROPENSITY


class PairKind(IntEnum):
    """The pair loss ``phi``."""

    LOGISTIC = 0
    SQ_HINGE = 1
    EXPONENTIAL = 2


class Theta(IntEnum):
    """How ``theta`` follows from the labels ``y_i > y_j`` and the parameter ``p``."""

    CONST = 0  # theta = p
    DIFF = 1  # theta = y_i - y_j (QBRank's grade margin)
    LDD = 2  # theta = p (y_i - y_j)
    LOGDD = 3  # theta = log(1 + p (y_i - y_j))
    LOGITDD = 4  # theta = 1 / (1 + exp(-p (y_i - y_j)))


#: The pre-enum names of the codes (aliases of the members).
LOGISTIC, SQ_HINGE, EXPONENTIAL = PairKind
THETA_CONST, THETA_DIFF, THETA_LDD, THETA_LOGDD, THETA_LOGITDD = Theta

#: Largest exponent evaluated by the exponential (MPBoost) pair loss. Beyond it the loss continues
#: along its tangent, so gradients stay finite (exp(50) ~ 5e21: sums over thousands of pairs still fit
#: float32, which LightGBM uses for gradients) and the hessian keeps the curvature at the clip.
EXP_CLIP = 50.0


@njit(cache=True)
def kind_known(kind):
    return kind == LOGISTIC or kind == SQ_HINGE or kind == EXPONENTIAL


@njit(cache=True)
def theta_known(mode):
    return (mode == THETA_CONST or mode == THETA_DIFF or mode == THETA_LDD or mode == THETA_LOGDD
            or mode == THETA_LOGITDD)


@njit(cache=True)
def pair_theta(mode, yi, yj, p):
    """``theta`` of the label pair ``yi > yj`` under ``mode`` (a :class:`Theta` code); NaN for an unknown code."""
    diff = yi - yj
    if mode == THETA_CONST:
        return p
    if mode == THETA_DIFF:
        return diff
    if mode == THETA_LDD:
        return p * diff
    if mode == THETA_LOGDD:
        return math.log1p(p * diff)
    if mode == THETA_LOGITDD:
        return 1.0 / (1.0 + math.exp(-p * diff))  # p > 0, diff > 0: the exponent is negative
    return math.nan  # unknown code: the drivers refuse it before their loops


@njit(cache=True)
def pair_terms(kind, d, theta):
    """``(phi, dphi/dd, c)`` of one pair; ``c >= 0`` is the second derivative (or its surrogate)."""
    if kind == LOGISTIC:
        z = theta * d
        # phi = softplus(-z), rho = sigmoid(-z), both evaluated without overflow.
        if z >= 0.0:
            e = math.exp(-z)
            phi = math.log1p(e)
            rho = e / (1.0 + e)
        else:
            e = math.exp(z)
            phi = -z + math.log1p(e)
            rho = 1.0 / (1.0 + e)
        return phi, -theta * rho, theta * theta * (e / ((1.0 + e) * (1.0 + e)))
    if kind == SQ_HINGE:
        m = theta - d
        if m > 0.0:
            return m * m, -2.0 * m, 2.0
        return 0.0, 0.0, 0.0
    if kind == EXPONENTIAL:
        x = -theta * d
        if x <= EXP_CLIP:
            e = math.exp(x)
            return e, -theta * e, theta * theta * e
        e = math.exp(EXP_CLIP)
        return e * (1.0 + (x - EXP_CLIP)), -theta * e, theta * theta * e
    return math.nan, math.nan, math.nan  # unknown code: the drivers refuse it before their loops


@njit(cache=True)
def pair_grad(kind, d, theta):
    """``(dphi/dd, c)`` of one pair: ``pair_terms`` without the loss (no log in the hot loop)."""
    if kind == LOGISTIC:
        z = theta * d
        e = math.exp(-abs(z))
        inv = 1.0 / (1.0 + e)
        rho = e * inv if z >= 0.0 else inv
        return -theta * rho, theta * theta * e * inv * inv
    if kind == SQ_HINGE:
        m = theta - d
        if m > 0.0:
            return -2.0 * m, 2.0
        return 0.0, 0.0
    if kind == EXPONENTIAL:
        x = -theta * d
        e = math.exp(min(x, EXP_CLIP))
        return -theta * e, theta * theta * e
    return math.nan, math.nan  # unknown code: the drivers refuse it before their loops


@njit(cache=True)
def pair_weight(wi, wj):
    """The pair weight ``(w_i + w_j) / 2`` of two row weights, computed as ``w_i / 2 + w_j / 2`` (two
    weights near the float64 maximum cannot overflow; halving is exact). Scalars only: measured, a
    helper taking the weights array in the pair loop (even inlined) doubled RankNet's CPU time."""
    return 0.5 * wi + 0.5 * wj


#: Propensities below this are treated as "do not debias" (XGBoost's ``Eps64()``): dividing by
#: them would blow a pair up beyond any meaningful weight. The click estimators refuse a given
#: propensity below it (its home: ``customobj._validation.MIN_PROPENSITY``).
TINY_PROPENSITY = MIN_PROPENSITY


@njit(cache=True)
def debias_scale(tp, tm):
    """Unbiased LambdaMART's factor ``1 / (t+ t-)`` of a pair whose clicked row's position has the
    propensity ``tp`` and the other row's ``tm`` (Hu et al., WWW 2019, eq. 27; XGBoost's
    ``LambdaGrad<unbiased>``); 1 (not debiased) when either is below ``TINY_PROPENSITY``. Callers
    pass ``tp = tm = 1`` for a pair with an untracked position."""
    if tp >= TINY_PROPENSITY and tm >= TINY_PROPENSITY:
        return 1.0 / (tp * tm)
    return 1.0


@njit(cache=True)
def tracked_propensities(a, b, tplus, tminus):
    """``(tracked, tp, tm)`` of a pair at positions ``a`` (clicked row) and ``b``: whether both are
    below ``tplus.size`` (tracked; as in XGBoost only those are debiased and estimated), and
    ``t+[a]``, ``t-[b]`` (1 and 1 when not tracked)."""
    k = tplus.size
    if 0 <= a < k and 0 <= b < k:
        return True, tplus[a], tminus[b]
    return False, 1.0, 1.0
