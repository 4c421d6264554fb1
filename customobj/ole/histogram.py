"""Gradient histograms: per (feature, bin) slot the sums of g, h and the row count.

Rows of a node are ``order[start:end]``. Two builders:

- ``build_row_hist_fm`` (used by the grower): feature-major bins, LightGBM's col-wise histogram
  with ordered gradients, threads split the features (see the comment above it);
- ``build_row_hist``: row-major bins, the work cut into a fixed number of row blocks (depending
  only on the node size, never on the thread count), each summed into its own buffer and the
  buffers added in block order. Kept as the row-wise reference.

Both are bit-identical for any ``n_jobs``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

from .common import GH_CHANNELS, HIST_CHANNELS, HIST_COUNT, HIST_G, HIST_H

__all__ = ["build_row_hist", "build_row_hist_fm", "gather_gh", "n_blocks_for"]

_BLOCK_ROWS = 16384
_MAX_BLOCKS = 8


def n_blocks_for(n_items, block=_BLOCK_ROWS, max_blocks=_MAX_BLOCKS):
    return int(max(1, min(max_blocks, (n_items + block - 1) // block)))


@njit(cache=True)
def _hist_block(bins, order, lo, hi, grad, hess, offsets, out):
    n_feat = bins.shape[1]
    for k in range(lo, hi):
        r = order[k]
        g = grad[r]
        h = hess[r]
        row = bins[r]
        for f in range(n_feat):
            s = offsets[f] + row[f]
            out[s, HIST_G] += g
            out[s, HIST_H] += h
            out[s, HIST_COUNT] += 1.0


@njit(cache=True, parallel=True)
def _hist_parallel(bins, order, start, end, grad, hess, offsets, n_blocks, buf):
    n = end - start
    for b in prange(n_blocks):
        lo = start + (n * b) // n_blocks
        hi = start + (n * (b + 1)) // n_blocks
        buf[b, :, :] = 0.0
        _hist_block(bins, order, lo, hi, grad, hess, offsets, buf[b])


@njit(cache=True)
def _reduce_blocks(buf, n_blocks, out):
    out[:, :] = buf[0]
    for b in range(1, n_blocks):
        out += buf[b]


def build_row_hist(bins, order, start, end, grad, hess, offsets, n_slots, out=None):
    """Histogram (n_slots, 3) = [sum g, sum h, count] of rows ``order[start:end]``."""
    nb = n_blocks_for(end - start)
    if out is None:
        out = np.empty((n_slots, HIST_CHANNELS), dtype=np.float64)
    if nb == 1:
        out[:] = 0.0
        _hist_block(bins, order, start, end, grad, hess, offsets, out)
        return out
    buf = np.empty((nb, n_slots, HIST_CHANNELS), dtype=np.float64)
    _hist_parallel(bins, order, start, end, grad, hess, offsets, nb, buf)
    _reduce_blocks(buf, nb, out)
    return out


# ---- feature-major kernels (LightGBM's col-wise histograms with ordered gradients) ------------------
# ``bins_fm`` is (features, rows) uint8/uint16. The gradients and hessians of a node's rows are gathered
# once into a contiguous (n, 2) array in node order; then every feature is one sequential pass over the
# node's row indices into that feature's own slice of the histogram. Threads split the features (prange),
# each feature is summed by one thread in row order: no atomics, no per-thread copies, and the result
# is bit-identical for any thread count. Rows of a node are increasing in ``order`` (stable partitions
# of an increasing list), so the bin reads walk each feature's column forwards.


@njit(cache=True)
def gather_gh(order, start, end, grad, hess, out):
    """``out[k] = (grad, hess)`` of row ``order[start + k]``; returns the (g, h) sums in node order."""
    G = 0.0
    H = 0.0
    for k in range(end - start):
        r = order[start + k]
        g = grad[r]
        h = hess[r]
        out[k, HIST_G] = g
        out[k, HIST_H] = h
        G += g
        H += h
    return G, H


_GROUP = 4  # features per pass
# A group's flat accumulators hold each slot's channels at ``_STRIDE * slot + channel``: a power of
# two, so the slot offset is a shift (the fourth entry is padding).
_STRIDE = 4
_SHIFT = 2  # log2(_STRIDE)
_NO_COUNTS = np.zeros(0)


@njit(cache=True, inline="always")
def _add_row(acc, slot, g, h, count_rows):
    # One row into one feature's flat accumulator at its bin's ``slot`` (already ``_STRIDE * bin``);
    # inlined before compiling, so the four calls per row stay four independent add chains.
    acc[slot + uint64(HIST_G)] += g
    acc[slot + uint64(HIST_H)] += h
    if count_rows:
        acc[slot + uint64(HIST_COUNT)] += 1.0


@njit(cache=True)
def _hist_group(bins_fm, order, start, end, gh, offsets, counts, out, grp):
    # Four features per pass over the node's rows: the row index and (g, h) are loaded once for
    # four bins, and the four features' accumulators are independent add chains (one feature
    # alone stalls on consecutive rows hitting the same bin). Each group's accumulators (<= 4 x 256
    # slots x 4 x 8 B) stay in L1. Unsigned indices skip numba's negative-index wraparound. A
    # short last group repeats its last feature (same sums, written twice). With known per-slot
    # ``counts`` (size n_slots) the count channel is copied instead: one add in three less per
    # row and feature, ~30% of the pass.
    n_feat = bins_fm.shape[0]
    count_rows = counts.shape[0] == 0
    n = end - start
    ghf = gh.ravel()
    width = uint64(GH_CHANNELS)  # (g, h) per row
    shift = uint64(_SHIFT)
    cg = uint64(HIST_G)
    ch = uint64(HIST_H)
    f0 = _GROUP * grp
    f1 = min(f0 + 1, n_feat - 1)
    f2 = min(f0 + 2, n_feat - 1)
    f3 = min(f0 + 3, n_feat - 1)
    a0 = np.zeros((offsets[f0 + 1] - offsets[f0]) * _STRIDE)
    a1 = np.zeros((offsets[f1 + 1] - offsets[f1]) * _STRIDE)
    a2 = np.zeros((offsets[f2 + 1] - offsets[f2]) * _STRIDE)
    a3 = np.zeros((offsets[f3 + 1] - offsets[f3]) * _STRIDE)
    c0 = bins_fm[f0]
    c1 = bins_fm[f1]
    c2 = bins_fm[f2]
    c3 = bins_fm[f3]
    for k in range(n):  # count_rows is loop-invariant: LLVM unswitches the loop on it
        r = uint64(order[start + k])
        kk = uint64(k) * width
        g = ghf[kk + cg]
        h = ghf[kk + ch]
        s0 = uint64(c0[r]) << shift
        s1 = uint64(c1[r]) << shift
        s2 = uint64(c2[r]) << shift
        s3 = uint64(c3[r]) << shift
        _add_row(a0, s0, g, h, count_rows)
        _add_row(a1, s1, g, h, count_rows)
        _add_row(a2, s2, g, h, count_rows)
        _add_row(a3, s3, g, h, count_rows)
    for q in range(_GROUP):
        f = min(f0 + q, n_feat - 1)
        acc = a0 if q == 0 else (a1 if q == 1 else (a2 if q == 2 else a3))
        lo = offsets[f]
        for s in range(offsets[f + 1] - lo):
            out[lo + s, HIST_G] = acc[_STRIDE * s + HIST_G]
            out[lo + s, HIST_H] = acc[_STRIDE * s + HIST_H]
            out[lo + s, HIST_COUNT] = acc[_STRIDE * s + HIST_COUNT] if count_rows else counts[lo + s]


@njit(cache=True, parallel=True)
def _hist_fm(bins_fm, order, start, end, grad, hess, gh, offsets, counts, out):
    # the ordered gradients first, rows split across threads (a copy: the same bits as gather_gh);
    # serially this gather was ~2% of a one-thread WSE tree, a step more threads did not shorten
    for k in prange(end - start):
        r = order[start + k]
        gh[k, HIST_G] = grad[r]
        gh[k, HIST_H] = hess[r]
    for grp in prange((bins_fm.shape[0] + _GROUP - 1) // _GROUP):
        _hist_group(bins_fm, order, start, end, gh, offsets, counts, out, grp)


@njit(cache=True)
def _hist_fm_serial(bins_fm, order, start, end, gh, offsets, counts, out):
    for grp in range((bins_fm.shape[0] + _GROUP - 1) // _GROUP):
        _hist_group(bins_fm, order, start, end, gh, offsets, counts, out, grp)


# Below this many (row, feature) updates a histogram is built without a parallel region: waking
# the thread team costs ~2 us when OpenMP threads spin but ~95 us when they sleep
# (OMP_WAIT_POLICY=passive, which ``customobj.adapters`` sets), about a 65k-update histogram's time.
PARALLEL_UPDATES = 65536


def build_row_hist_fm(bins_fm, order, start, end, grad, hess, offsets, n_slots, gh=None, out=None, counts=None):
    """Histogram (n_slots, 3) = [sum g, sum h, count] of rows ``order[start:end]``, feature-major bins.

    ``gh``: optional (>= end - start, 2) float64 scratch for the ordered gradients. ``counts``:
    the count channel when already known (the root's, the same every round without bagging).
    """
    n = end - start
    if gh is None or gh.shape[0] < n:
        gh = np.empty((max(n, 1), GH_CHANNELS), dtype=np.float64)
    gh = gh[:max(n, 1)]  # contiguous prefix: the kernel reads it flat
    if out is None:
        out = np.empty((n_slots, HIST_CHANNELS), dtype=np.float64)
    if bins_fm.shape[0] == 0:
        out[:] = 0.0
        return out
    known = _NO_COUNTS if counts is None else counts
    if n * bins_fm.shape[0] >= PARALLEL_UPDATES:
        _hist_fm(bins_fm, order, start, end, grad, hess, gh, offsets, known, out)  # gathers in parallel too
    else:
        gather_gh(order, start, end, grad, hess, gh)
        _hist_fm_serial(bins_fm, order, start, end, gh, offsets, known, out)
    return out
