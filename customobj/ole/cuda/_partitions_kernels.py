"""numba.cuda kernels of the OLE grower's row and pair partitions: the GPU twins of
:func:`customobj.ole.partition.partition_rows` and :func:`customobj.ole.pair_partition.partition_pairs`,
two launches each.

Like the CPU's parallel versions, a range is cut into blocks whose number depends only on its size
(:func:`.partitions.partition_blocks`); one thread per block runs the CPU's own per-block code
(``partition._mark_rows`` / ``_place_rows``, ``pair_partition._count_sides`` / ``_place_sides``,
compiled as device functions; their Python source under the simulator, as in
:mod:`._split_kernels`). The first launch counts each block's sides (rows: and copies the range
to a scratch order, which the second reads, so no third launch copies it back; pairs: and adds the
totals, one atomic per CUDA block, into a ``totals`` record that stays on the card: the children's
couplings are their split's, nothing sums them here). The second
launch places each block's items at its offsets, which each CUDA block computes itself
(:func:`_offsets`: the counts of every earlier block summed and scanned in shared memory, in a fixed
order, integers: exact), so no scan launch sits between them. Its cost: each CUDA block reads the
counts before it, ``nb**2 / (2 x threads)`` int64 pairs in all (2M at WEB30K's 32,768 blocks, in L2).
A split with pairs places its rows and counts its pairs in one launch
(:func:`place_rows_count_sides`: both read only the marked sides), so its rows and pairs take three
launches; the last also takes the split pairs' couplings out of their rows' sums (``rho``: the
pair histograms' ``R`` is their histogram, ``_histograms_kernels``). The partitions are stable, so their result is the CPU's whatever the block count: [left | right]
rows and [both left | both right | split] pairs, each in node order.

A breadth-first level's splits are marked in one launch (:func:`mark_rows_level`) and placed, with
their pairs counted, in another (:func:`place_rows_count_sides_level`): blocks ``(x, split)`` run the
one-split code on the split's row of a table (``LV_*`` columns), its block counts at its own rows of
the scratch (issue 42, item 3: a level's partitions in two launches, not two a split).
"""
from typing import Any, NamedTuple

from numba import int64

import numpy as np
from numba import uint32

from ..._cuda_runtime import THREADS, cuda_module, device_function
from ._hist_layout import SHARED_SLOTS
from ._histograms_kernels import WORDS, _row_updates
from ._reduce_kernels import block_sums
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
    return start + (n * b) // nb, start + (n * (b + 1)) // nb


@cuda.jit(device=True)
def _scan2(sh, t, nt, a, c):
    """Inclusive scan of the block's ``(a, c)`` into ``sh[0], sh[1]`` (Hillis-Steele, ``log2(nt)`` steps;
    thread ``t`` of ``nt``, a power of two)."""
    sh[0, t] = a
    sh[1, t] = c
    d = 1
    while d < nt:
        cuda.syncthreads()
        va = 0
        vc = 0
        if t >= d:
            va = sh[0, t - d]
            vc = sh[1, t - d]
        cuda.syncthreads()
        sh[0, t] += va
        sh[1, t] += vc
        d *= 2
    cuda.syncthreads()


@cuda.jit(device=True)
def _offsets(counts, nb, sh):
    """Thread ``b = cuda.grid(1)``: ``counts[:b].sum(axis=0)`` (0 past ``nb``); every thread of the block
    must call it (:func:`_offsets_at` at the block's own threads)."""
    return _offsets_at(counts, nb, sh, (cuda.threadIdx.x, cuda.blockDim.x, cuda.blockIdx.x))


@cuda.jit(device=True)
def _offsets_at(counts, nb, sh, pos):
    """Thread ``t`` of ``nt`` (a power of two) in partition block group ``blk`` (``pos``), partition
    block ``b = blk * nt + t``: ``counts[:b].sum(axis=0)`` (0 past ``nb``); every thread of the block
    must call it. The block first sums the counts of the blocks before its own (strided, then scanned),
    then scans its own."""
    t, nt, blk = pos
    b0 = blk * nt
    a = 0
    c = 0
    for k in range(t, min(b0, nb), nt):
        a += counts[k, 0]
        c += counts[k, 1]
    _scan2(sh, t, nt, a, c)
    base_a = sh[0, nt - 1]
    base_c = sh[1, nt - 1]
    cuda.syncthreads()
    a = 0
    c = 0
    if b0 + t < nb:
        a = counts[b0 + t, 0]
        c = counts[b0 + t, 1]
    _scan2(sh, t, nt, a, c)
    return base_a + sh[0, t] - a, base_c + sh[1, t] - c


@cuda.jit(cache=True)
def mark_rows_blocks(col, order, start, n, nb, tbin, nan_bin, nan_left, go_left, tmp, counts):
    """Thread ``b``: mark ``go_left`` for its block of ``order[start:start+n]`` and copy the block to
    ``tmp`` (same positions); ``counts[b, 0]``: its left rows."""
    b = cuda.grid(1)
    if b < nb:
        lo, hi = _block(b, start, n, nb)
        counts[b, 0] = _mark(col, order, lo, hi, tbin, nan_bin, nan_left, go_left)
        counts[b, 1] = 0
        for k in range(lo, hi):
            tmp[k] = order[k]


@cuda.jit(device=True)
def _put_rows(tmp, order, start, n, nb, n_left, go_left, counts, sh):
    """:func:`place_rows_blocks`' body (``sh``: ``(2, THREADS)`` int64 shared)."""
    ml, _ = _offsets(counts, nb, sh)
    b = cuda.grid(1)
    if b < nb:
        lo, hi = _block(b, start, n, nb)
        _place(tmp, lo, hi, go_left, order, start + ml, start + n_left + (lo - start) - ml)


@cuda.jit(device=True)
def _count_pairs(pi, pj, start, n, nb, go_left, counts, totals, shn):
    """:func:`count_sides_blocks`' body (``shn``: ``(2, THREADS)`` int64 shared)."""
    b = cuda.grid(1)
    nl = 0
    nr = 0
    if b < nb:
        lo, hi = _block(b, start, n, nb)
        nl, nr = _count(pi, pj, lo, hi, go_left)
        counts[b, 0] = nl
        counts[b, 1] = nr
    block_sums(shn, nl, nr, totals)


@cuda.jit(cache=True)
def place_rows_blocks(tmp, order, start, n, nb, n_left, go_left, counts):
    """Thread ``b``: put its block's rows (``tmp``: :func:`mark_rows_blocks`) back into ``order``, left
    ones after the earlier blocks' left rows, right ones after all ``n_left`` left rows and the earlier
    blocks' right rows (the offsets: :func:`_offsets`)."""
    sh = cuda.shared.array((2, THREADS), dtype=int64)
    _put_rows(tmp, order, start, n, nb, n_left, go_left, counts, sh)


@cuda.jit(cache=True)
def count_sides_blocks(pi, pj, start, n, nb, go_left, counts, totals):
    """Thread ``b``: ``counts[b] = (pairs with both rows left, with both rows right)`` in its block; the
    block's sums of those are added to ``totals`` (int64, zeroed before), one atomic each per CUDA block."""
    shn = cuda.shared.array((2, THREADS), dtype=int64)
    _count_pairs(pi, pj, start, n, nb, go_left, counts, totals, shn)


@cuda.jit(cache=True)
def place_rows_count_sides(rows, pairs, go_left):
    """A split's rows placed and its pairs counted in one launch (both read only the sides
    :func:`mark_rows_blocks` wrote): blocks ``(x, 0)`` run :func:`place_rows_blocks` on ``rows``
    (``partitions.RowPlace``), blocks ``(x, 1)`` :func:`count_sides_blocks` on ``pairs``
    (``partitions.PairCount``); ``x`` covers the larger of their block counts."""
    shn = cuda.shared.array((2, THREADS), dtype=int64)
    if cuda.blockIdx.y == 0:
        _put_rows(rows.tmp, rows.order, rows.start, rows.n, rows.nb, rows.n_left, go_left, rows.counts, shn)
    else:
        _count_pairs(pairs.pi, pairs.pj, pairs.start, pairs.n, pairs.nb, go_left, pairs.counts, pairs.totals, shn)


class PairPlace(NamedTuple):
    """Where a pair partition puts its pairs (``place_sides_blocks``' record): ``oi, oj, oc``, and ``rho``,
    each row's coupling sum over its node's pairs (``_histograms_kernels.NodeRows``), from which the
    split pairs' couplings are taken."""

    oi: Any
    oj: Any
    oc: Any
    rho: Any


@cuda.jit(cache=True)
def place_sides_blocks(pi, pj, pc, start, n, nb, go_left, counts, totals, out):
    """Thread ``b``: copy its block's pairs to ``(out.oi, out.oj, out.oc)`` (:class:`PairPlace`), stably,
    as [both left | both right | split] (``counts``, ``totals``: :func:`count_sides_blocks`; the
    offsets: :func:`_offsets`), and take each split pair's coupling out of both its rows' ``out.rho``:
    each row's then is its child's (float64 global adds of on-grid values: exact in any order)."""
    sh = cuda.shared.array((2, THREADS), dtype=int64)
    _put_sides(pi, pj, pc, start, n, nb, go_left, counts, totals, out, sh,
               (cuda.threadIdx.x, cuda.blockDim.x, cuda.blockIdx.x))


@cuda.jit(device=True)
def _put_sides(pi, pj, pc, start, n, nb, go_left, counts, totals, out, sh, pos):
    """:func:`place_sides_blocks`' body by thread ``pos = (t, nt, blk)`` (:func:`_offsets_at`)."""
    bl, br = _offsets_at(counts, nb, sh, pos)
    b = pos[2] * pos[1] + pos[0]
    if b >= nb:
        return
    tl = totals[0]
    tr = totals[1]
    lo, hi = _block(b, start, n, nb)
    _sides(pi, pj, pc, lo, hi, go_left, start + bl, start + tl + br, start + tl + tr + (lo - start - bl - br),
           out.oi, out.oj, out.oc)
    rho = out.rho
    for k in range(lo, hi):
        a = pi[k]
        c = pj[k]
        if go_left[a] != go_left[c]:
            cuda.atomic.add(rho, a, -pc[k])
            cuda.atomic.add(rho, c, -pc[k])


class PairSides(NamedTuple):
    """A pair partition's placing (``place_sides_blocks``' arguments but the sides and ``out``), as a
    record of :func:`place_sides_row_hist`."""

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
    :func:`place_sides_blocks` on ``sides`` (:class:`PairSides`) and ``out`` (:class:`PairPlace`), the
    block's threads as one row of ``blockDim.x * blockDim.y`` (a power of two), partition blocks
    ``x * that`` on. The scan's int64 scratch is the histogram's shared array seen as int64: one
    48,000-byte array, under the 48 KiB a block may declare."""
    sh = cuda.shared.array((SHARED_SLOTS, WORDS), dtype=uint32)
    if cuda.blockIdx.z == 0:
        _row_updates(sh, bins_rm, build.rows, build.n, build.g, build.h, build.steps, groups, members, slot_map,
                     build.out)
        return
    nt = cuda.blockDim.x * cuda.blockDim.y
    if cuda.blockIdx.y != 0 or cuda.blockIdx.x * nt >= sides.nb:  # the whole block returns (no barrier split)
        return
    t = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    _put_sides(sides.pi, sides.pj, sides.pc, sides.start, sides.n, sides.nb, go_left, sides.counts, sides.totals, out,
               sh.view(np.int64).T, (t, nt, cuda.blockIdx.x))


@cuda.jit(cache=True)
def mark_rows_level(table, bins, order, go_left, tmp, counts):
    """Every split of a breadth-first level marked in one launch: block ``(x, s)`` runs
    :func:`mark_rows_blocks`' threads ``x * blockDim.x ...`` on split ``s``'s row of ``table``
    (``LV_*`` columns; its feature's bins ``bins[feature]``, feature-major; its block counts at rows
    ``base:base+nb`` of ``counts``). The splits' rows are disjoint (a level's leaves), so one
    ``go_left`` and one ``tmp`` serve them all."""
    me = table[cuda.blockIdx.y]
    b = cuda.grid(1)
    nb = me[LV_NB]
    if b < nb:
        lo, hi = _block(b, me[LV_START], me[LV_N], nb)
        at = me[LV_BASE] + b
        counts[at, 0] = _mark(bins[me[LV_FEATURE]], order, lo, hi, me[LV_TBIN], me[LV_NAN_BIN], me[LV_NAN_LEFT] != 0,
                              go_left)
        counts[at, 1] = 0
        for k in range(lo, hi):
            tmp[k] = order[k]


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
    :func:`place_rows_count_sides` does one split's: blocks ``(x, s, 0)`` place split ``s``'s rows
    (``table`` row ``s``, ``LV_*``; ``tmp``, ``counts``: :func:`mark_rows_level`'s), blocks ``(x, s, 1)``
    count its pairs (``pairs``: :class:`PairSources`; block counts into ``pair_counts``, totals added
    to ``records[LV_RECORD]``'s ``PART_N_LEFT``, ``PART_N_RIGHT``, zeroed before). A block past its
    split's partition blocks returns whole (no barrier split)."""
    shn = cuda.shared.array((2, THREADS), dtype=int64)
    me = table[cuda.blockIdx.y]
    first = cuda.blockIdx.x * cuda.blockDim.x
    if cuda.blockIdx.z == 0:
        nb = me[LV_NB]
        if first >= nb:
            return
        base = me[LV_BASE]
        _put_rows(tmp, order, me[LV_START], me[LV_N], nb, me[LV_N_LEFT], go_left, counts[base:base + nb], shn)
        return
    nb = me[LV_PNB]
    if me[LV_PBUF] < 0 or first >= nb:
        return
    pi, pj = pairs.pi0, pairs.pj0
    if me[LV_PBUF] == 1:
        pi, pj = pairs.pi1, pairs.pj1
    base = me[LV_PBASE]
    _count_pairs(pi, pj, me[LV_PSTART], me[LV_PN], nb, go_left, pair_counts[base:base + nb],
                 records[me[LV_RECORD], PART_N_LEFT:PART_N_RIGHT + 1], shn)
