"""Best split of a node from its histograms, under the SE, WSE or OLE criterion.

Xia, Zhai, Wang, "Analysis of regression tree fitting algorithms in learning to rank", sections
2.1 (SE), 2.2.1 (WSE) and 3.1 (OLE).

For a child with gradient sum ``G``, hessian sum ``H``, row count ``N`` and in-child pair
coupling ``C`` the criterion's score is ``G^2 / (D + lambda_l2)`` with the denominator

- SE:  ``D = N`` (least squares on ``-g``, unweighted; Friedman);
- WSE: ``D = H`` (LightGBM / XGBoost);
- OLE: ``D = H - 2 C``, the exact second derivative of the loss when every row of the child
  moves together (Xia, Zhai, Wang): pairs inside the child no longer change the loss.

gain = score(left) + score(right) - score(parent); a split needs gain > 0 (LightGBM's rule),
``min_data_in_leaf`` rows and ``min_sum_hessian_in_leaf`` of leaf hessian (``H`` for SE/WSE, the
OLE hessian for OLE) on both sides. A child whose OLE hessian is zero (up to rounding) scores 0:
without curvature a Newton step cannot reduce the loss.

Criteria by name (``TreeBooster(criterion=...)``, :mod:`.criterion`); the kernels see only their
:class:`~customobj.ole.criterion.SplitScore` code, SE, WSE or OLE:

- ``"ole"``: pair histograms of the tree's couplings pre-rounded to a power-of-two grid
  (:mod:`.fixed_point`, pairhist.py), so every pair sum is exact, in any order, on the CPU and the
  GPU; node couplings ``C`` summed from each node's pairs (exact too). The rounding moves a
  candidate's coupling by at most ``2**-51`` of the tree's coupling mass per pair;
- ``"ole_float64"``: the same (once the float64 reference of a float32 ``"ole"``);
- ``"ole_fast"``: pair histograms only for the ``k`` features of largest WSE gain at each node
  (``ole_fast_features``), OLE gains searched over those ``k`` (grower.py, ``select_features``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .._kernel_status import KernelStatus
from .common import (HIST_COUNT, HIST_G, HIST_H, LEFT_C, LEFT_G, LEFT_H, LEFT_N, PH_CHANNELS, PH_HI, PH_NANP, PH_R,
                     RIGHT_C, RIGHT_G, RIGHT_H, RIGHT_N, SPLIT_BIN, SPLIT_FEATURE, SPLIT_GAIN, SPLIT_NAN_LEFT,
                     SPLIT_SIZE)
from .criterion import OLE, SE, WSE

__all__ = ["feature_gains", "find_best_split", "find_best_split_parallel", "known_score",
           "node_hessian", "split_gain", "FeatureBins", "SplitRules"]
# Relative size below which H - 2C counts as zero curvature (cancellation leaves ~1e-16 * H).
_REL_ZERO = 1e-9


class FeatureBins(NamedTuple):
    """Where each feature's slots are in a histogram (a record the kernels take: numba and CUDA)."""
    n_bins: np.ndarray  # value bins per feature; the NaN slot follows them
    offsets: np.ndarray  # first slot per feature


class SplitRules(NamedTuple):
    """What a split must satisfy and how it scores, the same for every node of a fit."""
    score: int  # a SplitScore code (criterion.py)
    lam: float  # lambda_l2
    min_data: float  # min_data_in_leaf
    min_hess: float  # min_sum_hessian_in_leaf (of the leaf hessian: H, or H - 2C for OLE)


@njit(cache=True)
def known_score(criterion):
    """Whether ``criterion`` is a :class:`~customobj.ole.criterion.SplitScore` code: every kernel
    below checks it on entry and returns ``UNKNOWN_CODE`` otherwise, computing nothing."""
    return criterion == SE or criterion == WSE or criterion == OLE


@njit(cache=True)
def node_hessian(criterion, G, H, N, C):
    """The denominator D of the criterion (before lambda_l2); NaN for an unknown code (the kernels
    check the code first, so it never reaches a gain)."""
    if criterion == SE:
        return N
    if criterion == WSE:
        return H
    if criterion == OLE:
        d = H - 2.0 * C
        if d <= _REL_ZERO * H:
            return 0.0
        return d
    return np.nan


@njit(cache=True)
def _score(G, D, lam):
    den = D + lam
    if den <= 0.0:
        return 0.0
    return G * G / den


@njit(cache=True)
def parent_score(node, rules):
    """The node's own score ``G^2 / (D + lambda)`` that a split's children must beat (``node.C`` read
    only by the OLE score)."""
    return _score(node.G, node_hessian(rules.score, node.G, node.H, node.N, node.C), rules.lam)


@njit(cache=True)
def add_bin(hist, ph, use_pairs, s, left, cuts):
    """``(left, cuts)`` with slot ``s`` added: its row sums to ``left = (g, h, count)`` and (``use_pairs``)
    its pair sums to ``cuts = (hi, nanp, lo)``, ``lo = R - hi - nanp``. Scalar: shared with the GPU
    search (``cuda._split_kernels``)."""
    g, h, n = left
    c_hi, c_np, c_lo = cuts
    g += hist[s, HIST_G]
    h += hist[s, HIST_H]
    n += hist[s, HIST_COUNT]
    if use_pairs:
        c_hi += ph[s, PH_HI]
        c_np += ph[s, PH_NANP]
        c_lo += ph[s, PH_R] - ph[s, PH_HI] - ph[s, PH_NANP]
    return (g, h, n), (c_hi, c_np, c_lo)


@njit(cache=True)
def cut_gain(rules, node, parent, left, cuts, totals, nan_left, use_pairs):
    """``(gain, cl, cr)`` of one threshold: its left child's row sums ``left = (gl, hl, nl)`` (the NaN
    slot's included when ``nan_left``), its pair sums ``cuts = (c_hi, c_np, c_lo)`` over the bins up to
    it and the feature's ``totals = (lo_tot, nanp_tot, c_nn)`` (read with ``use_pairs``); gain 0 where
    ``min_data`` or ``min_hess`` fail (a split needs gain > 0: never a best). Scalar: shared with the
    GPU search (``cuda._split_kernels``, a block per feature), which finds ``left`` and ``cuts`` by a
    scan of the bins: exact on the grid of :mod:`.fixed_point`, so the same values."""
    criterion, lam, min_data, min_hess = rules
    G, H, N, C = node
    gl, hl, nl = left
    nr = N - nl
    if nl < min_data or nr < min_data:
        return 0.0, 0.0, 0.0
    gr = G - gl
    hr = H - hl
    cl = 0.0
    cr = 0.0
    if use_pairs:
        c_hi, c_np, c_lo = cuts
        lo_tot, nanp_tot, c_nn = totals
        if nan_left:
            cl = c_hi + c_np + c_nn
            cr = lo_tot - c_lo
        else:
            cl = c_hi
            cr = (lo_tot - c_lo) + (nanp_tot - c_np) + c_nn
    dl = node_hessian(criterion, gl, hl, nl, cl)
    dr = node_hessian(criterion, gr, hr, nr, cr)
    ml = hl if criterion != OLE else dl  # the leaf hessian min_sum_hessian_in_leaf bounds
    mr = hr if criterion != OLE else dr
    if ml < min_hess or mr < min_hess:
        return 0.0, 0.0, 0.0
    return _score(gl, dl, lam) + _score(gr, dr, lam) - parent, cl, cr


@njit(cache=True)
def write_split(res, gain, where, node, left, cl, cr):
    """The split record (:func:`find_best_split`'s layout) of threshold ``where = (feature, bin,
    nan_left)`` with left sums ``left = (gl, hl, nl)`` and couplings ``cl``, ``cr`` in a node of sums
    ``node``."""
    f, t, nan_left = where
    gl, hl, nl = left
    res[SPLIT_GAIN] = gain
    res[SPLIT_FEATURE] = f
    res[SPLIT_BIN] = t
    res[SPLIT_NAN_LEFT] = 1.0 if nan_left else 0.0
    res[LEFT_G] = gl
    res[LEFT_H] = hl
    res[LEFT_N] = nl
    res[LEFT_C] = cl
    res[RIGHT_G] = node.G - gl
    res[RIGHT_H] = node.H - hl
    res[RIGHT_N] = node.N - nl
    res[RIGHT_C] = cr


@njit(cache=True)
def _best_in_feature(f, hist, ph, use_pairs, bins, node, rules, parent, res):
    """Best split of feature ``f`` with gain > 0 into ``res`` (same layout as find_best_split); its gain,
    else 0. ``bins``: :class:`FeatureBins`; ``node``: the node's ``ChildSums``; ``rules``: :class:`SplitRules`.

    The loop spells out :func:`add_bin`, :func:`cut_gain` and :func:`write_split` (the GPU search's
    scalar steps, the same arithmetic in the same order; the GPU trees are tested equal to these): through
    the calls, even ``inline="always"``, the CPU search took 1.6-1.9x as long (``benchmarks/ole_phases.py
    --criteria ole wse``, ``_search`` 0.022-0.039 s against 0.013-0.023 s a tree, 2 threads)."""
    criterion, lam, min_data, min_hess = rules
    G, H, N, C = node
    offsets = bins.offsets
    best = 0.0
    nb = bins.n_bins[f]
    if nb < 2:
        return 0.0
    off = offsets[f]
    g_nan = hist[off + nb, HIST_G]
    h_nan = hist[off + nb, HIST_H]
    n_nan = hist[off + nb, HIST_COUNT]
    lo_tot = 0.0
    nanp_tot = 0.0
    c_nn = 0.0
    if use_pairs:
        for b in range(nb):
            lo_tot += ph[off + b, PH_R] - ph[off + b, PH_HI] - ph[off + b, PH_NANP]
            nanp_tot += ph[off + b, PH_NANP]
        c_nn = ph[off + nb, PH_HI]
    n_dir = 2 if n_nan > 0 else 1
    for d in range(n_dir):
        nan_left = d == 1
        gl = 0.0
        hl = 0.0
        nl = 0.0
        if nan_left:
            gl = g_nan
            hl = h_nan
            nl = n_nan
        c_hi = 0.0
        c_lo = 0.0
        c_np = 0.0
        for t in range(nb - 1):
            gl += hist[off + t, HIST_G]
            hl += hist[off + t, HIST_H]
            nl += hist[off + t, HIST_COUNT]
            if use_pairs:
                c_hi += ph[off + t, PH_HI]
                c_np += ph[off + t, PH_NANP]
                c_lo += ph[off + t, PH_R] - ph[off + t, PH_HI] - ph[off + t, PH_NANP]
            nr = N - nl
            if nl < min_data or nr < min_data:
                continue
            gr = G - gl
            hr = H - hl
            cl = 0.0
            cr = 0.0
            if use_pairs:
                if nan_left:
                    cl = c_hi + c_np + c_nn
                    cr = lo_tot - c_lo
                else:
                    cl = c_hi
                    cr = (lo_tot - c_lo) + (nanp_tot - c_np) + c_nn
            dl = node_hessian(criterion, gl, hl, nl, cl)
            dr = node_hessian(criterion, gr, hr, nr, cr)
            ml = hl if criterion != OLE else dl  # the leaf hessian min_sum_hessian_in_leaf bounds
            mr = hr if criterion != OLE else dr
            if ml < min_hess or mr < min_hess:
                continue
            gain = _score(gl, dl, lam) + _score(gr, dr, lam) - parent
            if gain > best:
                best = gain
                res[SPLIT_GAIN] = gain
                res[SPLIT_FEATURE] = f
                res[SPLIT_BIN] = t
                res[SPLIT_NAN_LEFT] = 1.0 if nan_left else 0.0
                res[LEFT_G] = gl
                res[LEFT_H] = hl
                res[LEFT_N] = nl
                res[LEFT_C] = cl
                res[RIGHT_G] = gr
                res[RIGHT_H] = hr
                res[RIGHT_N] = nr
                res[RIGHT_C] = cr
    return best


@njit(cache=True)
def find_best_split(hist, ph, use_pairs, bins, feature_mask, node, rules, res):
    """Fill ``res`` (float64[SPLIT_SIZE], slots named in common.py: ``SPLIT_GAIN``, ``SPLIT_FEATURE``,
    ``SPLIT_BIN``, ``SPLIT_NAN_LEFT``, ``LEFT_G/H/N/C``, ``RIGHT_G/H/N/C``); gain <= 0: none.

    ``hist``: (slots, 3) row histogram [g, h, count]; with ``use_pairs``, ``ph`` (slots, 3) the
    pair histogram [hi, nanp, R] (pairhist.py): ``lo = R - hi - nanp`` (channels named in common.py).
    ``bins``: :class:`FeatureBins`; ``node``: the node's sums (``common.ChildSums``); ``rules``:
    :class:`SplitRules`. Returns ``SPLIT_FOUND``, ``SPLIT_NONE``, or ``UNKNOWN_CODE`` (``res`` then
    says no split) when ``rules.score`` is no :class:`~customobj.ole.criterion.SplitScore` code (read by
    :func:`customobj._kernel_status.split_found`).
    """
    res[:] = 0.0
    res[SPLIT_FEATURE] = -1.0
    if not known_score(rules.score):
        return KernelStatus.UNKNOWN_CODE
    res[SPLIT_GAIN] = -1.0
    parent = parent_score(node, rules)
    best = 0.0
    found = False
    tmp = np.zeros(res.shape[0])
    for f in range(bins.n_bins.shape[0]):
        tmp[SPLIT_GAIN] = 0.0
        gain = _best_in_feature(f, hist, ph, use_pairs, bins, node, rules, parent, tmp) if feature_mask[f] else 0.0
        if gain > best:
            best = gain
            found = True
            res[:] = tmp
    if not found:
        res[SPLIT_GAIN] = 0.0
        return KernelStatus.SPLIT_NONE
    return KernelStatus.SPLIT_FOUND


@njit(cache=True, parallel=True)
def find_best_split_parallel(hist, ph, use_pairs, bins, feature_mask, node, rules, res):
    """``find_best_split`` with the features searched in parallel; the same result for any thread
    count (per-feature bests, then the first strictly best feature in order, as the serial scan)."""
    n_feat = bins.n_bins.shape[0]
    res[:] = 0.0
    res[SPLIT_FEATURE] = -1.0
    if not known_score(rules.score):
        return KernelStatus.UNKNOWN_CODE
    parent = parent_score(node, rules)
    per = np.zeros((n_feat, res.shape[0]))
    gains = np.zeros(n_feat)
    for f in prange(n_feat):
        if feature_mask[f]:
            gains[f] = _best_in_feature(f, hist, ph, use_pairs, bins, node, rules, parent, per[f])
    best = 0.0
    found = False
    for f in range(n_feat):
        if gains[f] > best:
            best = gains[f]
            found = True
            res[:] = per[f]
    return KernelStatus.SPLIT_FOUND if found else KernelStatus.SPLIT_NONE


@njit(cache=True)
def split_gain(rules, parent, left, right):
    """``(status, gain)``: ``SPLIT_NONE`` and ``score(left) + score(right) - score(parent)`` of a split
    whose child sums are known (``parent``, ``left``, ``right``: ``common.ChildSums``; ``rules``:
    :class:`SplitRules`, its ``score`` and ``lam`` read), or ``UNKNOWN_CODE`` and 0 for an unknown
    ``rules.score``."""
    criterion = rules.score
    if not known_score(criterion):
        return KernelStatus.UNKNOWN_CODE, 0.0
    return KernelStatus.SPLIT_NONE, (_score(left.G, node_hessian(criterion, left.G, left.H, left.N, left.C), rules.lam)
                                     + _score(right.G, node_hessian(criterion, right.G, right.H, right.N, right.C),
                                              rules.lam)
                                     - parent_score(parent, rules))


@njit(cache=True)
def feature_gains(hist, bins, feature_mask, node, rules, out):
    """``out[f]``: the best gain > 0 of feature ``f`` under a row-only criterion (SE or WSE), else 0
    (``node.C`` is not read).

    ``criterion="ole_fast"`` ranks the features by their WSE gains (grower.py). Returns
    ``SPLIT_NONE``, or ``UNKNOWN_CODE`` (``out`` all 0) for a code other than SE or WSE.
    """
    out[:] = 0.0
    if rules.score != SE and rules.score != WSE:
        return KernelStatus.UNKNOWN_CODE
    parent = parent_score(node, rules)
    tmp = np.zeros(SPLIT_SIZE)
    dummy = np.zeros((1, PH_CHANNELS))
    for f in range(bins.n_bins.shape[0]):
        out[f] = 0.0
        if feature_mask[f]:
            out[f] = _best_in_feature(f, hist, dummy, False, bins, node, rules, parent, tmp)
    return KernelStatus.SPLIT_NONE
