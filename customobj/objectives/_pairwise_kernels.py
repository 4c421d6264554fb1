"""Numba kernels of the pairwise losses (docs/formulas.md, "Pairwise"). Each grad/hess kernel adds into its outputs.

Every pair term is ``scale * phi(d; theta)`` with ``d = s_i - s_j`` (row ``i`` should rank above
row ``j``), times the pair weight ``(w_i + w_j) / 2``. The pair math (``phi`` of each ``kind``, ``theta``,
the pair weights) lives in ``_pairwise_terms``, shared with the GPU kernels; this module holds the CPU
drivers. ``theta_mode`` says how ``theta`` follows from the two labels (a constant, the grade difference,
or one of MPBoost's directed distance functions). Both are ``IntEnum`` codes (:class:`PairKind`,
:class:`Theta`) carried with ``p``, ``scale`` and ``hmul`` by one :class:`PairSpec` record, built
and validated in Python by :func:`pair_spec`; the kernels read them as plain ints so one compiled
loop serves every loss (no function arguments inside kernels); what the dispatch costs against a
hand-specialised loop is measured by benchmarks/pairwise_strategies.py (docs/kernel-notes.md).
Gradient loops call ``pair_grad``, which skips the loss (its log1p costs more than the gradient:
docs/kernel-notes.md).
Every driver checks the codes before its loop and returns a ``KernelStatus`` (last, with any value):
an unknown code computes nothing and returns ``UNKNOWN_CODE`` (``customobj._kernel_status``);
``pair_theta`` / ``pair_terms`` / ``pair_grad`` themselves return NaN for one.

Label pairs are enumerated per query from rows sorted by label (``order``, built once per dataset
by ``label_order_kernel``): for position ``a`` of the sorted query, the rows it beats are the
contiguous block ``order[lower[a]:hi]``. This visits exactly the pairs ``y_i > y_j`` without
materialising them and without a data-dependent branch per candidate pair.
"""
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .._kernel_status import KernelStatus, as_code
from ._pairwise_terms import (  # noqa: F401 - the codes and the pair math are part of this module's interface
    EXP_CLIP, EXPONENTIAL, LOGISTIC, SQ_HINGE, THETA_CONST, THETA_DIFF, THETA_LDD, THETA_LOGDD, THETA_LOGITDD,
    PairKind, Theta, kind_known, pair_grad, pair_terms, pair_theta, pair_weight, theta_known,
)


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


@njit(cache=True)
def _spec_status(spec):
    if kind_known(spec.kind) and theta_known(spec.theta_mode):
        return KernelStatus.OK
    return KernelStatus.UNKNOWN_CODE


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
                pw *= pair_weight(weights[i], weights[j])
            gi += pw * g
            hi_acc += hmul * pw * c
            out_grad[j] -= pw * g
            out_hess[j] += hmul * pw * c
        out_grad[i] += gi
        out_hess[i] += hi_acc


@njit(cache=True, parallel=True)
def label_pairs_grad_hess_parallel(scores, labels, ptr, order, lower, weights, use_w, spec, out_grad, out_hess):
    """Sum over the label pairs of every query (``spec``: a :class:`PairSpec`); returns the status.
    Queries write disjoint rows, so they run in parallel (2 cores, idle machine: RankNet 95 vs 114 ms,
    RankSVM 77 vs 89 ms at 2,000 x 120 against a serial loop; one thread: ``numba.set_num_threads(1)``)."""
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
                pw *= pair_weight(weights[i], weights[j])
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
        pw *= pair_weight(weights[i], weights[j])
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


@njit(cache=True)
def pair_list_query_losses(scores, pi, pj, theta, pair_w, use_pw, weights, use_w, spec, offsets, out):
    """:func:`pair_list_loss` with the pairs grouped by query (query ``q``'s are ``offsets[q]:offsets[q + 1]``):
    each query's terms added in list order into ``out[q]``, then the queries in order; ``(loss, status)``.
    The order a GPU writes per-query costs in and ``MultiObjective``'s GPU round adds them (YetiRank's cost)."""
    status = _spec_status(spec)
    if status != KernelStatus.OK:
        return 0.0, status
    kind, scale = spec.kind, spec.scale
    total = 0.0
    for q in range(offsets.size - 1):
        acc = 0.0
        for k in range(offsets[q], offsets[q + 1]):
            i = pi[k]
            j = pj[k]
            phi, _, _ = pair_terms(kind, scores[i] - scores[j], theta[k])
            acc += _listed_pair_weight(scale, pair_w, use_pw, weights, use_w, k, i, j) * phi
        out[q] = acc
        total += acc
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
    if not theta_known(theta_mode):
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
