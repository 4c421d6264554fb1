"""numba.cuda kernels of the OLE grower's histograms in shared memory: the GPU twins of
:func:`customobj.ole.histogram.build_row_hist_fm` and :func:`customobj.ole.pairhist.build_pair_hist`.

**Layout.** Features are packed into groups (:func:`feature_groups`) whose slots fit one block's
shared memory (``SHARED_SLOTS`` slots x 3 channels x two uint32 words = 48,000 bytes, the default
limit of a block without opt-in; eight 255-bin features). The grid is ``(chunks, groups)``: block
``(b, g)`` keeps group ``g``'s histogram in shared memory and walks chunk ``b`` of the node's rows
(pairs). The block is 2-D (:func:`launch_shape`): lane ``x`` takes the group's features ``x, x +
blockDim.x, ...`` (its table entries read once), lane ``y`` the chunk's items ``y, y + blockDim.y,
...``; neighbouring lanes of a warp take neighbouring features of one item, so a warp reads a
contiguous run of the **row-major** bins (one row's group of features: a coalesced transaction) and
the item's index, gradient or coupling once for all its lanes (a broadcast). One iteration of the
inner (item) loop is one (item, feature) update. Each block merges its shared histogram into the
global one once, one atomic per non-zero slot and channel. A feature with more slots than fit a
block has its group to itself and adds straight into global memory.

**Arithmetic.** Values arrive on their grid (:mod:`.fixed_point`: the tree's gradients and
hessians, rounded by :func:`._reduce_kernels.grid_round`, and its couplings): each update adds the
integer ``q = x / step`` (computed as ``x * (1 / step)``, exact: the step is a power of two) to a
shared 64-bit count (XGBoost's ``GradientQuantiser``), and the merge adds ``q_sum * step`` (exact)
to the float64 histogram. sm_80 and sm_90 have no native 64-bit shared-memory add (``atom.shared.
add.u64`` compiles to a compare-and-swap loop, ``ATOMS.CAST.SPIN.64``), so a count is two uint32
words added with native 32-bit adds, the carry passed on (:func:`_add_units`, XGBoost's
``AtomicAdd64As32``). Integer additions modulo ``2**64`` are exact, so the histogram does not depend
on the order of the threads, the number of blocks or chunks, or the card: it is the CPU's bit for
bit (the CPU adds the same on-grid values in float64, exactly too). Indices are unsigned 32-bit
(numba adds no negative-index wraparound to them). ``benchmarks/sass.py`` counts the machine code
of an update (issue 42; docs/gpu-model.md).

**Traffic per update** (one feature of one row, or of one pair): a row update reads one bin byte
(coalesced) and does 3 native shared adds (g, h: a low word, and a high word on a carry; the
count: one word), the row's index, ``g`` and ``h`` (24 bytes) shared by the group's lanes; a pair
update reads two bin bytes and does 1 (``hi`` or ``nanp``; a carry's on a negative coupling), the
pair's two indices and coupling (16-24 bytes) shared the same way. ``R`` is a per-row quantity:
``R[slot]`` = the sum of ``rho[r]`` over the node's rows in ``slot``, ``rho[r]`` row ``r``'s coupling
sum over the node's pairs, so blocks of another grid plane add it from the node's rows (one
shared add per (row, feature), :func:`_rho_updates`), far fewer than its pairs; ``rho`` is made
for the root's pairs in the root's row-histogram launch (:func:`_rho_pairs`) and kept by the
pair partitions, which take the split pairs' couplings out (``_partitions_kernels``). Global
histogram traffic: ``slots x 3`` atomics per block, once.

A split's children: :func:`child_hists` builds the smaller child's row histogram and both children's
pair histograms in one launch (blocks of a third grid axis: left pairs, right pairs, rows, left
``R``, right ``R``), the pairs by the plan it makes from the partition's counts on the card (the
CPU's :func:`~customobj.ole.pairhist.pair_hist_plan`), so the host needs no count to launch it. The
pair channels follow :mod:`.pairhist` (``hi``, ``nanp``, ``R``).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import int64, uint32, uint64

from ..._cuda_runtime import cuda_module, device_function
from ._hist_layout import (CHUNK_UPDATES, GROUP_COLUMNS, MAX_CHUNKS, MEMBER_COLUMNS, SHARED_SLOTS, chunks_for,
                           feature_groups, launch_for, launch_shape)
from ..common import HIST_COUNT, HIST_G, HIST_H, PART_N_LEFT, PART_N_RIGHT, PART_PLAN, PH_HI, PH_NANP, PH_R
from ..pairhist import PAIRS_DIRECT, PAIRS_LEFT_SMALL, PAIRS_RIGHT_SMALL, pair_hist_plan

cuda = cuda_module()

_plan = device_function(pair_hist_plan)

__all__ = ["zero", "zero6", "row_hist_shared", "pair_hist_shared", "child_hists", "chosen_child_pairs", "feature_groups",
           "chunks_for", "launch_for", "launch_shape", "SHARED_SLOTS", "CHUNK_UPDATES", "MAX_CHUNKS", "GROUP_COLUMNS",
           "MEMBER_COLUMNS", "NodeRows", "RootPairs"]


class NodeRows(NamedTuple):
    """A node's rows for its pair histogram's ``R`` (a kernel record): ``rows[0:n]`` (the device order's
    part of the node) and ``rho``, each training row's coupling sum over its node's pairs (float64, on
    the couplings' grid: ``R[slot]`` is the sum of ``rho[r]`` over the rows ``r`` whose bin is ``slot``)."""

    rho: Any
    rows: Any
    n: int


class RootPairs(NamedTuple):
    """The tree's pairs ``start:start+n`` (``counted``: ``n = count[PART_N_LEFT]``, a count on the card,
    ``ole_fast``'s kept pairs) whose couplings the root's row histogram launch adds to ``rho`` (zeroed
    by the tree's first launch) at both rows (a kernel record)."""

    pi: Any
    pj: Any
    pc: Any
    start: int
    n: int
    count: Any
    counted: bool
    rho: Any


WORDS = 6
_LOW = np.uint64(0xFFFFFFFF)
_ZERO32 = np.uint32(0)
_32 = np.uint64(32)
_TINY = 2.0 ** -960
_TWO64 = 2.0 ** 64


@cuda.jit(cache=True)
def zero(flat):
    """``flat[:] = 0`` (a histogram before its blocks add into it)."""
    for i in range(cuda.grid(1), flat.shape[0], cuda.gridsize(1)):
        flat[i] = 0.0


@cuda.jit(cache=True)
def zero6(a, b, c, d, e, f):
    """``a[:] = ... = f[:] = 0`` (flat, one size): six histograms cleared in one launch, so two splits'
    histograms (each: the small child's rows and pairs, the cross pairs) cost one between them."""
    for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        a[i] = 0.0
        b[i] = 0.0
        c[i] = 0.0
        d[i] = 0.0
        e[i] = 0.0
        f[i] = 0.0


@cuda.jit(device=True)
def _block_work(sh, groups, grp, start, n):
    """Block ``(b, grp)``'s group (first member, width, local slots, in shared memory) and its chunk
    ``lo:hi`` of the items ``start:start+n``; its shared histogram cleared."""
    q0 = groups[grp, 0]
    nloc = groups[grp, 2]
    shared = groups[grp, 3] != 0
    if shared:
        nt = cuda.blockDim.x * cuda.blockDim.y
        for s in range(cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x, nloc * WORDS, nt):
            sh[s // WORDS, s % WORDS] = 0
        cuda.syncthreads()
    nb = cuda.gridDim.x
    b = cuda.blockIdx.x
    return q0, groups[grp, 1] - q0, nloc, shared, start + (n * b) // nb, start + (n * (b + 1)) // nb


@cuda.jit(device=True)
def _merge(sh, nloc, smap, base, s0, s1, s2, out):
    """Add the block's shared histogram to ``out`` once: channel ``c`` counts ``q * step_c``, ``q`` the
    64-bit integer of its two 32-bit words (two's complement: a negative sum is exact too)."""
    cuda.syncthreads()
    nt = cuda.blockDim.x * cuda.blockDim.y
    for s in range(cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x, nloc, nt):
        slot = smap[base + s]
        q = _word_pair(sh, s, 0)
        if q != 0:
            cuda.atomic.add(out, (slot, 0), float(q) * s0)
        q = _word_pair(sh, s, 1)
        if q != 0:
            cuda.atomic.add(out, (slot, 1), float(q) * s1)
        q = _word_pair(sh, s, 2)
        if q != 0:
            cuda.atomic.add(out, (slot, 2), float(q) * s2)


@cuda.jit(device=True)
def _word_pair(sh, s, ch):
    """Channel ``ch`` of shared slot ``s`` as the int64 its (low, high) uint32 words hold."""
    return int64((uint64(sh[s, 2 * ch + 1]) << _32) | uint64(sh[s, 2 * ch]))


@cuda.jit(device=True)
def _add_units(sh, slot, ch, q):
    """``q`` units added to channel ``ch`` of shared slot ``slot`` modulo ``2**64`` with native 32-bit
    shared adds (XGBoost's ``AtomicAdd64As32``). The low word's add returns the word ``old`` before
    it; the high word of ``q + old`` (mod ``2**64``) is ``q``'s high word plus that add's carry, and
    the high word gets it only when it is not 0 (most updates: a small positive ``q`` that does not
    carry, a small negative one that does). Adds modulo ``2**64`` commute: once every thread is done
    the two words hold the exact sum, in any order."""
    u = uint64(q)
    old = cuda.atomic.add(sh, (slot, 2 * ch), uint32(u & _LOW))
    up = uint32((u + uint64(old)) >> _32)
    if up != _ZERO32:
        cuda.atomic.add(sh, (slot, 2 * ch + 1), up)


@cuda.jit(device=True)
def _add_count(sh, slot, ch):
    """One more at channel ``ch`` of shared slot ``slot``: a count, one 32-bit word (a block adds far
    fewer than ``2**32``; the high word stays 0)."""
    cuda.atomic.add(sh, (slot, 2 * ch), uint32(1))


@cuda.jit(device=True)
def _inverse(step):
    """``(a, b)`` with ``x * a * b`` = ``x / step`` exactly for an on-grid ``x`` (``step`` a power of two):
    two multiplications instead of a float64 division per update; ``b = 2**64`` keeps ``a`` finite
    for a subnormal step. ``(0, 0)`` without a grid (non-finite input: the sums are 0)."""
    if step == 0.0:
        return 0.0, 0.0
    if step < _TINY:
        return 1.0 / (step * _TWO64), _TWO64
    return 1.0 / step, 1.0


@cuda.jit(device=True)
def _units(x, inv):
    """An on-grid value as its integer count of grid steps (``inv``: :func:`_inverse` of the step; 0
    without a grid, whatever ``x``: a non-finite one times 0 is NaN, which counts 0). The test is on
    the value, not on the block's step: a test on the step would make the compiler copy the loop."""
    v = x * inv[0] * inv[1]
    return int64(v) if v == v else int64(0)


@cuda.jit(device=True)
def _row_updates(sh, bins_rm, rows, n, g, h, steps, groups, members, slot_map, out):
    """Block ``(b, grp)``'s part of :func:`row_hist_shared`: chunk ``b`` of the rows ``rows[0:n]`` for
    feature group ``grp`` into its shared histogram, merged into ``out`` once. Lane ``x`` of the
    block takes the group's features ``x, x + blockDim.x, ...``, lane ``y`` the chunk's rows ``y, y +
    blockDim.y, ...``: a feature's table entries are read once, a row's index and values once per
    lane, and one iteration of the inner loop is one (row, feature) update."""
    grp = cuda.blockIdx.y
    q0, width, nloc, shared, lo, hi = _block_work(sh, groups, grp, 0, n)
    sg = steps[0]
    shh = steps[1]
    ig = _inverse(sg)
    ih = _inverse(shh)
    # unsigned 32-bit indices: numba adds no negative-index wraparound, and no 64-bit arithmetic
    hi32 = uint32(hi)
    dk = uint32(cuda.blockDim.y)
    m = q0 + cuda.threadIdx.x
    while m < q0 + width:
        f = uint32(members[m, 0])
        lx = uint32(members[m, 3])
        gx = uint32(members[m, 1])
        k = uint32(uint32(lo) + uint32(cuda.threadIdx.y))
        if shared:
            while k < hi32:
                r = uint32(rows[k])
                s = uint32(lx + uint32(bins_rm[r, f]))
                _add_units(sh, s, HIST_G, _units(g[r], ig))
                _add_units(sh, s, HIST_H, _units(h[r], ih))
                _add_count(sh, s, HIST_COUNT)
                k = uint32(k + dk)
        else:  # a feature wider than shared memory: straight into the float64 histogram
            while k < hi32:
                r = uint32(rows[k])
                s = uint32(gx + uint32(bins_rm[r, f]))
                cuda.atomic.add(out, (s, HIST_G), g[r])
                cuda.atomic.add(out, (s, HIST_H), h[r])
                cuda.atomic.add(out, (s, HIST_COUNT), 1.0)
                k = uint32(k + dk)
        m += cuda.blockDim.x
    if shared:
        _merge(sh, nloc, slot_map, groups[grp, 4], sg, shh, 1.0, out)


@cuda.jit(cache=True)
def row_hist_shared(bins_rm, rows, n, g, h, steps, groups, members, slot_map, out, pairs):
    """``out`` (zeroed) += [g, h, count] of the rows ``rows[0:n]``: block ``(b, grp)`` adds chunk ``b``
    of the rows for feature group ``grp``. ``g, h``: on their grids, steps ``steps[0], steps[1]``.
    Blocks ``(b, 0, 1)`` (a grid of depth 2: the root's launch) add the tree's pairs' couplings to
    their rows' ``rho`` (:class:`RootPairs` ``pairs``: :func:`_rho_pairs`)."""
    if cuda.blockIdx.z == 1:
        if cuda.blockIdx.y == 0:
            _rho_pairs(pairs)
        return
    sh = cuda.shared.array((SHARED_SLOTS, WORDS), dtype=uint32)
    _row_updates(sh, bins_rm, rows, n, g, h, steps, groups, members, slot_map, out)


@cuda.jit(device=True)
def _rho_pairs(p):
    """``rho[i] += c``, ``rho[j] += c`` for the pairs of :class:`RootPairs` ``p`` (each row's coupling
    sum over the tree's pairs: ``R`` of the root; a split's partition takes its split pairs' out of
    their rows', ``_partitions_kernels.place_sides_blocks``). Float64 global adds of on-grid values: exact
    in any order (native ``RED.ADD.F64``)."""
    n = p.count[PART_N_LEFT] if p.counted else p.n
    nt = cuda.gridDim.x * cuda.blockDim.x * cuda.blockDim.y
    t = (cuda.blockIdx.x * cuda.blockDim.y + cuda.threadIdx.y) * cuda.blockDim.x + cuda.threadIdx.x
    for k in range(p.start + t, p.start + n, nt):
        c = p.pc[k]
        cuda.atomic.add(p.rho, p.pi[k], c)
        cuda.atomic.add(p.rho, p.pj[k], c)


@cuda.jit(device=True)
def _pair_updates(sh, bins_rm, pi, pj, pc, start, n, step, groups, members, slot_map, out):
    """Block ``(b, grp)``'s part of :func:`pair_hist_shared`: chunk ``b`` of the pairs ``start:start+n``
    for feature group ``grp`` into its shared histogram (``hi`` and ``nanp``: ``R`` comes from the rows,
    :func:`_rho_updates`), merged into ``out`` once (lanes as :func:`_row_updates`': one inner
    iteration, one (pair, feature) update, one shared add and a carry's)."""
    grp = cuda.blockIdx.y
    q0, width, nloc, shared, lo, hi = _block_work(sh, groups, grp, start, n)
    inv = _inverse(step)
    hi32 = uint32(hi)
    dk = uint32(cuda.blockDim.y)
    m = q0 + cuda.threadIdx.x
    while m < q0 + width:
        f = uint32(members[m, 0])
        top = uint32(members[m, 2])  # the NaN slot's bin
        lx = uint32(members[m, 3])
        gx = uint32(members[m, 1])
        k = uint32(uint32(lo) + uint32(cuda.threadIdx.y))
        if shared:
            while k < hi32:
                x = uint32(bins_rm[uint32(pi[k]), f])
                y = uint32(bins_rm[uint32(pj[k]), f])
                # hi at the larger bin (ties: the first row's); nanp at the other row's bin when the
                # larger is the NaN slot (two NaN rows: hi at the NaN slot)
                big = max(x, y)
                nanp = big == top and x != y
                _add_units(sh, uint32(lx + (min(x, y) if nanp else big)), PH_NANP if nanp else PH_HI,
                           _units(pc[k], inv))
                k = uint32(k + dk)
        else:  # a feature wider than shared memory: straight into the float64 histogram
            while k < hi32:
                x = uint32(bins_rm[uint32(pi[k]), f])
                y = uint32(bins_rm[uint32(pj[k]), f])
                big = max(x, y)
                nanp = big == top and x != y
                cuda.atomic.add(out, (uint32(gx + (min(x, y) if nanp else big)), PH_NANP if nanp else PH_HI), pc[k])
                k = uint32(k + dk)
        m += cuda.blockDim.x
    if shared:
        _merge(sh, nloc, slot_map, groups[grp, 4], step, step, step, out)


@cuda.jit(device=True)
def _rho_updates(sh, bins_rm, node, step, groups, members, slot_map, out):
    """Block ``(b, grp)``'s ``R`` of a pair histogram from its node's rows (:class:`NodeRows` ``node``):
    ``rho[r]`` at row ``r``'s bin, chunk ``b`` of the rows for feature group ``grp`` (lanes as
    :func:`_row_updates`': one (row, feature) update, one shared add and a carry's), merged into
    ``out[:, PH_R]`` once. The pairs' ``R`` (``c`` at both rows' bins) summed by rows: the same integers."""
    grp = cuda.blockIdx.y
    q0, width, nloc, shared, lo, hi = _block_work(sh, groups, grp, 0, node.n)
    inv = _inverse(step)
    rows = node.rows
    rho = node.rho
    # The walk over (row, feature) repeats _row_updates' on purpose: benchmarks/sass.py counts each
    # update loop's instructions (row 55, R 37 on sm_90) and a shared helper would be inlined into both.
    hi32 = uint32(hi)
    dk = uint32(cuda.blockDim.y)
    m = q0 + cuda.threadIdx.x
    while m < q0 + width:
        f = uint32(members[m, 0])
        lx = uint32(members[m, 3])
        gx = uint32(members[m, 1])
        k = uint32(uint32(lo) + uint32(cuda.threadIdx.y))
        if shared:
            while k < hi32:
                r = uint32(rows[k])
                _add_units(sh, uint32(lx + uint32(bins_rm[r, f])), PH_R, _units(rho[r], inv))
                k = uint32(k + dk)
        else:
            while k < hi32:
                r = uint32(rows[k])
                cuda.atomic.add(out, (uint32(gx + uint32(bins_rm[r, f])), PH_R), rho[r])
                k = uint32(k + dk)
        m += cuda.blockDim.x
    if shared:
        _merge(sh, nloc, slot_map, groups[grp, 4], step, step, step, out)


@cuda.jit(cache=True)
def pair_hist_shared(bins_rm, pi, pj, pc, start, n, steps, groups, members, slot_map, out, node):
    """``out`` (zeroed) += [hi, nanp, R] of the pairs ``start:start+n``: block ``(b, grp, 0)`` adds chunk
    ``b`` of the pairs (``hi``, ``nanp``) for feature group ``grp``, block ``(b, grp, 1)`` chunk ``b`` of
    the node's rows (``R``, :class:`NodeRows` ``node``). ``pc``, ``rho``: on their grid, step ``steps[0]``."""
    sh = cuda.shared.array((SHARED_SLOTS, WORDS), dtype=uint32)
    if cuda.blockIdx.z == 1:
        _rho_updates(sh, bins_rm, node, steps[0], groups, members, slot_map, out)
    else:
        _pair_updates(sh, bins_rm, pi, pj, pc, start, n, steps[0], groups, members, slot_map, out)


@cuda.jit(cache=True)
def child_hists(bins_rm, groups, members, slot_map, plan, rows, left_rows, right_rows):
    """A split's children's pair histograms, and the row histogram of its smaller child, in one launch,
    from pair counts that never left the card. ``plan`` (``histograms.ChildPlan``) holds the pair
    partition's record (the children's pair counts ``n_l, n_r``; the parent's pairs ``plan.start +
    [0, n_l | n_r | split pairs]``); every block makes the CPU's choice
    (:func:`~customobj.ole.pairhist.pair_hist_plan`; block ``(0, 0, 0)`` writes it to
    ``record[PART_PLAN]``), and blocks ``(b, grp, 0)`` add ``hi``, ``nanp`` into ``plan.left``, ``(b, grp,
    1)`` into ``plan.right`` (both zeroed) as :func:`pair_hist_shared` does: each child that needs one
    its own pairs, or (the larger by subtraction) the smaller child's pairs and the split pairs into
    the larger's buffer, which ``_split_kernels.subtract_children`` then completes. Blocks ``(b, grp,
    2)`` do :func:`row_hist_shared`'s work on ``rows`` (``histograms.RowBuild``), blocks ``(b, grp, 3)``
    and ``(b, grp, 4)`` the left's and the right's ``R`` from their rows (:class:`NodeRows`
    ``left_rows``, ``right_rows``; ``n`` 0: none). The grid covers the parent's pairs (or the rows, if
    more); a block past its range, or for a child that needs nothing, returns at once."""
    sh = cuda.shared.array((SHARED_SLOTS, WORDS), dtype=uint32)
    z = cuda.blockIdx.z
    if z == 2:
        if rows.n > 0:
            _row_updates(sh, bins_rm, rows.rows, rows.n, rows.g, rows.h, rows.steps, groups, members, slot_map,
                         rows.out)
        return
    rec = plan.record
    nl = rec[PART_N_LEFT]
    nr = rec[PART_N_RIGHT]
    mode = _plan(nl, nr, plan.n, plan.rows_left, plan.rows_right, plan.rows_parent, plan.need_left,
                 plan.need_right)
    if z > 2:  # a child's R, when it gets a pair histogram; one call per output (see below)
        if z == 3 and left_rows.n > 0 and (plan.need_left or mode != PAIRS_DIRECT):
            _rho_updates(sh, bins_rm, left_rows, plan.steps[0], groups, members, slot_map, plan.left)
        elif z == 4 and right_rows.n > 0 and (plan.need_right or mode != PAIRS_DIRECT):
            _rho_updates(sh, bins_rm, right_rows, plan.steps[0], groups, members, slot_map, plan.right)
        return
    if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0 and cuda.blockIdx.y == 0 and z == 0:
        rec[PART_PLAN] = mode
    lo = plan.start + nl + nr  # the split pairs: the buffer of the larger child (by subtraction)
    n = plan.n - nl - nr
    if mode == PAIRS_DIRECT or mode == (PAIRS_LEFT_SMALL if z == 0 else PAIRS_RIGHT_SMALL):  # its own pairs
        lo = plan.start if z == 0 else plan.start + nl
        n = nl if z == 0 else nr
        if mode == PAIRS_DIRECT and not (plan.need_left if z == 0 else plan.need_right):
            n = 0
    # one call per output, not one call on a choice of two: the compiler then knows each is global
    # memory (a float64 atomic on a pointer of unknown space carries a shared-memory CAS fallback)
    if n > 0 and z == 0:
        _pair_updates(sh, bins_rm, plan.pi, plan.pj, plan.pc, lo, n, plan.steps[0], groups, members, slot_map,
                      plan.left)
    elif n > 0:
        _pair_updates(sh, bins_rm, plan.pi, plan.pj, plan.pc, lo, n, plan.steps[0], groups, members, slot_map,
                      plan.right)


@cuda.jit(cache=True)
def chosen_child_pairs(bins_rm, pairs, choice, out_a, out_b, rows_a, rows_b):
    """``ole_fast``: the pair histograms of one or two children of a split (``cuda.blockIdx.z % 2``:
    node 0 into ``out_a``, 1 into ``out_b``, both zeroed), each over its own features chosen on the card
    (``choice``, ``_choice_kernels.FeatureChoice``: node ``z``'s groups) and its own pairs, the
    left or right part (``pairs.side_a``, ``side_b``) of the parent's ``pairs.start + [n_l | n_r | split]``
    from the partition's counts in ``pairs.record``, which never left the card. Blocks ``(b, grp, z)``,
    ``z < 2``, work as :func:`pair_hist_shared`'s on the pairs (``hi``, ``nanp``), ``(b, grp, 2 + z)`` on
    node ``z``'s rows (``R``: :class:`NodeRows` ``rows_a``, ``rows_b``); the grid covers the parent's
    pairs and a bound on the groups: a block past its node's items or groups returns at once."""
    sh = cuda.shared.array((SHARED_SLOTS, WORDS), dtype=uint32)
    z = cuda.blockIdx.z
    if z == 2:  # one call per output (as in child_hists)
        if rows_a.n > 0:
            _rho_updates(sh, bins_rm, rows_a, pairs.steps[0], choice.groups[0], choice.members[0],
                         choice.slot_map[0], out_a)
        return
    if z == 3:
        if rows_b.n > 0:
            _rho_updates(sh, bins_rm, rows_b, pairs.steps[0], choice.groups[1], choice.members[1],
                         choice.slot_map[1], out_b)
        return
    nl = pairs.record[PART_N_LEFT]
    side = pairs.side_a if z == 0 else pairs.side_b  # -1: no node 1
    lo = pairs.start if side == 0 else pairs.start + nl
    n = nl if side == 0 else (pairs.record[PART_N_RIGHT] if side == 1 else 0)
    if n > 0 and z == 0:
        _pair_updates(sh, bins_rm, pairs.pi, pairs.pj, pairs.pc, lo, n, pairs.steps[0], choice.groups[z],
                      choice.members[z], choice.slot_map[z], out_a)
    elif n > 0:
        _pair_updates(sh, bins_rm, pairs.pi, pairs.pj, pairs.pc, lo, n, pairs.steps[0], choice.groups[z],
                      choice.members[z], choice.slot_map[z], out_b)
