"""A tree's pair buffers: the stable three-way pair partition, the compaction of a round's pairs and
the couplings of a pair range, on the CPU (the GPU twins: :mod:`.cuda._partitions_kernels`,
:mod:`.cuda._reduce_kernels`).

A node's pairs are a contiguous range of one of two pair buffers; a split copies them, partitioned
[both rows left | both rows right | split], into the same range of the other buffer (the pairs of
the last part leave the node's list). Blocks of pairs, whose number depends only on the range
size, are counted and then placed in parallel, so the result is the same for any thread count.

Examples
--------
>>> import numpy as np
>>> pi, pj, pc = np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([1.0, 2.0, 4.0])
>>> go_left = np.array([True, True, False, False])
>>> out = tuple(np.zeros_like(a) for a in (pi, pj, pc))
>>> partition_pairs(pi, pj, pc, 0, 3, go_left, *out), out[2].tolist()
((1, 1), [1.0, 4.0, 2.0])
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..objectives._listwise_kernels import range_sum

__all__ = ["compact_pairs", "partition_pairs", "sum_couplings"]

_PART_BLOCK = 65536
_PART_MAX_BLOCKS = 16


@njit(cache=True)
def _count_sides(pi, pj, lo, hi, go_left):
    nl = 0
    nr = 0
    for k in range(lo, hi):  # branch-free: the sides are random, mispredictions dominated
        la = np.int64(go_left[pi[k]])
        lb = np.int64(go_left[pj[k]])
        nl += la & lb
        nr += 1 - (la | lb)
    return nl, nr


@njit(cache=True)
def _place_sides(pi, pj, pc, lo, hi, go_left, ml, mr, mx, oi, oj, oc):
    for k in range(lo, hi):
        a = pi[k]
        c = pj[k]
        la = np.int64(go_left[a])
        lb = np.int64(go_left[c])
        is_l = la & lb
        is_r = 1 - (la | lb)
        d = ml if is_l else (mr if is_r else mx)
        ml += is_l
        mr += is_r
        mx += 1 - is_l - is_r
        oi[d] = a
        oj[d] = c
        oc[d] = pc[k]


@njit(cache=True, parallel=True)
def _partition_pairs_parallel(pi, pj, pc, start, end, go_left, oi, oj, oc):
    n = end - start
    nb = max(1, min(_PART_MAX_BLOCKS, n // _PART_BLOCK))
    n_left = np.zeros(nb, dtype=np.int64)  # per block: pairs with both rows left,
    n_right = np.zeros(nb, dtype=np.int64)  # and with both rows right
    for b in prange(nb):
        n_left[b], n_right[b] = _count_sides(pi, pj, start + (n * b) // nb, start + (n * (b + 1)) // nb, go_left)
    tl = 0
    tr = 0
    for b in range(nb):
        tl += n_left[b]
        tr += n_right[b]
    for b in prange(nb):
        lo = start + (n * b) // nb
        bl = 0
        br = 0
        for q in range(b):
            bl += n_left[q]
            br += n_right[q]
        _place_sides(pi, pj, pc, lo, start + (n * (b + 1)) // nb, go_left, start + bl, start + tl + br,
                     start + tl + tr + (lo - start - bl - br), oi, oj, oc)
    return tl, tr


@njit(cache=True)
def _partition_pairs_serial(pi, pj, pc, start, end, go_left, oi, oj, oc):
    tl, tr = _count_sides(pi, pj, start, end, go_left)
    _place_sides(pi, pj, pc, start, end, go_left, start, start + tl, start + tl + tr, oi, oj, oc)
    return tl, tr


def partition_pairs(pi: np.ndarray, pj: np.ndarray, pc: np.ndarray, start: int, end: int, go_left: np.ndarray,
                    oi: np.ndarray, oj: np.ndarray, oc: np.ndarray) -> tuple[int, int]:
    """Copy pairs ``start:end`` of ``(pi, pj, pc)`` to the same range of ``(oi, oj, oc)``, stably
    ordered as [both left | both right | split]; returns (n_left, n_right).

    Out of place so that blocks of pairs (their number depends only on the range size) are
    counted and then placed in parallel; the grower ping-pongs between two pair buffers, one per
    tree depth parity, so nothing is copied back. ``go_left[r]``: row ``r``'s side. Ranges of one
    block run without a parallel region: on a loaded machine a parallel region waits for a time
    slice of every thread (milliseconds), far longer than partitioning a small node.
    """
    run = _partition_pairs_parallel if end - start >= 2 * _PART_BLOCK else _partition_pairs_serial
    tl, tr = run(pi, pj, pc, start, end, go_left, oi, oj, oc)
    return int(tl), int(tr)


@njit(cache=True, parallel=True)
def compact_pairs(pi, pj, pc, in_bag, use_bag, oi, oj, oc):
    """Copy the pairs with coupling > 0 (and both rows in the bag when ``use_bag``) to the front of
    ``(oi, oj, oc)`` in their order, converting the index dtype on the way; returns how many were
    kept. Blocks of pairs (their number depends only on the pair count) are copied in parallel,
    each to its own offset; blocks then close the gaps, which only dropped pairs leave."""
    n = pc.shape[0]
    nb = max(1, min(_PART_MAX_BLOCKS, n // _PART_BLOCK))
    cnt = np.zeros(nb, dtype=np.int64)
    for b in prange(nb):
        lo = (n * b) // nb
        m = lo
        for k in range(lo, (n * (b + 1)) // nb):
            c = pc[k]
            keep = c > 0.0  # zero couplings change no hessian; skip their histogram work
            if use_bag:
                keep = keep and in_bag[pi[k]] and in_bag[pj[k]]
            if keep:
                oi[m] = pi[k]
                oj[m] = pj[k]
                oc[m] = c
                m += 1
        cnt[b] = m - lo
    total = cnt[0]
    for b in range(1, nb):
        lo = (n * b) // nb
        if total != lo:  # forward moves: the destination never passes the source
            for t in range(cnt[b]):
                oi[total + t] = oi[lo + t]
                oj[total + t] = oj[lo + t]
                oc[total + t] = oc[lo + t]
        total += cnt[b]
    return total


#: A node's coupling sum ``C = pc[start:end].sum()`` (float64, in pair order): the objectives' range sum.
sum_couplings = range_sum
