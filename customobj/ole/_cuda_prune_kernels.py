"""numba.cuda kernels of ``criterion="ole_fast"``'s pair pruning and of its dropped couplings per
leaf: the GPU twins of :func:`customobj.ole.pair_pruning.prune_pairs` and
:func:`~customobj.ole.pair_pruning.dropped_leaf_couplings` (orchestrated by :mod:`.cuda_pruning`).

The thresholds are the CPU's (the bucket scheme and the bound: :mod:`.pair_pruning`), from the
CPU's own scalar code compiled as device functions (``_bucket``, ``_first_dropped_bucket``,
``_kept`` of :mod:`.pair_pruning_kernels`): :func:`query_tops` (per query the key of its largest
positive coupling, an int64 ``atomic.max``, and its mass ``M_q``), :func:`query_masses` (per query
and bucket the mass, float64 atomics), :func:`query_cuts` (per query its first dropped bucket, one
thread a query, which then clears the tables for the next tree: no zeroing launch). The couplings
are on the tree's grid when pruned (:mod:`.fixed_point`: ``round_pairs`` ran first, on the card or
on the host), so every partial sum of them is exact and the atomics' order changes no bit: the
masses, the budget ``eps * M_q`` and so the cuts are the CPU's. Kept and dropped pairs are then
placed by a stable two-launch partition (:func:`count_kept_blocks`, :func:`place_kept_blocks`: the
per-block counting and offsets of :mod:`._cuda_partition_kernels`), the kept ones in their order
(the CPU's), the dropped ones behind them in theirs (the CPU writes them reversed, or not at all;
only their set matters: their sums are exact). At the end of the tree, :func:`leaf_map` writes
each row's leaf (stamped with the tree, so rows of earlier trees never match) from the device row
order and the leaves' ranges, and :func:`dropped_leaf_sums` adds each dropped pair with both rows
in one leaf to that leaf (shared-memory sums per block, one global atomic per block and leaf).
"""
from numba import float64, int64

from .._cuda_runtime import THREADS, cuda_module, device_function
from ._cuda_partition_kernels import _block, _offsets
from ._cuda_reduce_kernels import block_sums
from .pair_pruning_kernels import _KEY_SHIFT, N_BUCKETS, _bucket, _first_dropped_bucket, _kept

cuda = cuda_module()

__all__ = ["query_tops", "query_masses", "query_cuts", "count_kept_blocks", "place_kept_blocks", "leaf_map",
           "dropped_leaf_sums", "SHARED_LEAVES"]

_bucket_d, _cut_d, _kept_d = device_function(_bucket), device_function(_first_dropped_bucket), device_function(_kept)

#: Leaves whose dropped couplings a block sums in shared memory (the others: global atomics).
SHARED_LEAVES = 256


@cuda.jit(cache=True)
def query_tops(pi, pc, bits, query_of_row, m, tops, totals):
    """Per query ``q`` (of the pairs' first rows): ``tops[q]`` the largest key ``bits >> 50`` and
    ``totals[q]`` the sum of its positive couplings (both 0 before: :func:`query_cuts` leaves them so)."""
    for k in range(cuda.grid(1), m, cuda.gridsize(1)):
        c = pc[k]
        if c > 0.0:
            q = query_of_row[pi[k]]
            cuda.atomic.max(tops, q, bits[k] >> _KEY_SHIFT)
            cuda.atomic.add(totals, q, c)  # on the grid: exact in any order


@cuda.jit(cache=True)
def query_masses(pi, pc, bits, query_of_row, m, tops, mass):
    """``mass[q, b]``: the positive couplings of query ``q`` in bucket ``b`` below its top (0 before)."""
    for k in range(cuda.grid(1), m, cuda.gridsize(1)):
        c = pc[k]
        if c > 0.0:
            q = query_of_row[pi[k]]
            cuda.atomic.add(mass, (q, _bucket_d(bits[k], tops[q])), c)


@cuda.jit(cache=True)
def query_cuts(tops, totals, mass, n_queries, eps, thresholds, acc):
    """``thresholds[q] = (top, first dropped bucket)`` (the CPU's ``_first_dropped_bucket``), then
    ``tops``, ``totals``, ``mass`` set back to 0 for the next tree, and ``acc`` (the partition's
    totals, next) zeroed."""
    for i in range(cuda.grid(1), acc.shape[0], cuda.gridsize(1)):
        acc[i] = 0
    for q in range(cuda.grid(1), n_queries, cuda.gridsize(1)):
        thresholds[q, 0] = tops[q]
        thresholds[q, 1] = _cut_d(mass[q], totals[q], eps)
        tops[q] = 0
        totals[q] = 0.0
        for b in range(N_BUCKETS):
            mass[q, b] = 0.0


@cuda.jit(device=True)
def _keeps(pc, bits, pi, query_of_row, thresholds, k):
    q = query_of_row[pi[k]]
    return _kept_d(pc[k], bits[k], thresholds[q, 0], thresholds[q, 1])


@cuda.jit(cache=True)
def count_kept_blocks(pi, pc, bits, query_of_row, thresholds, m, nb, counts, totals, couplings):
    """Thread ``b``: ``counts[b] = (kept, dropped)`` pairs of its block of ``0:m``; the block's kept
    pairs and their couplings added to ``totals[0]`` (int64) and ``couplings[0]`` (float64, zeroed
    before: :func:`query_cuts`), one atomic each per CUDA block."""
    shn = cuda.shared.array((2, THREADS), dtype=int64)
    shc = cuda.shared.array((2, THREADS), dtype=float64)
    b = cuda.grid(1)
    kept = 0
    ck = 0.0
    if b < nb:
        lo, hi = _block(b, 0, m, nb)
        for k in range(lo, hi):
            keep = _keeps(pc, bits, pi, query_of_row, thresholds, k)
            kept += keep
            ck += pc[k] * keep
        counts[b, 0] = kept
        counts[b, 1] = hi - lo - kept
    block_sums(shn, kept, 0, totals)
    block_sums(shc, ck, 0.0, couplings)


@cuda.jit(cache=True)
def place_kept_blocks(pi, pj, pc, bits, query_of_row, thresholds, m, nb, counts, totals, oi, oj, oc):
    """Thread ``b``: copy its block's pairs to ``(oi, oj, oc)``, stably, the kept ones to the front
    ``[0, totals[0])`` and the dropped ones behind (``counts``, ``totals``: :func:`count_kept_blocks`)."""
    sh = cuda.shared.array((2, THREADS), dtype=int64)
    fk, fd = _offsets(counts, nb, sh)
    b = cuda.grid(1)
    if b >= nb:
        return
    fd += totals[0]
    lo, hi = _block(b, 0, m, nb)
    for k in range(lo, hi):
        if _keeps(pc, bits, pi, query_of_row, thresholds, k):
            d = fk
            fk += 1
        else:
            d = fd
            fd += 1
        oi[d] = pi[k]
        oj[d] = pj[k]
        oc[d] = pc[k]


@cuda.jit(cache=True)
def leaf_map(order, n, starts, ends, leaves, n_leaves, stamp, leaf_of_row, sums):
    """``leaf_of_row[order[k]] = stamp + leaves[j]`` for the positions ``starts[j] <= k < ends[j]``,
    ``k < n`` (the ranges sorted by start, then end: a binary search per position, so any number of
    leaves costs ``log2`` of it); ``sums[:n_leaves] = 0``."""
    for i in range(cuda.grid(1), n_leaves, cuda.gridsize(1)):
        sums[i] = 0.0
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        lo = 0
        hi = n_leaves
        while hi - lo > 1:  # the last range starting at or before k
            mid = (lo + hi) // 2
            if starts[mid] <= k:
                lo = mid
            else:
                hi = mid
        if n_leaves > 0 and starts[lo] <= k < ends[lo]:
            leaf_of_row[order[k]] = stamp + leaves[lo]


@cuda.jit(cache=True)
def dropped_leaf_sums(pi, pj, pc, m, leaf_of_row, stamp, n_leaves, sums):
    """``sums[l]`` += the couplings of the pairs ``0:m`` with both rows in leaf ``l`` of the tree
    ``stamp`` (:func:`leaf_map`); on the grid: exact in any order."""
    sh = cuda.shared.array(SHARED_LEAVES, dtype=float64)
    t = cuda.threadIdx.x
    for l in range(t, SHARED_LEAVES, cuda.blockDim.x):
        sh[l] = 0.0
    cuda.syncthreads()
    for k in range(cuda.grid(1), m, cuda.gridsize(1)):
        a = leaf_of_row[pi[k]]
        if a >= stamp and a == leaf_of_row[pj[k]]:  # both rows in one leaf of this tree
            l = a - stamp
            if l < SHARED_LEAVES:
                cuda.atomic.add(sh, l, pc[k])
            else:
                cuda.atomic.add(sums, l, pc[k])
    cuda.syncthreads()
    for l in range(t, min(n_leaves, SHARED_LEAVES), cuda.blockDim.x):
        if sh[l] != 0.0:
            cuda.atomic.add(sums, l, sh[l])
