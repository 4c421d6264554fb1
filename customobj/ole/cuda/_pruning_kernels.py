"""numba.cuda kernels of ``criterion="ole_fast"``'s pair pruning and of its dropped couplings per
leaf: the GPU twins of :func:`customobj.ole.pair_pruning.prune_pairs` and
:func:`~customobj.ole.pair_pruning.dropped_leaf_couplings` (orchestrated by :mod:`.pruning`).

The thresholds are the CPU's (the bucket scheme and the bound: :mod:`.pair_pruning`), from the
CPU's own scalar code compiled as device functions (``_bucket``, ``_first_dropped_bucket``,
``_kept`` of :mod:`.pair_pruning_kernels`): :func:`query_tops` (per query the key of its largest
positive coupling, an int64 ``atomic.max``, and its mass ``M_q``), :func:`query_masses` (per query
and bucket the mass, float64 atomics). The couplings are on the tree's grid when pruned
(:mod:`.fixed_point`: ``round_pairs`` ran first, on the card or on the host), so every partial sum
of them is exact and the atomics' order changes no bit: the masses, the budget ``eps * M_q`` and so
the cuts are the CPU's. Kept and dropped pairs are then placed by a stable two-launch partition
(:func:`count_kept_blocks`, :func:`place_kept_blocks`: a block of lanes, a warp on a card, per segment,
with :mod:`._partitions_kernels`' fixed-order lane sums and scans), each lane computing a query's cut
from its tables when its pairs begin (no launch of its own), the kept ones in their order (the CPU's), the dropped ones behind them in
theirs (the CPU writes them reversed, or not at all; only their set matters: their sums are exact).
The kept count and coupling stay on the card, as the root's pair counts and ``C``.

The dropped couplings per leaf: :func:`leaf_map` writes each row's leaf (stamped with the tree, so
rows of earlier trees never match) from the device row order and the leaves' ranges, and
:func:`dropped_leaf_sums` adds each dropped pair with both rows in one leaf to that leaf (shared-memory
sums per block, one global atomic per block and leaf), and, for a leaf with a split, to the side of
it both rows go to: run with a search that may be the tree's last, it knows the leaves' sums whatever
the one split after it. It also clears the query tables for the next tree.
"""
from typing import Any, NamedTuple

from numba import float64, int64

from ..._cuda_runtime import THREADS, cuda_module, device_function
from ._partitions_kernels import SCRATCH, _base, _block, _lane, _scan2, _sum2
from ..common import PART_N_LEFT, SPLIT_BIN, SPLIT_FEATURE, SPLIT_GAIN, SPLIT_NAN_LEFT
from ._reduce_kernels import add_top, block_sums
from ..pair_pruning_kernels import N_BUCKETS, _bucket, _first_dropped_bucket, _kept

cuda = cuda_module()

__all__ = ["query_tops", "query_masses", "count_kept_blocks", "place_kept_blocks", "leaf_map", "dropped_leaf_sums",
           "LeafSplits", "PairArrays", "QueryTables", "SHARED_LEAVES"]

_bucket_d, _cut_d, _kept_d = device_function(_bucket), device_function(_first_dropped_bucket), device_function(_kept)

#: Leaves whose dropped couplings a block sums in shared memory (the others: global atomics).
SHARED_LEAVES = 256


class PairArrays(NamedTuple):
    """Pairs on the device: first rows, second rows, couplings."""

    pi: Any
    pj: Any
    pc: Any


@cuda.jit(cache=True)
def query_tops(tops, pc, m):
    """Per query ``q`` (of the pairs' first rows, :class:`~._reduce_kernels.QueryTops` ``tops`` of the
    couplings ``pc[0:m]``): ``tops.tops[q]`` the largest key ``bits >> 50`` and ``tops.totals[q]`` the
    sum of its positive couplings (both 0 before: :func:`dropped_leaf_sums` leaves them so)."""
    for k in range(cuda.grid(1), m, cuda.gridsize(1)):
        c = pc[k]
        if c > 0.0:
            add_top(tops, k, c)


@cuda.jit(cache=True)
def query_masses(pi, pc, bits, query_of_row, m, tops, mass, record, kept_c):
    """``mass[q, b]``: the positive couplings of query ``q`` in bucket ``b`` below its top (0 before);
    the kept pairs' ``record`` (``common.PART_RECORD`` int64) and coupling ``kept_c[0]`` set to 0 for
    :func:`count_kept_blocks`."""
    if cuda.grid(1) == 0:
        for i in range(record.shape[0]):
            record[i] = 0
        kept_c[0] = 0.0
    for k in range(cuda.grid(1), m, cuda.gridsize(1)):
        c = pc[k]
        if c > 0.0:
            q = query_of_row[pi[k]]
            cuda.atomic.add(mass, (q, _bucket_d(bits[k], tops[q])), c)


class QueryTables(NamedTuple):
    """Per query: ``tops`` (int64 key of the largest positive coupling), ``totals`` (its positive
    mass), ``mass`` (``(queries, N_BUCKETS)``: per bucket) and the fit's ``eps`` (its budget share)."""

    tops: Any
    totals: Any
    mass: Any
    eps: float


@cuda.jit(device=True)
def _keeps(pc, bits, k, q, tables, cut):
    """Whether pair ``k`` (query ``q``) is kept; ``cut``: ``[query, top, first dropped bucket]`` of the
    last query seen, recomputed (the CPU's ``_first_dropped_bucket``) only when the query changes, so
    a block of one query's pairs computes its threshold once."""
    if q != cut[0]:
        cut[0] = q
        cut[1] = tables.tops[q]
        cut[2] = _cut_d(tables.mass[q], tables.totals[q], tables.eps)
    return _kept_d(pc[k], bits[k], cut[1], cut[2])


@cuda.jit(device=True)
def _kept_run(src, bits, query_of_row, tables, lo, hi, cut):
    """``(kept pairs, their coupling)`` of ``src[lo:hi]`` (:func:`_keeps`, ``cut`` its cache)."""
    kept = 0
    ck = 0.0
    for k in range(lo, hi):
        keep = _keeps(src.pc, bits, k, query_of_row[src.pi[k]], tables, cut)
        kept += keep
        ck += src.pc[k] * keep
    return kept, ck


@cuda.jit(cache=True)
def count_kept_blocks(src, bits, query_of_row, tables, m, nb, counts, record, kept_c):
    """Block ``b`` (a warp on a card): segment ``b`` of ``src[0:m]``'s ``counts[b] = (kept, dropped)``,
    each lane counting its run (``_lane``; each query's threshold from its :class:`QueryTables`,
    :func:`_keeps`, cached per lane); the kept pairs counted into ``record[PART_N_LEFT]`` (the root's pair
    counts: ``[kept | 0]``) and their couplings into ``kept_c[0]`` (the root's ``C``: on-grid values,
    exact in any order), one atomic each per block (both zeroed before: :func:`query_masses`)."""
    b = cuda.blockIdx.x
    if b >= nb:  # the whole block returns (no barrier split)
        return
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    sh = cuda.shared.array((2, SCRATCH), dtype=int64)
    shc = cuda.shared.array((2, THREADS), dtype=float64)
    cut = cuda.local.array(3, dtype=int64)
    cut[0] = -1
    lo, hi = _block(b, 0, m, nb)
    rlo, rhi = _lane(lo, hi, t, nt)
    kept, ck = _kept_run(src, bits, query_of_row, tables, rlo, rhi, cut)
    total, _ = _sum2(sh, t, nt, kept, 0)
    if t == 0:
        counts[b, 0] = total
        counts[b, 1] = hi - lo - total
        cuda.atomic.add(record, PART_N_LEFT, total)
    block_sums(shc, ck, 0.0, kept_c)


@cuda.jit(cache=True)
def place_kept_blocks(src, bits, query_of_row, tables, m, nb, counts, record, dst):
    """Block ``b`` (a warp on a card): copy segment ``b``'s pairs of ``src`` to ``dst``
    (:class:`PairArrays`), stably, the kept ones to the front ``[0, record[PART_N_LEFT])`` and the
    dropped ones behind (``counts``, ``record``: :func:`count_kept_blocks`). The lanes' parts of the
    earlier segments' counts are summed (``_sum2``) and their runs' kept and dropped pairs scanned in
    lane order (``_scan2``): each lane then places its run in order, so the kept pairs keep the CPU's
    order whatever the segments and lanes."""
    b = cuda.blockIdx.x
    if b >= nb:
        return
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    sh = cuda.shared.array((2, SCRATCH), dtype=int64)
    cut = cuda.local.array(3, dtype=int64)
    cut[0] = -1
    a, c = _base(counts, b, t, nt)
    bk, bd = _sum2(sh, t, nt, a, c)  # apart from the scan's slots: no barrier between them
    lo, hi = _block(b, 0, m, nb)
    rlo, rhi = _lane(lo, hi, t, nt)
    kept, _ = _kept_run(src, bits, query_of_row, tables, rlo, rhi, cut)
    ik, idr, _, _ = _scan2(sh, t, nt, kept, rhi - rlo - kept)
    fk = bk + ik - kept
    fd = record[PART_N_LEFT] + bd + idr - (rhi - rlo - kept)
    for k in range(rlo, rhi):
        if _keeps(src.pc, bits, k, query_of_row[src.pi[k]], tables, cut):
            d = fk
            fk += 1
        else:
            d = fd
            fd += 1
        dst.pi[d] = src.pi[k]
        dst.pj[d] = src.pj[k]
        dst.pc[d] = src.pc[k]


@cuda.jit(cache=True)
def leaf_map(order, n, starts, ends, leaves, n_leaves, stamp, leaf_of_row, sums):
    """``leaf_of_row[order[k]] = stamp + leaves[j]`` for the positions ``starts[j] <= k < ends[j]``,
    ``k < n`` (the ranges sorted by start, then end: a binary search per position, so any number of
    leaves costs ``log2`` of it); ``sums[:] = 0``."""
    for i in range(cuda.grid(1), sums.shape[0], cuda.gridsize(1)):
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


class LeafSplits(NamedTuple):
    """What :func:`dropped_leaf_sums` needs of each leaf's next split: ``table[l] = (feature, bin,
    nan_left, source)`` (feature -1: none), or with ``source`` 0 or 1 the split in ``res[source]`` (a
    search's results, on the card: gain > 0 or none); ``bins``, ``n_bins``: the binned matrix
    (feature-major) and each feature's bins (its NaN bin)."""

    table: Any
    res: Any
    bins: Any
    n_bins: Any


@cuda.jit(device=True)
def _leaf_split(splits, l):
    """Leaf ``l``'s split ``(feature, bin, nan_left)`` (feature -1: none)."""
    src = splits.table[l, 3]
    if src < 0:
        return splits.table[l, 0], splits.table[l, 1], splits.table[l, 2]
    r = splits.res[src]
    if not r[SPLIT_GAIN] > 0.0:
        return int64(-1), int64(0), int64(0)
    return int64(r[SPLIT_FEATURE]), int64(r[SPLIT_BIN]), int64(r[SPLIT_NAN_LEFT] > 0.5)


@cuda.jit(device=True)
def _left(splits, f, tbin, nan_left, row):
    """Whether ``row`` goes left (``partition._mark_rows``' rule)."""
    v = int64(splits.bins[f, row])
    return nan_left != 0 if v == splits.n_bins[f] else v <= tbin


@cuda.jit(cache=True)
def dropped_leaf_sums(pairs, record, m, leaf_of_row, stamp, n_leaves, splits, sums, tables):
    """``sums[3 l]`` += the couplings of the dropped pairs (``record[PART_N_LEFT]:m``) with both rows
    in leaf ``l`` of the tree ``stamp`` (:func:`leaf_map`), and, when the leaf has a split
    (:class:`LeafSplits`), ``sums[3 l + 1]`` / ``sums[3 l + 2]`` += those with both rows left / right of
    it: whatever split comes next, every leaf's sum is known. On the grid: exact in any order. The
    pruning's :class:`QueryTables` are set back to 0 for the next tree (:func:`query_tops`)."""
    sh = cuda.shared.array((3, SHARED_LEAVES), dtype=float64)
    for i in range(cuda.grid(1), tables.tops.shape[0], cuda.gridsize(1)):
        tables.tops[i] = 0
        tables.totals[i] = 0.0
        for b in range(N_BUCKETS):
            tables.mass[i, b] = 0.0
    t = cuda.threadIdx.x
    for l in range(t, SHARED_LEAVES, cuda.blockDim.x):
        for part in range(3):
            sh[part, l] = 0.0
    cuda.syncthreads()
    for k in range(record[PART_N_LEFT] + cuda.grid(1), m, cuda.gridsize(1)):
        i = pairs.pi[k]
        j = pairs.pj[k]
        a = leaf_of_row[i]
        if a >= stamp and a == leaf_of_row[j]:  # both rows in one leaf of this tree
            l = a - stamp
            c = pairs.pc[k]
            part = 0
            f, tbin, nan_left = _leaf_split(splits, l)
            if f >= 0:
                side = _left(splits, f, tbin, nan_left, i)
                if side == _left(splits, f, tbin, nan_left, j):
                    part = 1 if side else 2
            if l < SHARED_LEAVES:
                cuda.atomic.add(sh, (0, l), c)
                if part > 0:
                    cuda.atomic.add(sh, (part, l), c)
            else:
                cuda.atomic.add(sums, 3 * l, c)
                if part > 0:
                    cuda.atomic.add(sums, 3 * l + part, c)
    cuda.syncthreads()
    for l in range(t, min(n_leaves, SHARED_LEAVES), cuda.blockDim.x):
        for part in range(3):
            if sh[part, l] != 0.0:
                cuda.atomic.add(sums, 3 * l + part, sh[part, l])
