"""Row partition of a node: LightGBM's data partition, stable, [left | right] by one feature's bins.

Rows of a node are ``order[start:end]``; a split reorders that range in place. Large nodes are cut
into row blocks whose number depends only on the node size, so the order is the same for any
thread count.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["PARALLEL_ROWS", "partition_rows"]


@njit(cache=True)
def _mark_rows(col, order, lo, hi, tbin, nan_bin, nan_left, go_left):
    """Marks ``go_left[row]`` for ``order[lo:hi]``; returns how many go left."""
    c = 0
    for k in range(lo, hi):
        r = order[k]
        v = np.int64(col[r])
        left = nan_left if v == nan_bin else v <= tbin
        go_left[r] = left
        if left:
            c += 1
    return c


@njit(cache=True)
def _place_rows(order, lo, hi, go_left, tmp, ml, mr):
    """Copies ``order[lo:hi]`` to ``tmp``: left rows from ``ml`` on, right rows from ``mr`` on."""
    for k in range(lo, hi):
        r = order[k]
        if go_left[r]:
            tmp[ml] = r
            ml += 1
        else:
            tmp[mr] = r
            mr += 1


# Below this many rows a node is partitioned without a parallel region: waking the thread team
# costs ~2 us when OpenMP threads spin but ~95 us when they sleep (OMP_WAIT_POLICY=passive, which
# ``customobj.adapters`` sets), more than partitioning a small node.
PARALLEL_ROWS = 32768


@njit(cache=True, parallel=True)
def _partition_rows_parallel(col, order, start, end, tbin, nan_bin, nan_left, go_left, tmp):
    n = end - start
    n_blocks = max(1, min(16, n // PARALLEL_ROWS))
    counts = np.zeros(n_blocks, dtype=np.int64)
    for b in prange(n_blocks):
        counts[b] = _mark_rows(col, order, start + (n * b) // n_blocks, start + (n * (b + 1)) // n_blocks,
                               tbin, nan_bin, nan_left, go_left)
    nl = 0
    for b in range(n_blocks):
        nl += counts[b]
    for b in prange(n_blocks):
        lo = start + (n * b) // n_blocks
        ml = 0
        for q in range(b):
            ml += counts[q]
        _place_rows(order, lo, start + (n * (b + 1)) // n_blocks, go_left, tmp, ml, nl + (lo - start) - ml)
    for k in prange(n):
        order[start + k] = tmp[k]
    return nl


@njit(cache=True)
def _partition_rows_serial(col, order, start, end, tbin, nan_bin, nan_left, go_left, tmp):
    nl = _mark_rows(col, order, start, end, tbin, nan_bin, nan_left, go_left)
    _place_rows(order, start, end, go_left, tmp, 0, nl)
    order[start:end] = tmp[:end - start]
    return nl


def partition_rows(col, order, start, end, tbin, nan_bin, nan_left, go_left, tmp):
    """Stable partition of ``order[start:end]`` into [left | right] by the split feature's bins ``col``
    (one row of the feature-major bin matrix); marks ``go_left[row]``; returns the left count.

    Nodes of at least ``2 * PARALLEL_ROWS`` rows are cut into row blocks (their number depends
    only on the node size), marked and counted in parallel, then each block copies its rows to its
    offsets; smaller nodes take one serial pass. The same order either way, for any thread count.
    """
    run = _partition_rows_parallel if end - start >= 2 * PARALLEL_ROWS else _partition_rows_serial
    return run(col, order, start, end, tbin, nan_bin, nan_left, go_left, tmp)
