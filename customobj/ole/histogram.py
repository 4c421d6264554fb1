"""Gradient histograms: per (feature, bin) slot the sums of g, h and the row count.

Rows of a node are ``order[start:end]``. The work is cut into a fixed number of row blocks
(depending only on the node size, never on the thread count), each summed into its own
buffer and the buffers added in block order, so the result is bit-identical for any
``n_jobs``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["build_row_hist", "n_blocks_for"]

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
            out[s, 0] += g
            out[s, 1] += h
            out[s, 2] += 1.0


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
        out = np.empty((n_slots, 3), dtype=np.float64)
    if nb == 1:
        out[:] = 0.0
        _hist_block(bins, order, start, end, grad, hess, offsets, out)
        return out
    buf = np.empty((nb, n_slots, 3), dtype=np.float64)
    _hist_parallel(bins, order, start, end, grad, hess, offsets, nb, buf)
    _reduce_blocks(buf, nb, out)
    return out
