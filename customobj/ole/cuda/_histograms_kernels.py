"""numba.cuda kernels of the OLE grower's histograms in shared memory: the GPU twins of
:func:`customobj.ole.histogram.build_row_hist_fm` and :func:`customobj.ole.pairhist.build_pair_hist`.

**Layout.** Features are packed into groups (:func:`feature_groups`) whose slots fit one block's
shared memory (``SHARED_SLOTS`` slots x 3 int64 channels = 48,000 bytes, the default limit of a
block without opt-in; eight 255-bin features). The grid is ``(chunks, groups)``: block ``(b, g)``
keeps group ``g``'s histogram in shared memory and walks chunk ``b`` of the node's rows (pairs);
its ``THREADS`` threads stride over the chunk's (item, feature) updates, neighbouring threads
taking neighbouring features of one item, so a warp reads a contiguous run of the **row-major**
bins (one row's group of features: a coalesced transaction) and the item's index, gradient or
coupling once for all its lanes (a broadcast). Each block merges its shared histogram into the
global one once, one atomic per non-zero slot and channel. A feature with more slots than fit a
block has its group to itself and adds straight into global memory.

**Arithmetic.** Values arrive on their grid (:mod:`.fixed_point`: the tree's gradients and
hessians, rounded by :func:`._reduce_kernels.grid_round`, and its couplings): each update
adds the integer ``q = x / step`` to an int64 shared slot with ``atom.shared.add.u64`` (XGBoost's
``GradientQuantiser``), and the merge adds ``q_sum * step`` (exact) to the float64 histogram. Integer
additions are exact, so the histogram does not depend on the order of the threads, the number of
blocks or chunks, or the card: it is the CPU's bit for bit (the CPU adds the same on-grid values in
float64, exactly too).

**Traffic per update** (one feature of one row, or of one pair): a row update reads one bin byte
(coalesced) and does 3 shared int64 atomics (g, h, count), the row's index, ``g`` and ``h`` (24 bytes)
shared by the group's lanes; a pair update reads two bin bytes and does 3 shared atomics (``R`` at
both rows' bins, then ``hi`` or ``nanp``), the pair's two indices and coupling (16-24 bytes) shared
the same way. Global histogram traffic: ``slots x 3`` atomics per block, once.

A split's children: :func:`child_hists` builds the smaller child's row histogram and both children's
pair histograms in one launch (blocks of a third grid axis: left pairs, right pairs, rows), the
pairs by the plan it makes from the partition's counts on the card (the CPU's
:func:`~customobj.ole.pairhist.pair_hist_plan`), so the host needs no count to launch it.

The pair channels follow :mod:`.pairhist`: ``hi`` at the larger bin (ties: the first row's),
``nanp`` at the non-NaN row's bin when the other row's bin is the NaN slot, ``R`` at both rows' bins.
"""
from __future__ import annotations

import numpy as np
from numba import int64

from ..._cuda_runtime import cuda_module, device_function
from ._launch import pow2_threads
from ..common import HIST_COUNT, HIST_G, HIST_H, PART_N_LEFT, PART_N_RIGHT, PART_PLAN, PH_HI, PH_NANP, PH_R
from ..pairhist import PAIRS_DIRECT, PAIRS_LEFT_SMALL, PAIRS_RIGHT_SMALL, pair_hist_plan

cuda = cuda_module()

_plan = device_function(pair_hist_plan)

__all__ = ["zero", "zero6", "row_hist_shared", "pair_hist_shared", "child_hists", "chosen_child_pairs", "feature_groups", "chunks_for",
           "launch_for", "launch_shape", "SHARED_SLOTS",
           "CHUNK_UPDATES", "MAX_CHUNKS", "GROUP_COLUMNS", "MEMBER_COLUMNS"]

#: Slots of one block's shared histogram: 3 int64 channels each, 48,000 bytes (the default limit).
SHARED_SLOTS = 2000
#: (item, feature) updates per block of a histogram (its chunk), and most chunks: fewer blocks
#: merge fewer shared histograms; the result does not depend on either.
CHUNK_UPDATES = 65536
MAX_CHUNKS = 1024
#: ``groups[g]`` = (first member, end member, local slots, in shared memory, first entry of ``slot_map``)
GROUP_COLUMNS = 5
#: ``members[m]`` = (feature, its first global slot, its NaN bin, its first local slot)
MEMBER_COLUMNS = 4


def feature_groups(offsets: np.ndarray, n_bins: np.ndarray, feats: np.ndarray,
                   capacity: int = SHARED_SLOTS) -> tuple:
    """``(groups, members, slot_map)`` (int64) packing ``feats`` (in order) into groups of at most
    ``capacity`` slots; ``slot_map[groups[g, 4] + s]`` is local slot ``s``'s global slot.

    >>> g, m, smap = feature_groups(np.array([0, 3, 9, 12]), np.array([2, 5, 2]), np.arange(3), capacity=9)
    >>> g.tolist(), m[:, 3].tolist(), smap.tolist()
    ([[0, 2, 9, 1, 0], [2, 3, 3, 1, 9]], [0, 3, 0], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    """
    feats = np.asarray(feats, dtype=np.int64)
    members = np.zeros((feats.size, MEMBER_COLUMNS), dtype=np.int64)
    groups: list = []
    smap: list = []
    first, local = 0, 0
    for q, f in enumerate(feats):
        width = int(n_bins[f]) + 1
        if q > first and local + width > capacity:  # close the group before this feature
            groups.append((first, q, local, 1, len(smap) - local))
            first, local = q, 0
        members[q] = (f, offsets[f], n_bins[f], local)
        smap.extend(range(int(offsets[f]), int(offsets[f]) + width))
        local += width
    if feats.size:
        groups.append((first, feats.size, local, int(local <= capacity), len(smap) - local))
    # a lone feature wider than the capacity closed above is flagged too
    g = np.array(groups, dtype=np.int64).reshape(-1, GROUP_COLUMNS)
    g[:, 3] = g[:, 2] <= capacity
    return g, members, np.array(smap, dtype=np.int64)


def launch_for(n_items: int, groups: np.ndarray) -> tuple:
    """``((chunks, groups), threads)`` of a histogram over ``n_items`` rows or pairs."""
    return launch_shape(n_items, groups.shape[0], int((groups[:, 1] - groups[:, 0]).max()))


def launch_shape(n_items: int, n_groups: int, width: int) -> tuple:
    """:func:`launch_for` from the number of groups and the most features of one (``ole_fast``'s
    groups made on the device: bounds, the blocks of absent groups return at once)."""
    chunks = _chunks(n_items, width)
    return (chunks, max(int(n_groups), 1)), pow2_threads(-(-int(n_items) * int(width) // chunks))


def chunks_for(n_items: int, groups: np.ndarray) -> int:
    """Chunks (blocks per group) of a histogram over ``n_items`` rows or pairs: about
    ``CHUNK_UPDATES`` updates each, at least 1, at most ``MAX_CHUNKS``."""
    return _chunks(n_items, int((groups[:, 1] - groups[:, 0]).max()) if groups.shape[0] else 1)


def _chunks(n_items: int, width: int) -> int:
    return int(max(1, min(MAX_CHUNKS, -(-int(n_items) * int(width) // CHUNK_UPDATES))))


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
        for s in range(cuda.threadIdx.x, nloc, cuda.blockDim.x):
            sh[s, 0] = 0
            sh[s, 1] = 0
            sh[s, 2] = 0
        cuda.syncthreads()
    nb = cuda.gridDim.x
    b = cuda.blockIdx.x
    return q0, groups[grp, 1] - q0, nloc, shared, start + (n * b) // nb, start + (n * (b + 1)) // nb


@cuda.jit(device=True)
def _merge(sh, nloc, smap, base, s0, s1, s2, out):
    """Add the block's shared histogram to ``out`` once: channel ``c`` counts ``q * step_c``."""
    cuda.syncthreads()
    for s in range(cuda.threadIdx.x, nloc, cuda.blockDim.x):
        slot = smap[base + s]
        if sh[s, 0] != 0:
            cuda.atomic.add(out, (slot, 0), float(sh[s, 0]) * s0)
        if sh[s, 1] != 0:
            cuda.atomic.add(out, (slot, 1), float(sh[s, 1]) * s1)
        if sh[s, 2] != 0:
            cuda.atomic.add(out, (slot, 2), float(sh[s, 2]) * s2)


@cuda.jit(device=True)
def _add(sh, out, shared, local, glob, ch, q, step):
    """One update: ``q`` units at a slot, in shared memory (int64) or, for a wide feature, global (float64)."""
    if shared:
        cuda.atomic.add(sh, (local, ch), q)
    else:
        cuda.atomic.add(out, (glob, ch), float(q) * step)


@cuda.jit(device=True)
def _units(x, step):
    """An on-grid value as its integer count of grid steps (0 without a grid: non-finite input)."""
    if step == 0.0:
        return int64(0)
    return int64(x / step)


@cuda.jit(device=True)
def _row_updates(sh, bins_rm, rows, n, g, h, steps, groups, members, slot_map, out):
    """Block ``(b, grp)``'s part of :func:`row_hist_shared`: chunk ``b`` of the rows ``rows[0:n]`` for
    feature group ``grp`` into its shared histogram, merged into ``out`` once."""
    grp = cuda.blockIdx.y
    q0, width, nloc, shared, lo, hi = _block_work(sh, groups, grp, 0, n)
    sg = steps[0]
    shh = steps[1]
    for t in range(cuda.threadIdx.x, (hi - lo) * width, cuda.blockDim.x):
        k = t // width
        m = q0 + t - k * width
        r = rows[lo + k]
        x = int64(bins_rm[r, members[m, 0]])
        loc = members[m, 3] + x
        glob = members[m, 1] + x
        _add(sh, out, shared, loc, glob, HIST_G, _units(g[r], sg), sg)
        _add(sh, out, shared, loc, glob, HIST_H, _units(h[r], shh), shh)
        _add(sh, out, shared, loc, glob, HIST_COUNT, int64(1), 1.0)
    if shared:
        _merge(sh, nloc, slot_map, groups[grp, 4], sg, shh, 1.0, out)


@cuda.jit(cache=True)
def row_hist_shared(bins_rm, rows, n, g, h, steps, groups, members, slot_map, out):
    """``out`` (zeroed) += [g, h, count] of the rows ``rows[0:n]``: block ``(b, grp)`` adds chunk ``b``
    of the rows for feature group ``grp``. ``g, h``: on their grids, steps ``steps[0], steps[1]``."""
    sh = cuda.shared.array((SHARED_SLOTS, 3), dtype=int64)
    _row_updates(sh, bins_rm, rows, n, g, h, steps, groups, members, slot_map, out)


@cuda.jit(device=True)
def _pair_updates(sh, bins_rm, pi, pj, pc, start, n, step, groups, members, slot_map, out):
    """Block ``(b, grp)``'s part of :func:`pair_hist_shared`: chunk ``b`` of the pairs ``start:start+n``
    for feature group ``grp`` into its shared histogram, merged into ``out`` once."""
    grp = cuda.blockIdx.y
    q0, width, nloc, shared, lo, hi = _block_work(sh, groups, grp, start, n)
    for t in range(cuda.threadIdx.x, (hi - lo) * width, cuda.blockDim.x):
        k = t // width
        m = q0 + t - k * width
        p = lo + k
        f = members[m, 0]
        top = members[m, 2]  # the NaN slot's bin
        x = int64(bins_rm[pi[p], f])
        y = int64(bins_rm[pj[p], f])
        q = _units(pc[p], step)
        lx = members[m, 3]
        gx = members[m, 1]
        _add(sh, out, shared, lx + x, gx + x, PH_R, q, step)
        _add(sh, out, shared, lx + y, gx + y, PH_R, q, step)
        if x < y:
            if y == top:  # the larger row is NaN: nanp at the other row's bin
                _add(sh, out, shared, lx + x, gx + x, PH_NANP, q, step)
            else:
                _add(sh, out, shared, lx + y, gx + y, PH_HI, q, step)
        elif y < x and x == top:
            _add(sh, out, shared, lx + y, gx + y, PH_NANP, q, step)
        else:  # the first row holds the larger (or equal) bin; two NaN rows land on the NaN slot
            _add(sh, out, shared, lx + x, gx + x, PH_HI, q, step)
    if shared:
        _merge(sh, nloc, slot_map, groups[grp, 4], step, step, step, out)


@cuda.jit(cache=True)
def pair_hist_shared(bins_rm, pi, pj, pc, start, n, steps, groups, members, slot_map, out):
    """``out`` (zeroed) += [hi, nanp, R] of the pairs ``start:start+n``: block ``(b, grp)`` adds chunk
    ``b`` of the pairs for feature group ``grp``. ``pc``: on its grid, step ``steps[0]``."""
    sh = cuda.shared.array((SHARED_SLOTS, 3), dtype=int64)
    _pair_updates(sh, bins_rm, pi, pj, pc, start, n, steps[0], groups, members, slot_map, out)


@cuda.jit(cache=True)
def child_hists(bins_rm, groups, members, slot_map, plan, rows):
    """A split's children's pair histograms, and the row histogram of its smaller child, in one launch,
    from pair counts that never left the card. ``plan`` (``histograms.ChildPlan``) holds the pair
    partition's record (the children's pair counts ``n_l, n_r``; the parent's pairs ``plan.start +
    [0, n_l | n_r | split pairs]``); every block makes the CPU's choice
    (:func:`~customobj.ole.pairhist.pair_hist_plan`; block ``(0, 0, 0)`` writes it to
    ``record[PART_PLAN]``), and blocks ``(b, grp, 0)`` add into ``plan.left``, ``(b, grp, 1)`` into
    ``plan.right`` (both zeroed) as :func:`pair_hist_shared` does: each child that needs one its own
    pairs, or (the larger by subtraction) the smaller child's pairs and the split pairs into the
    larger's buffer, which ``_split_kernels.subtract_children`` then completes. Blocks ``(b, grp,
    2)`` (a grid of depth 3) do :func:`row_hist_shared`'s work on ``rows`` (``histograms.RowBuild``).
    The grid covers the parent's pairs (or the rows, if more); a block past its range, or for a child
    that needs nothing, returns at once."""
    sh = cuda.shared.array((SHARED_SLOTS, 3), dtype=int64)
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
    if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0 and cuda.blockIdx.y == 0 and z == 0:
        rec[PART_PLAN] = mode
    lo = plan.start + nl + nr  # the split pairs: the buffer of the larger child (by subtraction)
    n = plan.n - nl - nr
    if mode == PAIRS_DIRECT or mode == (PAIRS_LEFT_SMALL if z == 0 else PAIRS_RIGHT_SMALL):  # its own pairs
        lo = plan.start if z == 0 else plan.start + nl
        n = nl if z == 0 else nr
        if mode == PAIRS_DIRECT and not (plan.need_left if z == 0 else plan.need_right):
            n = 0
    if n > 0:
        _pair_updates(sh, bins_rm, plan.pi, plan.pj, plan.pc, lo, n, plan.steps[0], groups, members, slot_map,
                      plan.left if z == 0 else plan.right)


@cuda.jit(cache=True)
def chosen_child_pairs(bins_rm, pairs, choice, out_a, out_b):
    """``ole_fast``: the pair histograms of one or two children of a split (``cuda.blockIdx.z``: node 0
    into ``out_a``, 1 into ``out_b``, both zeroed), each over its own features chosen on the card
    (``choice``, ``_choice_kernels.FeatureChoice``: node ``z``'s groups) and its own pairs, the
    left or right part (``pairs.side_a``, ``side_b``) of the parent's ``pairs.start + [n_l | n_r | split]``
    from the partition's counts in ``pairs.record``, which never left the card. Blocks ``(b, grp, z)``
    work as :func:`pair_hist_shared`'s; the grid covers the parent's pairs and a bound on the groups: a
    block past its node's pairs or groups returns at once."""
    sh = cuda.shared.array((SHARED_SLOTS, 3), dtype=int64)
    z = cuda.blockIdx.z
    nl = pairs.record[PART_N_LEFT]
    side = pairs.side_a if z == 0 else pairs.side_b
    lo = pairs.start if side == 0 else pairs.start + nl
    n = nl if side == 0 else pairs.record[PART_N_RIGHT]
    if n > 0:
        _pair_updates(sh, bins_rm, pairs.pi, pairs.pj, pairs.pc, lo, n, pairs.steps[0], choice.groups[z],
                      choice.members[z], choice.slot_map[z], out_a if z == 0 else out_b)

