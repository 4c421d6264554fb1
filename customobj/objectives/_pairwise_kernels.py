"""Numba kernels of the pairwise losses (docs/formulas.md, "Pairwise"). Each grad/hess kernel adds into its outputs.

Every pair term is ``scale * phi(d; theta)`` with ``d = s_i - s_j`` (row ``i`` should rank above
row ``j``), times the pair weight ``(w_i + w_j) / 2``, computed as ``w_i / 2 + w_j / 2`` (halved before the
sum, so two weights near the float64 maximum cannot overflow; the bits are the same: halving is exact). The family ``kind`` picks ``phi``:

- ``LOGISTIC``     ``log(1 + exp(-theta d))``                 (RankNet, ``theta = sigma``)
- ``SQ_HINGE``     ``max(0, theta - d)^2``                     (RankSVM, QBRank, PreferencePairs; ``theta`` = margin)
- ``EXPONENTIAL``  ``exp(-theta d)``, exponent clipped at ``EXP_CLIP`` (MPBoost, ``theta = D_ij``)

and ``theta_mode`` says how ``theta`` follows from the two labels (a constant, the grade difference,
or one of MPBoost's directed distance functions). Both are ``IntEnum`` codes (:class:`PairKind`,
:class:`Theta`) carried with ``p``, ``scale`` and ``hmul`` by one :class:`PairSpec` record, built
and validated in Python by :func:`pair_spec`; the kernels read them as plain ints so one compiled
loop serves every loss (no function arguments inside kernels); measured against a
hand-specialised RankNet loop the dispatch costs ~13% CPU (benchmarks/pairwise_strategies.py).
Gradient loops call ``pair_grad``, which skips the loss (its log1p tripled RankNet's time).
Every driver checks the codes before its loop and returns a ``KernelStatus`` (last, with any value):
an unknown code computes nothing and returns ``UNKNOWN_CODE`` (``customobj._kernel_status``);
``pair_theta`` / ``pair_terms`` / ``pair_grad`` themselves return NaN for one.

Label pairs are enumerated per query from rows sorted by label (``order``, built once per dataset
by ``label_order_kernel``): for position ``a`` of the sorted query, the rows it beats are the
contiguous block ``order[lower[a]:hi]``. This visits exactly the pairs ``y_i > y_j`` without
materialising them and without a data-dependent branch per candidate pair.
"""
import math
from enum import IntEnum
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .._kernel_status import KernelStatus, as_code


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


class PairSpec(NamedTuple):
    """One pair loss as the kernels take it: ``scale * phi(d; theta)``, hessian times ``hmul``."""

    kind: int  # a PairKind code
    theta_mode: int  # a Theta code (label pairs; explicit pairs carry their own theta)
    p: float
    scale: float
    hmul: float  # multiplies the hessian (QBRank's bound: 2)


def pair_spec(kind: int, theta_mode: int, p: float, scale: float, hmul: float = 1.0) -> PairSpec:
    """The validated :class:`PairSpec` (plain-int codes: one compiled kernel for every loss).

    Examples
    --------
    >>> pair_spec(PairKind.LOGISTIC, Theta.CONST, 1.0, 1.0)
    PairSpec(kind=0, theta_mode=0, p=1.0, scale=1.0, hmul=1.0)
    """
    return PairSpec(as_code(kind, PairKind, "kind"), as_code(theta_mode, Theta, "theta_mode"),
                    float(p), float(scale), float(hmul))

#: Largest exponent evaluated by the exponential (MPBoost) pair loss. Beyond it the loss continues
#: along its tangent, so gradients stay finite (exp(50) ~ 5e21: sums over thousands of pairs still fit
#: float32, which LightGBM uses for gradients) and the hessian keeps the curvature at the clip.
EXP_CLIP = 50.0


@njit(cache=True)
def pair_theta(mode, yi, yj, p):
    diff = yi - yj
    if mode == THETA_CONST:
        return p
    if mode == THETA_DIFF:
        return diff
    if mode == THETA_LDD:
        return p * diff
    if mode == THETA_LOGDD:
        return np.log1p(p * diff)
    if mode == THETA_LOGITDD:
        return 1.0 / (1.0 + np.exp(-p * diff))
    return np.nan  # unknown code: the drivers refuse it before their loops


@njit(cache=True)
def _kind_known(kind):
    return kind == LOGISTIC or kind == SQ_HINGE or kind == EXPONENTIAL


@njit(cache=True)
def _theta_known(mode):
    return (mode == THETA_CONST or mode == THETA_DIFF or mode == THETA_LDD or mode == THETA_LOGDD
            or mode == THETA_LOGITDD)


@njit(cache=True)
def _spec_status(spec):
    if _kind_known(spec.kind) and _theta_known(spec.theta_mode):
        return KernelStatus.OK
    return KernelStatus.UNKNOWN_CODE


@njit(cache=True)
def pair_terms(kind, d, theta):
    """``(phi, dphi/dd, c)`` of one pair; ``c >= 0`` is the second derivative (or its surrogate)."""
    if kind == LOGISTIC:
        z = theta * d
        # phi = softplus(-z), rho = sigmoid(-z), both evaluated without overflow.
        if z >= 0.0:
            e = np.exp(-z)
            phi = np.log1p(e)
            rho = e / (1.0 + e)
        else:
            e = np.exp(z)
            phi = -z + np.log1p(e)
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
            e = np.exp(x)
            return e, -theta * e, theta * theta * e
        e = np.exp(EXP_CLIP)
        return e * (1.0 + (x - EXP_CLIP)), -theta * e, theta * theta * e
    return np.nan, np.nan, np.nan  # unknown code: the drivers refuse it before their loops


@njit(cache=True)
def pair_grad(kind, d, theta):
    """``(dphi/dd, c)`` of one pair: ``pair_terms`` without the loss (no log in the hot loop).
    Written with ``math.*``: the GPU kernels of LambdaLoss and YetiRank call it as a device function."""
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


# --- label order ------------------------------------------------------------------------------------
@njit(cache=True)
def label_order_kernel(labels, ptr, out_order, out_lower):
    """Rows of each query by decreasing label (stable), and for each sorted position the first
    position holding a strictly smaller label (``hi`` when none)."""
    for q in range(ptr.size - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        if hi == lo:
            continue
        idx = np.argsort(-labels[lo:hi], kind="mergesort")
        for t in range(hi - lo):
            out_order[lo + t] = lo + idx[t]
        nxt = hi
        for t in range(hi - 1, lo - 1, -1):
            out_lower[t] = nxt
            if t > lo and labels[out_order[t - 1]] > labels[out_order[t]]:
                nxt = t


# --- label pairs, one query at a time -------------------------------------------------------------------
@njit(cache=True)
def _query_grad_hess(scores, labels, order, lower, lo, hi, weights, use_w, spec, out_grad, out_hess):
    kind, theta_mode, p, scale, hmul = spec.kind, spec.theta_mode, spec.p, spec.scale, spec.hmul
    for a in range(lo, hi):
        i = order[a]
        yi = labels[i]
        si = scores[i]
        gi = 0.0
        hi_acc = 0.0
        for b in range(lower[a], hi):
            j = order[b]
            theta = pair_theta(theta_mode, yi, labels[j], p)
            g, c = pair_grad(kind, si - scores[j], theta)
            pw = scale
            if use_w:
                pw *= (0.5 * weights[i] + 0.5 * weights[j])
            gi += pw * g
            hi_acc += hmul * pw * c
            out_grad[j] -= pw * g
            out_hess[j] += hmul * pw * c
        out_grad[i] += gi
        out_hess[i] += hi_acc


@njit(cache=True)
def label_pairs_grad_hess(scores, labels, ptr, order, lower, weights, use_w, spec, out_grad, out_hess):
    """Sum over the label pairs of every query (``spec``: a :class:`PairSpec`); returns the status."""
    status = _spec_status(spec)
    if status != KernelStatus.OK:
        return status
    for q in range(ptr.size - 1):
        _query_grad_hess(scores, labels, order, lower, ptr[q], ptr[q + 1], weights, use_w, spec, out_grad, out_hess)
    return status


@njit(cache=True, parallel=True)
def label_pairs_grad_hess_parallel(scores, labels, ptr, order, lower, weights, use_w, spec, out_grad, out_hess):
    """As ``label_pairs_grad_hess``; queries write disjoint rows, so they run in parallel.

    The objectives use this one (2 cores, idle machine: RankNet 95 vs 114 ms, RankSVM 77 vs 89 ms
    at 2,000 x 120); the serial twin stays for comparison and single-threaded callers."""
    status = _spec_status(spec)
    if status != KernelStatus.OK:
        return status
    for q in prange(ptr.size - 1):
        _query_grad_hess(scores, labels, order, lower, ptr[q], ptr[q + 1], weights, use_w, spec, out_grad, out_hess)
    return status


@njit(cache=True)
def _query_loss(scores, labels, order, lower, lo, hi, weights, use_w, spec):
    kind, theta_mode, p, scale = spec.kind, spec.theta_mode, spec.p, spec.scale
    total = 0.0
    for a in range(lo, hi):
        i = order[a]
        for b in range(lower[a], hi):
            j = order[b]
            theta = pair_theta(theta_mode, labels[i], labels[j], p)
            phi, _, _ = pair_terms(kind, scores[i] - scores[j], theta)
            pw = scale
            if use_w:
                pw *= (0.5 * weights[i] + 0.5 * weights[j])
            total += pw * phi
    return total


@njit(cache=True, parallel=True)
def label_pairs_loss(scores, labels, ptr, order, lower, weights, use_w, spec):
    """``(loss, status)`` over the label pairs; per-query sums in parallel, added in query order
    (deterministic)."""
    status = _spec_status(spec)
    if status != KernelStatus.OK:
        return 0.0, status
    nq = ptr.size - 1
    per_query = np.zeros(nq)
    for q in prange(nq):
        per_query[q] = _query_loss(scores, labels, order, lower, ptr[q], ptr[q + 1], weights, use_w, spec)
    total = 0.0
    for q in range(nq):
        total += per_query[q]
    return total, status


# --- explicit pair lists (serial: pairs may share rows across queries) ----------------------------------
# ``spec.theta_mode`` and ``spec.p`` are not read here: every pair carries its own ``theta[k]``.
@njit(cache=True)
def _listed_pair_weight(scale, pair_w, use_pw, weights, use_w, k, i, j):
    """The weight of listed pair ``k = (i, j)``: ``scale``, times its own weight, times the pair weight
    ``(w_i + w_j) / 2`` of the rows."""
    pw = scale
    if use_pw:
        pw *= pair_w[k]
    if use_w:
        pw *= (0.5 * weights[i] + 0.5 * weights[j])
    return pw


@njit(cache=True)
def pair_list_grad_hess(scores, pi, pj, theta, pair_w, use_pw, weights, use_w, spec, out_grad, out_hess):
    """Sum over explicit pairs ``(pi[k], pj[k])`` with per-pair ``theta[k]`` and weight ``pair_w[k]``;
    returns the status."""
    status = _spec_status(spec)
    if status != KernelStatus.OK:
        return status
    kind, scale, hmul = spec.kind, spec.scale, spec.hmul
    for k in range(pi.size):
        i = pi[k]
        j = pj[k]
        g, c = pair_grad(kind, scores[i] - scores[j], theta[k])
        pw = _listed_pair_weight(scale, pair_w, use_pw, weights, use_w, k, i, j)
        out_grad[i] += pw * g
        out_grad[j] -= pw * g
        out_hess[i] += hmul * pw * c
        out_hess[j] += hmul * pw * c
    return status


@njit(cache=True)
def pair_list_loss(scores, pi, pj, theta, pair_w, use_pw, weights, use_w, spec):
    """``(loss, status)`` over explicit pairs."""
    status = _spec_status(spec)
    if status != KernelStatus.OK:
        return 0.0, status
    kind, scale = spec.kind, spec.scale
    total = 0.0
    for k in range(pi.size):
        i = pi[k]
        j = pj[k]
        phi, _, _ = pair_terms(kind, scores[i] - scores[j], theta[k])
        pw = _listed_pair_weight(scale, pair_w, use_pw, weights, use_w, k, i, j)
        total += pw * phi
    return total, status


@njit(cache=True, parallel=True)
def pair_list_couplings(scores, pi, pj, theta, pair_w, use_pw, weights, use_w, spec, out_c):
    """Coupling ``h_ij`` times the pair weight, one entry per pair (entries are independent);
    returns the status."""
    status = _spec_status(spec)
    if status != KernelStatus.OK:
        return status
    kind, scale = spec.kind, spec.scale
    for k in prange(pi.size):
        i = pi[k]
        j = pj[k]
        _, c = pair_grad(kind, scores[i] - scores[j], theta[k])
        pw = _listed_pair_weight(scale, pair_w, use_pw, weights, use_w, k, i, j)
        out_c[k] = pw * c
    return status


@njit(cache=True)
def label_pair_list_kernel(labels, ptr, order, lower, theta_mode, p, out_i, out_j, out_theta):
    """Materialise the label pairs (query by query, in the order the grad kernels visit them);
    returns ``(pairs written, status)``."""
    if not _theta_known(theta_mode):
        return 0, KernelStatus.UNKNOWN_CODE
    pos = 0
    for q in range(ptr.size - 1):
        hi = ptr[q + 1]
        for a in range(ptr[q], hi):
            i = order[a]
            for b in range(lower[a], hi):
                j = order[b]
                out_i[pos] = i
                out_j[pos] = j
                out_theta[pos] = pair_theta(theta_mode, labels[i], labels[j], p)
                pos += 1
    return pos, KernelStatus.OK
