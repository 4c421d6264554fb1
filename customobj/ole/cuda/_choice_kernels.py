"""numba.cuda kernel of ``criterion="ole_fast"``'s feature choice on the device: the GPU twin of
:func:`customobj.ole.backend.select_features` followed by :func:`._histograms_kernels.feature_groups`.

At each node ``ole_fast`` builds pair histograms only for the ``k`` features of largest WSE gain
(Xia, Zhai, Wang, section 3.1; :mod:`customobj.ole.grower`). On the host that choice needs the
node's gains read back (one blocking read per split). :func:`wse_choose` searches the WSE gains of
a split's two children as :func:`._search_kernels.search_nodes` searches splits, and its last
block makes the choice where the gains are (:func:`choose_top`), writing what the pair histograms
and the split search then read on the device: each node's feature mask and the chosen features'
shared-memory groups. One launch, as the gains alone took, and the only read left is the split.
A breadth-first level's searched children are chosen for in one launch of :func:`wse_choose_level`
(a table row per node: its pool histogram, its result row, the histogram it is completed by), each
choice into its result row (:func:`choose_top_at`), and their pair histograms over those choices in
one launch of :func:`chosen_level_pairs` (``_histograms_kernels.chosen_child_pairs``' blocks, a
group of four per split of the level).

**The choice** is the CPU's: feature ``f`` of the mask is kept when fewer than ``k`` features of the
mask come before it in the order (larger gain first, ties: lower index first, as the CPU's stable
sort), so the kept set does not depend on thread order. Each thread ranks its features against all
others: ``F^2`` comparisons per node (136 features: 18,496), work the card does in microseconds.

**The groups** are packed in feature order exactly as :func:`._histograms_kernels.feature_groups`
does (one thread: at most ``F`` features), then the slot map is filled with one thread per chosen
feature. Rows of the group table past the last group are zero: a histogram launched with more groups
than there are (the host knows only a bound) gives their blocks no feature, and they return at once.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from numba import int64, uint32

from ..._cuda_runtime import cuda_module
from ._histograms_kernels import GROUP_COLUMNS, SHARED_SLOTS, WORDS, NodeRows, _pair_updates, _rho_updates
from ._reduce_kernels import last_block
from ._split_kernels import node_bests, node_features
from ..common import PART_N_LEFT, PART_N_RIGHT, ChildSums

cuda = cuda_module()

__all__ = ["wse_choose", "wse_choose_level", "chosen_level_pairs", "choose_top", "choose_top_at", "FeatureChoice",
           "Completion", "LevelChoice", "LevelPairs", "LC_HIST", "LC_ROW", "LC_SMALL", "LC_SUMS", "LC_COLUMNS",
           "LP_RECORD", "LP_BUF", "LP_START", "LP_SIDE", "LP_ROW", "LP_OUT", "LP_ROWS", "LP_N", "LP_COLUMNS"]

#: Columns of :func:`wse_choose_level`'s table, a row per searched node of a breadth-first level
#: (float64: the indices are exact): its row histogram's index in the pool, its result row (where its
#: choice goes: a row of each table of :class:`FeatureChoice`), the pool index of the histogram its
#: own is completed by (``-= small``; -1: none, it is complete), then ``G, H, N`` (``C``: 0, WSE's).
LC_HIST, LC_ROW, LC_SMALL, LC_SUMS = 0, 1, 2, 3
LC_COLUMNS = LC_SUMS + 3

#: Columns of :func:`chosen_level_pairs`' table (int64), a row per split of a level whose children are
#: searched: its pair partition's row of the record ring, which of the tree's two pair buffers holds its
#: placed pairs, its parent's first pair, its first searched child's result row (the choice tables' row;
#: the second's: the next), then per searched child (``+ 0``, ``+ 1``) its side (0 left, 1 right; -1: no
#: second child), its pair histogram's pool index, its first row in the device order and its row count.
LP_RECORD, LP_BUF, LP_START, LP_ROW, LP_SIDE, LP_OUT, LP_ROWS, LP_N = 0, 1, 2, 3, 4, 6, 8, 10
LP_COLUMNS = 12


@cuda.jit(device=True)
def _before(go, o, g, f):
    """Whether feature ``o`` (gain ``go``) comes before ``f`` (gain ``g``): larger gain, then lower
    index; a NaN gain counts as the smallest (numpy's sort puts it last)."""
    if go != go:
        return g != g and o < f
    if g != g:
        return True
    return go > g or (go == g and o < f)


@cuda.jit(device=True)
def _set_group(groups, node, g, first, end, local, capacity, n_map):
    """Group ``g``: members ``first:end``, ``local`` slots (in shared memory when they fit ``capacity``),
    its slot map starting where the maps of the groups before it end (``n_map - local``)."""
    groups[node, g, 0] = first
    groups[node, g, 1] = end
    groups[node, g, 2] = local
    groups[node, g, 3] = int64(local <= capacity)
    groups[node, g, 4] = n_map - local


@cuda.jit(device=True)
def _pack(keep, node, offsets, n_bins, capacity, groups, members, counts):
    """:func:`._histograms_kernels.feature_groups` of the kept features of ``node`` (one thread); the
    unused group rows zeroed, ``counts[0:2]`` = (members, groups)."""
    first = 0
    local = 0
    q = 0
    ng = 0
    n_map = 0
    for f in range(keep.shape[1]):
        if not keep[node, f]:
            continue
        width = n_bins[f] + 1
        if q > first and local + width > capacity:  # close the group before this feature
            _set_group(groups, node, ng, first, q, local, capacity, n_map)
            ng += 1
            first = q
            local = 0
        members[node, q, 0] = f
        members[node, q, 1] = offsets[f]
        members[node, q, 2] = n_bins[f]
        members[node, q, 3] = local
        n_map += width
        local += width
        q += 1
    if q > 0:
        _set_group(groups, node, ng, first, q, local, capacity, n_map)
        ng += 1
    for g in range(ng, groups.shape[1]):
        for c in range(GROUP_COLUMNS):
            groups[node, g, c] = 0
    counts[0] = q
    counts[1] = ng


class Completion(NamedTuple):
    """What :func:`wse_choose` does beside the choice: ``big -= small`` of node ``node``'s row histogram
    ``big`` (-1: none), and each node ``b``'s chosen features copied to ``masks[row + b]`` (``row`` -1:
    none), where a batch's one search (``_search_kernels.search_batch``) finds them after later
    choices have overwritten ``choice.keep``."""

    node: int
    big: Any
    small: Any
    row: int
    masks: Any


class FeatureChoice(NamedTuple):
    """Where :func:`wse_choose` reads the fit's feature mask and writes each node's choice: ``mask``
    (features), ``keep`` (2, features): the chosen ones, ``groups`` (2, features, GROUP_COLUMNS),
    ``members`` (2, features, MEMBER_COLUMNS), ``slot_map`` (2, slots): their shared-memory groups."""

    mask: Any
    keep: Any
    groups: Any
    members: Any
    slot_map: Any


class LevelChoice(NamedTuple):
    """:func:`wse_choose_level`'s nodes: ``hists`` the pool's histograms ``(n, slots, 3)``, ``table`` a
    row per node (``LC_*`` columns)."""

    hists: Any
    table: Any


class LevelPairs(NamedTuple):
    """:func:`chosen_level_pairs`' level: ``table`` a row per split (``LP_*`` columns), ``records`` the
    pair partitions' ring (their counts, on the card), the tree's two pair buffers (``pi0, pj0, pc0``,
    ``pi1, pj1, pc1``; couplings on the grid of step ``steps[0]``), ``hists`` the pool's histograms,
    ``order`` the device row order and ``rho`` each row's coupling sum (the pair histograms' ``R``)."""

    table: Any
    records: Any
    pi0: Any
    pj0: Any
    pc0: Any
    pi1: Any
    pj1: Any
    pc1: Any
    hists: Any
    order: Any
    rho: Any
    steps: Any


@cuda.jit(device=True)
def choose_top(gains, node, k, offsets, n_bins, capacity, choice, counts):
    """By every thread of one block: ``choice.keep[node, f]`` for the ``k`` features of ``choice.mask``
    of largest ``gains[node]`` (ties: the lower index), and their groups (:func:`_pack`) and slot map."""
    choose_top_at(gains, node, node, k, offsets, n_bins, capacity, choice, counts)


@cuda.jit(device=True)
def choose_top_at(gains, node, at, k, offsets, n_bins, capacity, choice, counts):
    """:func:`choose_top` from ``gains[node]`` into row ``at`` of ``choice``'s tables (a level's nodes:
    each one's result row, :func:`wse_choose_level`)."""
    mask = choice.mask
    nf = mask.shape[0]
    for f in range(cuda.threadIdx.x, nf, cuda.blockDim.x):
        kept = False
        if mask[f]:
            g = gains[node, f]
            rank = 0
            for o in range(nf):
                if mask[o] and _before(gains[node, o], o, g, f):
                    rank += 1
            kept = rank < k
        choice.keep[at, f] = kept
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        _pack(choice.keep, at, offsets, n_bins, capacity, choice.groups, choice.members, counts)
    cuda.syncthreads()
    groups, members = choice.groups, choice.members
    for m in range(cuda.threadIdx.x, counts[0], cuda.blockDim.x):
        grp = 0
        while grp + 1 < counts[1] and groups[at, grp + 1, 0] <= m:  # the group holding member m
            grp += 1
        base = groups[at, grp, 4] + members[at, m, 3]
        first = members[at, m, 1]
        for s in range(members[at, m, 2] + 1):
            choice.slot_map[at, base + s] = first + s
    cuda.syncthreads()


@cuda.jit(device=True)
def _subtract_features(bins, big, small):
    """``big -= small`` over the slots (bins and NaN slot, every channel) of the features this block
    searches (``node_bests``' ``x, x + gridDim.x, ...``), its threads over each feature's slots; then a
    barrier: the block's search reads them next."""
    for f in range(cuda.blockIdx.x, bins.n_bins.shape[0], cuda.gridDim.x):
        lo = bins.offsets[f]
        for s in range(lo + cuda.threadIdx.x, lo + bins.n_bins[f] + 1, cuda.blockDim.x):
            for c in range(big.shape[1]):
                big[s, c] -= small[s, c]
    cuda.syncthreads()


@cuda.jit(cache=True)
def wse_choose(h, bins, node_a, node_b, rules, sums, on_device, out, choice, k, capacity, sub):
    """Every feature's best WSE split of one or two nodes (:func:`._split_kernels.node_bests`,
    blocks ``(features, nodes)``, gains into ``out.gains``), then, by the last block to finish (a
    ticket, as :func:`._search_kernels.search_nodes`), each node's top ``k`` features and their
    groups into ``choice`` (:func:`choose_top`). ``out.done``: the ticket counter, 0 before and after.

    With ``sub.node`` 0 or 1 (:class:`Completion`), that node's row histogram is first completed
    here: ``sub.big -= sub.small`` (``big`` is the node's: a split's larger child, its parent's
    histogram less the smaller child's), each feature's slots by the block that searches them
    next, so no launch of its own (-1: none). With ``sub.row >= 0`` node ``b``'s choice is also
    copied to ``sub.masks[sub.row + b]``: a breadth-first level's nodes are searched in one launch
    after every split's choice (:class:`Completion`)."""
    counts = cuda.shared.array(2, dtype=int64)
    last = cuda.shared.array(1, dtype=int64)
    if cuda.blockIdx.y == sub.node:  # the whole block: the barrier in it is the block's
        _subtract_features(bins, sub.big, sub.small)  # every feature, masked or not: its children subtract from it
    node_bests(h, False, bins, node_a, node_b, rules, sums, on_device, out.per, out.gains)
    if not last_block(out.done, last):
        return
    for b in range(cuda.gridDim.y):
        choose_top(out.gains, b, k, bins.offsets, bins.n_bins, capacity, choice, counts)
        if sub.row >= 0:  # kept for the batch's search (choose_top ends with a barrier: keep is written)
            for f in range(cuda.threadIdx.x, choice.mask.shape[0], cuda.blockDim.x):
                sub.masks[sub.row + b, f] = choice.keep[b, f]


@cuda.jit(cache=True)
def wse_choose_level(nodes, bins, rules, per, gains, done, choice, k, capacity):
    """:func:`wse_choose` for every searched node of a breadth-first level in one launch (block ``(x, b)``:
    node ``b``, a row of ``nodes.table``, :class:`LevelChoice`). The block first completes the features
    it searches (``x, x + gridDim.x, ...``) of its node's histogram when the node's row names one to
    subtract (``LC_SMALL``: the larger child of a split, ``parent - smaller``, held from the split's
    turn), then searches their WSE gains (:func:`._split_kernels.node_features` over the fit's
    ``mask``) into ``gains[b]`` (``per[b]``: their records); the last block (a ticket, ``done``: 0 before
    and after) chooses each node's top ``k`` and their groups into row ``LC_ROW`` of ``choice``'s tables
    (:func:`choose_top_at`; ``choice.keep`` is the mask table ``search_batch`` reads by result row)."""
    counts = cuda.shared.array(2, dtype=int64)
    last = cuda.shared.array(1, dtype=int64)
    b = cuda.blockIdx.y
    me = nodes.table[b]
    hist = nodes.hists[int64(me[LC_HIST])]
    small = int64(me[LC_SMALL])
    if small >= 0:  # the whole block: the barrier in it is the block's
        _subtract_features(bins, hist, nodes.hists[small])
    node = ChildSums(me[LC_SUMS], me[LC_SUMS + 1], me[LC_SUMS + 2], 0.0)
    node_features(hist, hist, False, choice.mask, bins, node, rules, per[b], gains[b])  # no pairs: ph unread
    if not last_block(done, last):
        return
    for n in range(cuda.gridDim.y):
        choose_top_at(gains, n, int64(nodes.table[n, LC_ROW]), k, bins.offsets, bins.n_bins, capacity, choice, counts)


@cuda.jit(cache=True)
def chosen_level_pairs(bins_rm, lv, choice):
    """``ole_fast``: the pair histograms of every searched child of a breadth-first level's splits in one
    launch (:class:`LevelPairs`), each over its own features chosen on the card (its result row of
    ``choice``'s tables, :func:`wse_choose_level`'s), into its zeroed pool histogram: blocks ``(b, grp,
    4 s + z)`` do ``_histograms_kernels.chosen_child_pairs``' block ``(b, grp, z)`` for split ``s`` (a
    table row): ``z < 2`` its child ``z``'s pairs (``hi``, ``nanp``; its side of the parent's ``start + [n_l
    | n_r | split]`` from the partition's counts in its record), ``z >= 2`` child ``z - 2``'s rows (``R``).
    The grid covers the level's largest parent pairs and a bound on the groups: a block past its node's
    items or groups, or for a split's absent second child, returns at once."""
    sh = cuda.shared.array((SHARED_SLOTS, WORDS), dtype=uint32)
    z = cuda.blockIdx.z
    me = lv.table[z // 4]
    part = z % 4
    c = part % 2  # the split's searched child
    row = me[LP_ROW] + c
    if me[LP_SIDE + c] < 0:
        return
    out = lv.hists[me[LP_OUT + c]]
    if part >= 2:
        n = me[LP_N + c]
        if n > 0:
            start = me[LP_ROWS + c]
            _rho_updates(sh, bins_rm, NodeRows(lv.rho, lv.order[start:start + n], n), lv.steps[0], choice.groups[row],
                         choice.members[row], choice.slot_map[row], out)
        return
    rec = lv.records[me[LP_RECORD]]
    nl = rec[PART_N_LEFT]
    side = me[LP_SIDE + c]
    lo = me[LP_START] if side == 0 else me[LP_START] + nl
    n = nl if side == 0 else rec[PART_N_RIGHT]
    if n > 0 and me[LP_BUF] == 0:  # one call per buffer: each a plain global array
        _pair_updates(sh, bins_rm, lv.pi0, lv.pj0, lv.pc0, lo, n, lv.steps[0], choice.groups[row],
                      choice.members[row], choice.slot_map[row], out)
    elif n > 0:
        _pair_updates(sh, bins_rm, lv.pi1, lv.pj1, lv.pc1, lo, n, lv.steps[0], choice.groups[row],
                      choice.members[row], choice.slot_map[row], out)
