"""Pair-coupling histograms for the exact OLE node hessian (SPEC.md section 5).

For a feature with value bins ``0..nb-1`` and NaN slot ``nb``, the in-node pairs ``(i, j)`` with
coupling ``c`` and bins ``bi, bj`` give three per-bin arrays:

- ``hi[b]``: pairs whose larger bin is ``b`` (both rows go left once the threshold reaches ``b``);
- ``lo[b]``: pairs whose smaller bin is ``b`` (both go right while the threshold is below ``b``);
- ``nanp[b]``: pairs with one NaN row and the other row in ``b`` (they share a child only when
  the NaN row follows the other row's side); pairs with two NaN rows go to ``hi[nb]``.

Prefix sums of ``hi`` and suffix sums of ``lo`` give the in-child coupling of every threshold in
one pass (splitting.py). Only ``hi`` and ``nanp`` are accumulated over pairs: every pair adds
``c`` at both of its rows' bins, so ``hi[b] + lo[b] + nanp[b] = R[b]``, the histogram of the rows'
in-node coupling sums ``r_i`` (a row pass, ``coupling_row_hist``), and ``lo = R - hi - nanp``.
That halves the pair work, which dominates OLE (pairs x features).

Pairs live per node in a contiguous range of the pair arrays and are partitioned with the rows;
pairs split across the two children leave the node's list. Work is cut into blocks that depend
only on the number of pairs, so results do not depend on the thread count.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .histogram import n_blocks_for

__all__ = ["build_pair_hist", "coupling_row_hist", "partition_pairs", "sum_couplings"]

_BLOCK_PAIRS = 32768


@njit(cache=True)
def _pair_block(bins, pi, pj, pc, lo, hi, offsets, n_bins, out):
    n_feat = bins.shape[1]
    mx = np.empty(n_feat, dtype=bins.dtype)
    acc = out[0]
    nanp = out[1]
    for k in range(lo, hi):
        c = pc[k]
        ri = bins[pi[k]]
        rj = bins[pj[k]]
        for f in range(n_feat):  # separate loop so the max vectorises
            mx[f] = max(ri[f], rj[f])
        for f in range(n_feat):
            b = np.int64(mx[f])
            nb = n_bins[f]
            if b < nb:
                acc[offsets[f] + b] += c
            else:  # NaN is the top slot, so a NaN row makes the max nb
                bi = np.int64(ri[f])
                bj = np.int64(rj[f])
                if bi < nb:
                    nanp[offsets[f] + bi] += c
                elif bj < nb:
                    nanp[offsets[f] + bj] += c
                else:
                    acc[offsets[f] + nb] += c


@njit(cache=True, parallel=True)
def _pair_parallel(bins, pi, pj, pc, start, end, offsets, n_bins, n_blocks, buf):
    n = end - start
    for b in prange(n_blocks):
        lo = start + (n * b) // n_blocks
        hi = start + (n * (b + 1)) // n_blocks
        buf[b, :, :] = 0.0
        _pair_block(bins, pi, pj, pc, lo, hi, offsets, n_bins, buf[b])


@njit(cache=True)
def _reduce_blocks(buf, n_blocks, out):
    out[:, :] = buf[0]
    for b in range(1, n_blocks):
        out += buf[b]


def build_pair_hist(bins, pi, pj, pc, start, end, offsets, n_bins, n_slots, out=None):
    """Pair histogram (2, n_slots) = [hi (+ both-NaN pairs at the NaN slot), nanp] of pairs ``start:end``."""
    nb = n_blocks_for(end - start, block=_BLOCK_PAIRS)
    if out is None:
        out = np.empty((2, n_slots), dtype=np.float64)
    if nb == 1:
        out[:] = 0.0
        _pair_block(bins, pi, pj, pc, start, end, offsets, n_bins, out)
        return out
    buf = np.empty((nb, 2, n_slots), dtype=np.float64)
    _pair_parallel(bins, pi, pj, pc, start, end, offsets, n_bins, nb, buf)
    _reduce_blocks(buf, nb, out)
    return out


@njit(cache=True)
def _row_couplings(order, start, end, pi, pj, pc, pstart, pend, r):
    for k in range(start, end):
        r[order[k]] = 0.0
    for k in range(pstart, pend):
        r[pi[k]] += pc[k]
        r[pj[k]] += pc[k]


@njit(cache=True)
def _coupling_block(bins, order, lo, hi, r, offsets, out):
    n_feat = bins.shape[1]
    for k in range(lo, hi):
        row = order[k]
        w = r[row]
        if w == 0.0:
            continue
        b = bins[row]
        for f in range(n_feat):
            out[offsets[f] + b[f]] += w


@njit(cache=True, parallel=True)
def _coupling_parallel(bins, order, start, end, r, offsets, n_blocks, buf):
    n = end - start
    for b in prange(n_blocks):
        lo = start + (n * b) // n_blocks
        hi = start + (n * (b + 1)) // n_blocks
        buf[b, :] = 0.0
        _coupling_block(bins, order, lo, hi, r, offsets, buf[b])


def coupling_row_hist(bins, order, start, end, pi, pj, pc, pstart, pend, offsets, n_slots, r):
    """``R[slot]`` = sum over rows ``order[start:end]`` in the slot of their in-node coupling sums.

    ``r`` is a scratch array over all rows; the node's entries are overwritten.
    """
    _row_couplings(order, start, end, pi, pj, pc, pstart, pend, r)
    nb = n_blocks_for(end - start)
    out = np.zeros(n_slots, dtype=np.float64)
    if nb == 1:
        _coupling_block(bins, order, start, end, r, offsets, out)
        return out
    buf = np.empty((nb, n_slots), dtype=np.float64)
    _coupling_parallel(bins, order, start, end, r, offsets, nb, buf)
    out[:] = buf[0]
    for b in range(1, nb):
        out += buf[b]
    return out


@njit(cache=True)
def partition_pairs(pi, pj, pc, start, end, go_left, tmp_i, tmp_j, tmp_c):
    """Reorder pairs ``start:end`` stably as [both left | both right | split]; returns (n_left, n_right).

    ``go_left[r]`` says where row ``r`` went (indexed by row id).
    """
    nl = 0
    for k in range(start, end):
        if go_left[pi[k]] and go_left[pj[k]]:
            tmp_i[nl] = pi[k]
            tmp_j[nl] = pj[k]
            tmp_c[nl] = pc[k]
            nl += 1
    nr = 0
    for k in range(start, end):
        if (not go_left[pi[k]]) and (not go_left[pj[k]]):
            tmp_i[nl + nr] = pi[k]
            tmp_j[nl + nr] = pj[k]
            tmp_c[nl + nr] = pc[k]
            nr += 1
    m = nl + nr
    for k in range(start, end):
        if go_left[pi[k]] != go_left[pj[k]]:
            tmp_i[m] = pi[k]
            tmp_j[m] = pj[k]
            tmp_c[m] = pc[k]
            m += 1
    for k in range(end - start):
        pi[start + k] = tmp_i[k]
        pj[start + k] = tmp_j[k]
        pc[start + k] = tmp_c[k]
    return nl, nr


@njit(cache=True)
def sum_couplings(pc, start, end):
    total = 0.0
    for k in range(start, end):
        total += pc[k]
    return total
