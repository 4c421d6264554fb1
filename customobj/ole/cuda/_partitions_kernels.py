"""numba.cuda kernels of the OLE grower's row and pair partitions: the GPU twins of
:func:`customobj.ole.partition.partition_rows` and :func:`customobj.ole.pair_partition.partition_pairs`,
two launches each.

A range is cut into *segments* (:func:`.partitions.partition_segments`), and a block of lanes (a warp on
a card, ``partitions.segment_threads``) takes each one: lane ``t`` of ``nt`` runs the CPU's own per-block
code (``partition._mark_rows`` / ``_place_rows``, ``pair_partition._count_sides`` / ``_place_sides``, as
device functions; their Python source under the simulator) on its run ``[lo + m t / nt, lo + m (t + 1)
/ nt)`` (:func:`_lane`), and a fixed-order scan of the lanes' counts in shared memory (:func:`_scan2`,
integers: exact) gives each lane where its run goes (issue 42, item 4: one thread ran a whole
128-item block before). The first launch counts each segment's sides (rows: and copies the range to a
scratch order, which the second reads; pairs: and adds the segment's totals, one atomic a segment, into
a ``totals`` record that stays on the card). The second places each segment's items: its block sums the
counts of the segments before its own (:func:`_base`, ``b / nt`` a lane: why segments grow as
``sqrt(n)`` past 16,384 items), so no scan launch sits between them. A split's rows are placed and its
pairs counted in one launch (:func:`place_rows_count_sides`); the pairs' placing also takes the split
pairs' couplings out of their rows' sums (``rho``: the pair histograms' ``R``). Segments, lanes and
each lane's run are in order, so the partitions are stable: the CPU's [left | right] rows and [both
left | both right | split] pairs whatever the segment count or the block's width.

A breadth-first level's splits are marked in one launch (:func:`mark_rows_level`) and placed, with
their pairs counted, in another (:func:`place_rows_count_sides_level`): blocks ``(b, split)`` run the
one-split code on segment ``b`` of the split's row of a table (``LV_*`` columns; issue 42, item 3).
Every kernel is launched a block per segment (``blockIdx.x``); a block past its range's segments
returns whole (no thread waits at a barrier the others skip).
"""
from typing import Any, NamedTuple

from numba import int64

import numpy as np
from numba import uint32

from ..._cuda_runtime import cuda_module, device_function
from ._hist_layout import SHARED_SLOTS
from ._launch import WARP
from ._histograms_kernels import WORDS, _row_updates
from ..common import PART_N_LEFT, PART_N_RIGHT
from ..pair_partition import _count_sides, _place_sides
from ..partition import _mark_rows, _place_rows

cuda = cuda_module()

__all__ = ["mark_rows_blocks", "place_rows_blocks", "count_sides_blocks", "place_rows_count_sides",
           "place_sides_blocks", "place_sides_row_hist", "mark_rows_level", "place_rows_count_sides_level",
           "PairPlace", "PairSides", "PairSources", "LEVEL_COLUMNS", "LV_START", "LV_N", "LV_NB", "LV_BASE",
           "LV_N_LEFT", "LV_FEATURE", "LV_TBIN", "LV_NAN_BIN", "LV_NAN_LEFT", "LV_PBUF", "LV_PSTART", "LV_PN",
           "LV_PNB", "LV_PBASE", "LV_RECORD"]

#: Columns of a breadth-first level's partition table (int64, a row per split: :func:`mark_rows_level`,
#: :func:`place_rows_count_sides_level`): the parent's rows ``order[start:start+n]`` in ``nb`` partition
#: blocks whose counts are rows ``base:base+nb`` of the block counts, the split's exact left count, its
#: feature, bin, NaN bin and NaN side (0/1); its pairs: the parent's buffer (0/1; -1: its pairs are not
#: partitioned), ``pstart:pstart+pn`` in ``pnb`` blocks counted into rows ``pbase:pbase+pnb``, and the
#: row of the record ring that receives their totals. ``nb`` 0: the split's rows are not partitioned.
(LV_START, LV_N, LV_NB, LV_BASE, LV_N_LEFT, LV_FEATURE, LV_TBIN, LV_NAN_BIN, LV_NAN_LEFT, LV_PBUF, LV_PSTART, LV_PN,
 LV_PNB, LV_PBASE, LV_RECORD) = range(15)
LEVEL_COLUMNS = 15


_mark, _place, _count, _sides = device_function(_mark_rows), device_function(_place_rows), device_function(_count_sides), device_function(_place_sides)


@cuda.jit(device=True)
def _block(b, start, n, nb):
    """Segment ``b`` of ``nb`` of ``[start, start + n)``: ``(lo, hi)``."""
    return start + (n * b) // nb, start + (n * (b + 1)) // nb


@cuda.jit(device=True)
def _lane(lo, hi, t, nt):
    """Lane ``t`` of ``nt``'s run of the segment ``[lo, hi)``: consecutive items, the runs in lane order
    (so the lanes' counts, scanned in lane order, keep the segment's order)."""
    m = hi - lo
    return lo + (m * t) // nt, lo + (m * (t + 1)) // nt


#: Shared int64 slots a channel of a partition block's scratch needs per lane: the scan's two buffers
#: (:func:`_scan2`, slots ``[0, 2 nt)``) and a sum's (:func:`_sum2`, from ``SUM_AT * nt``), apart so a
#: sum then a scan need no barrier between them.
SCRATCH_SLOTS = 3
SUM_AT = 2
#: Shared int64 slots a channel of a partition kernel's own scratch: its blocks are at most a warp wide
#: (``partitions.segment_threads``; one module constant, so numba sees a literal shape).
SCRATCH = SCRATCH_SLOTS * WARP


@cuda.jit(device=True)
def _scan2(sh, t, nt, a, c):
    """Inclusive scan of the block's ``(a, c)`` in lane order, and their sums: ``(a's, c's, sum of a, sum
    of c)`` in thread ``t`` of ``nt`` (Hillis-Steele, ``log2(nt)`` steps of one barrier each, in two
    buffers: slots ``[0, nt)`` and ``[nt, 2 nt)`` of ``sh[0]``, ``sh[1]``; every thread calls it).
    Integers: exact."""
    sh[0, t] = a
    sh[1, t] = c
    cuda.syncthreads()
    src = 0
    d = 1
    while d < nt:
        dst = nt - src  # the other buffer
        va = sh[0, src + t]
        vc = sh[1, src + t]
        if t >= d:
            va += sh[0, src + t - d]
            vc += sh[1, src + t - d]
        sh[0, dst + t] = va
        sh[1, dst + t] = vc
        cuda.syncthreads()
        src = dst
        d *= 2
    return sh[0, src + t], sh[1, src + t], sh[0, src + nt - 1], sh[1, src + nt - 1]


@cuda.jit(device=True)
def _sum2(sh, t, nt, a, c):
    """The block's sums of ``(a, c)``, in every thread (a tree in slots ``[SUM_AT nt, (SUM_AT + 1) nt)``
    of ``sh[0]``, ``sh[1]``; ``nt`` a power of two; every thread calls it). Integers: exact."""
    at = SUM_AT * nt
    sh[0, at + t] = a
    sh[1, at + t] = c
    cuda.syncthreads()
    half = nt // 2
    while half > 0:
        if t < half:
            sh[0, at + t] += sh[0, at + t + half]
            sh[1, at + t] += sh[1, at + t + half]
        cuda.syncthreads()
        half //= 2
    return sh[0, at], sh[1, at]


@cuda.jit(device=True)
def _base(counts, b, t, nt):
    """Lane ``t``'s part of ``counts[:b].sum(axis=0)`` (the segments before ``b``): the lanes stride over
    them; the caller's :func:`_sum2` adds the parts."""
    a = 0
    c = 0
    for k in range(t, b, nt):
        a += counts[k, 0]
        c += counts[k, 1]
    return a, c


@cuda.jit(device=True)
def _lefts(tmp, lo, hi, go_left):
    """How many of the rows ``tmp[lo:hi]`` go left."""
    c = 0
    for k in range(lo, hi):
        if go_left[tmp[k]]:
            c += 1
    return c


@cuda.jit(device=True)
def _mark_segment(col, order, lo, hi, tbin, nan_bin, nan_left, go_left, tmp, sh, t, nt):
    """Segment ``[lo, hi)``: each lane marks its run (the CPU's ``_mark_rows``) and copies it to ``tmp``;
    returns the segment's left rows."""
    rlo, rhi = _lane(lo, hi, t, nt)
    c = _mark(col, order, rlo, rhi, tbin, nan_bin, nan_left, go_left)
    for k in range(rlo, rhi):
        tmp[k] = order[k]
    total, _ = _sum2(sh, t, nt, c, 0)
    return total


@cuda.jit(cache=True)
def mark_rows_blocks(col, order, start, n, nb, tbin, nan_bin, nan_left, go_left, tmp, counts):
    """Block ``b``: mark ``go_left`` for segment ``b`` of ``order[start:start+n]`` and copy it to ``tmp``
    (same positions); ``counts[b, 0]``: its left rows."""
    b = cuda.blockIdx.x
    if b >= nb:
        return
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    sh = cuda.shared.array((2, SCRATCH), dtype=int64)
    lo, hi = _block(b, start, n, nb)
    c = _mark_segment(col, order, lo, hi, tbin, nan_bin, nan_left, go_left, tmp, sh, t, nt)
    if t == 0:
        counts[b, 0] = c
        counts[b, 1] = 0


@cuda.jit(device=True)
def _put_rows(tmp, order, start, n, nb, b, n_left, go_left, counts, sh, t, nt):
    """Segment ``b``'s rows (``tmp``) put back into ``order``: left ones after the earlier segments' and
    lanes' left rows, right ones after all ``n_left`` left rows and the earlier right rows (one
    :func:`_scan2` of the lanes' parts of the earlier segments' counts, whose sum it also gives, and of
    the lanes' left rows)."""
    a = 0  # the rows' counts[:, 1] are 0: only the left ones summed
    for k in range(t, b, nt):
        a += counts[k, 0]
    lo, hi = _block(b, start, n, nb)
    rlo, rhi = _lane(lo, hi, t, nt)
    c = _lefts(tmp, rlo, rhi, go_left)
    _, cl, base, _ = _scan2(sh, t, nt, a, c)
    ml = base + cl - c  # left rows before the run: the earlier segments', the earlier lanes'
    _place(tmp, rlo, rhi, go_left, order, start + ml, start + n_left + (rlo - start) - ml)


@cuda.jit(device=True)
def _count_pairs(pi, pj, start, n, nb, b, go_left, counts, totals, sh, t, nt):
    """Segment ``b``'s pairs counted (each lane its run, the CPU's ``_count_sides``; summed by
    :func:`_sum2`): ``counts[b]`` and one atomic each into ``totals``, by thread 0."""
    lo, hi = _block(b, start, n, nb)
    rlo, rhi = _lane(lo, hi, t, nt)
    nl, nr = _count(pi, pj, rlo, rhi, go_left)
    sl, sr = _sum2(sh, t, nt, nl, nr)
    if t == 0:
        counts[b, 0] = sl
        counts[b, 1] = sr
        cuda.atomic.add(totals, 0, sl)
        cuda.atomic.add(totals, 1, sr)


@cuda.jit(cache=True)
def place_rows_blocks(tmp, order, start, n, nb, n_left, go_left, counts):
    """Block ``b``: put segment ``b``'s rows (``tmp``: :func:`mark_rows_blocks`) back into ``order``, left
    ones after the earlier left rows, right ones after all ``n_left`` left rows and the earlier right
    rows (:func:`_put_rows`)."""
    b = cuda.blockIdx.x
    if b >= nb:
        return
    sh = cuda.shared.array((2, SCRATCH), dtype=int64)
    _put_rows(tmp, order, start, n, nb, b, n_left, go_left, counts, sh, cuda.threadIdx.x, cuda.blockDim.x)


@cuda.jit(cache=True)
def count_sides_blocks(pi, pj, start, n, nb, go_left, counts, totals):
    """Block ``b``: ``counts[b] = (pairs with both rows left, with both rows right)`` in segment ``b``,
    added to ``totals`` (int64, zeroed before), one atomic each per segment."""
    b = cuda.blockIdx.x
    if b >= nb:
        return
    sh = cuda.shared.array((2, SCRATCH), dtype=int64)
    _count_pairs(pi, pj, start, n, nb, b, go_left, counts, totals, sh, cuda.threadIdx.x, cuda.blockDim.x)


@cuda.jit(cache=True)
def place_rows_count_sides(rows, pairs, go_left):
    """A split's rows placed and its pairs counted in one launch (both read only the sides
    :func:`mark_rows_blocks` wrote): blocks ``(b, 0)`` run :func:`place_rows_blocks`' block ``b`` on
    ``rows`` (``partitions.RowPlace``), blocks ``(b, 1)`` :func:`count_sides_blocks`' on ``pairs``
    (``partitions.PairCount``); ``b`` covers the larger of their segment counts."""
    sh = cuda.shared.array((2, SCRATCH), dtype=int64)
    b, t, nt = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    if cuda.blockIdx.y == 0:
        if b < rows.nb:
            _put_rows(rows.tmp, rows.order, rows.start, rows.n, rows.nb, b, rows.n_left, go_left, rows.counts, sh,
                      t, nt)
    elif b < pairs.nb:
        _count_pairs(pairs.pi, pairs.pj, pairs.start, pairs.n, pairs.nb, b, go_left, pairs.counts, pairs.totals, sh,
                     t, nt)


class PairPlace(NamedTuple):
    """Where a pair partition puts its pairs (``place_sides_blocks``' record): ``oi, oj, oc``, and ``rho``,
    each row's coupling sum over its node's pairs (``_histograms_kernels.NodeRows``), from which the
    split pairs' couplings are taken."""

    oi: Any
    oj: Any
    oc: Any
    rho: Any


@cuda.jit(cache=True)
def place_sides_blocks(sides, go_left, out):
    """Block ``b``: copy segment ``b``'s pairs of ``sides`` (:class:`PairSides`) to ``(out.oi, out.oj,
    out.oc)`` (:class:`PairPlace`), stably, as [both left | both right | split] (``sides.counts``,
    ``sides.totals``: :func:`count_sides_blocks`; :func:`_put_sides`), and take each split pair's
    coupling out of both its rows' ``out.rho``: each row's then is its child's (float64 global adds of
    on-grid values: exact in any order)."""
    b = cuda.blockIdx.x
    if b >= sides.nb:
        return
    sh = cuda.shared.array((2, SCRATCH), dtype=int64)
    _put_sides(sides, b, b + 1, go_left, out, sh, cuda.threadIdx.x, cuda.blockDim.x)


@cuda.jit(device=True)
def _put_sides(sides, b0, b1, go_left, out, sh, t, nt):
    """:func:`place_sides_blocks`' segments ``b0:b1`` (consecutive: one range) by thread ``t`` of ``nt``:
    the earlier segments' counts summed (:func:`_base`, :func:`_sum2`), the lanes' own counted and
    scanned (:func:`_scan2`), then each lane places its run with the CPU's ``_place_sides`` from its
    three offsets."""
    pi, pj, pc, start, n, nb = sides.pi, sides.pj, sides.pc, sides.start, sides.n, sides.nb
    a, c = _base(sides.counts, b0, t, nt)
    bl, br = _sum2(sh, t, nt, a, c)  # apart from the scan's slots: no barrier between them
    lo, _ = _block(b0, start, n, nb)
    _, hi = _block(b1 - 1, start, n, nb)
    rlo, rhi = _lane(lo, hi, t, nt)
    nl, nr = _count(pi, pj, rlo, rhi, go_left)
    il, ir, _, _ = _scan2(sh, t, nt, nl, nr)
    ml = bl + il - nl  # both-left and both-right pairs before the run
    mr = br + ir - nr
    tl = sides.totals[0]
    tr = sides.totals[1]
    _sides(pi, pj, pc, rlo, rhi, go_left, start + ml, start + tl + mr, start + tl + tr + (rlo - start - ml - mr),
           out.oi, out.oj, out.oc)
    rho = out.rho
    for k in range(rlo, rhi):
        i = pi[k]
        j = pj[k]
        if go_left[i] != go_left[j]:
            cuda.atomic.add(rho, i, -pc[k])
            cuda.atomic.add(rho, j, -pc[k])


class PairSides(NamedTuple):
    """A pair partition's placing: the record of :func:`place_sides_blocks` and
    :func:`place_sides_row_hist` (all but the sides and ``out``)."""

    pi: Any
    pj: Any
    pc: Any
    start: int  # the parent's pairs: start:start+n, in nb partition blocks
    n: int
    nb: int
    counts: Any  # count_sides_blocks' per-block counts and their totals
    totals: Any


@cuda.jit(cache=True)
def place_sides_row_hist(bins_rm, groups, members, slot_map, build, sides, go_left, out):
    """``ole_fast``: a split's pairs placed and its smaller child's row histogram built in one launch
    (both read only what :func:`place_rows_count_sides` wrote: the placed rows, the sides, the pair
    counts). Blocks ``(x, y, 0)``: ``_histograms_kernels.row_hist_shared``'s block ``(x, y)`` on
    ``build`` (``histograms.RowBuild``; the rows in ``gridDim.x`` chunks); blocks ``(x, 0, 1)``:
    :func:`place_sides_blocks` on ``sides`` (:class:`PairSides`) and ``out`` (:class:`PairPlace`),
    block ``x`` taking ``k = ceil(nb / gridDim.x)`` consecutive segments ``x k ...`` as one range (the
    grid is the histogram's: more blocks would be more chunks, each merging its shared histogram),
    the block's threads as one row of ``blockDim.x * blockDim.y`` lanes (a power of two). The scans'
    int64 scratch is the histogram's shared array seen as int64: one 48,000-byte array, under the 48
    KiB a block may declare."""
    sh = cuda.shared.array((SHARED_SLOTS, WORDS), dtype=uint32)
    if cuda.blockIdx.z == 0:
        _row_updates(sh, bins_rm, build.rows, build.n, build.g, build.h, build.steps, groups, members, slot_map,
                     build.out)
        return
    k = (sides.nb + cuda.gridDim.x - 1) // cuda.gridDim.x
    b0 = cuda.blockIdx.x * k
    if cuda.blockIdx.y != 0 or b0 >= sides.nb:  # the whole block returns (no barrier split)
        return
    t = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    _put_sides(sides, b0, min(b0 + k, sides.nb), go_left, out, sh.view(np.int64).T, t,
               cuda.blockDim.x * cuda.blockDim.y)


@cuda.jit(cache=True)
def mark_rows_level(table, bins, order, go_left, tmp, counts):
    """Every split of a breadth-first level marked in one launch: block ``(b, s)`` runs
    :func:`mark_rows_blocks`' block ``b`` on split ``s``'s row of ``table`` (``LV_*`` columns; its
    feature's bins ``bins[feature]``, feature-major; its segment counts at rows ``base:base+nb`` of
    ``counts``). The splits' rows are disjoint (a level's leaves), so one ``go_left`` and one ``tmp``
    serve them all."""
    me = table[cuda.blockIdx.y]
    b = cuda.blockIdx.x
    nb = me[LV_NB]
    if b >= nb:
        return
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    sh = cuda.shared.array((2, SCRATCH), dtype=int64)
    lo, hi = _block(b, me[LV_START], me[LV_N], nb)
    c = _mark_segment(bins[me[LV_FEATURE]], order, lo, hi, me[LV_TBIN], me[LV_NAN_BIN], me[LV_NAN_LEFT] != 0, go_left,
                      tmp, sh, t, nt)
    if t == 0:
        at = me[LV_BASE] + b
        counts[at, 0] = c
        counts[at, 1] = 0


class PairSources(NamedTuple):
    """A tree's two pair buffers' row indices (``pi``, ``pj`` of buffers 0 and 1): a level's splits
    count the pairs of their parent's buffer (``LV_PBUF``)."""

    pi0: Any
    pj0: Any
    pi1: Any
    pj1: Any


@cuda.jit(cache=True)
def place_rows_count_sides_level(table, order, tmp, counts, pairs, pair_counts, records, go_left):
    """Every split of a breadth-first level placed (its rows) and counted (its pairs) in one launch, as
    :func:`place_rows_count_sides` does one split's: blocks ``(b, s, 0)`` place segment ``b`` of split
    ``s``'s rows (``table`` row ``s``, ``LV_*``; ``tmp``, ``counts``: :func:`mark_rows_level`'s), blocks
    ``(b, s, 1)`` count segment ``b`` of its pairs (``pairs``: :class:`PairSources`; segment counts into
    ``pair_counts``, totals added to ``records[LV_RECORD]``'s ``PART_N_LEFT``, ``PART_N_RIGHT``, zeroed
    before). A block past its split's segments returns whole (no barrier split)."""
    sh = cuda.shared.array((2, SCRATCH), dtype=int64)
    me = table[cuda.blockIdx.y]
    b, t, nt = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    if cuda.blockIdx.z == 0:
        nb = me[LV_NB]
        if b >= nb:
            return
        base = me[LV_BASE]
        _put_rows(tmp, order, me[LV_START], me[LV_N], nb, b, me[LV_N_LEFT], go_left, counts[base:base + nb], sh, t, nt)
        return
    nb = me[LV_PNB]
    if me[LV_PBUF] < 0 or b >= nb:
        return
    pi, pj = pairs.pi0, pairs.pj0
    if me[LV_PBUF] == 1:
        pi, pj = pairs.pi1, pairs.pj1
    base = me[LV_PBASE]
    _count_pairs(pi, pj, me[LV_PSTART], me[LV_PN], nb, b, go_left, pair_counts[base:base + nb],
                 records[me[LV_RECORD], PART_N_LEFT:PART_N_RIGHT + 1], sh, t, nt)
