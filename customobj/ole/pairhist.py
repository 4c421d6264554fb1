"""Pair-coupling histograms for the exact OLE node hessian ``H - 2C``.

Xia, Zhai, Wang, "Analysis of Regression Tree Fitting Algorithms in Learning to Rank", section 3.1
(the objective loss based error, OLE).

For a feature with value bins ``0..nb-1`` and NaN slot ``nb``, the in-node pairs ``(i, j)`` with
coupling ``c`` and bins ``bi, bj`` give three per-slot channels (``ph[slot, k]``, named in
:mod:`.common`):

- ``k = PH_HI``: pairs whose larger bin is ``b`` (both rows go left once the threshold reaches
  ``b``); pairs with two NaN rows land on the NaN slot;
- ``k = PH_NANP``: pairs with one NaN row and the other row in ``b`` (they share a child only
  when the NaN row follows the other row's side);
- ``k = PH_R``: ``c`` at the bins of both rows, i.e. the histogram of the rows' in-node
  coupling sums; the pairs whose smaller bin is ``b`` are then ``lo = R - hi - nanp``.

All three are sums over pairs, so the histogram of a child is ``parent - sibling - split pairs``.

Why it is fast (the pairs x features work dominates OLE): rather than scattering every pair into
every feature's histogram, a chunk of pairs touching at most ``_CHUNK_ROWS`` rows first adds each
pair's ``c`` to a dense per-row, per-feature accumulator ``A[row, f]`` of the row holding the
pair's larger bin (``c * [bi < bj]`` to ``j``, the rest to ``i``: a branch-free loop over the
features that vectorises), then each touched row scatters its accumulated sums into the histogram
once. Pairs come query by query, so a chunk touches few rows and each row's scatter serves all of
its pairs. A row's bins are copied into a contiguous per-chunk tile when it enters the chunk, so
the bins can stay feature-major (no row-major copy of the bin matrix): rows of a query are
adjacent, so those copies read a few cache lines per feature per chunk. Work is cut into blocks
and chunks that depend only on the pairs, so results do not depend on the thread count.

Threads: at most ``_MAX_BLOCKS`` blocks of pairs, so with more threads than blocks each block is
also cut into groups of features (``feature_groups``), one work item per (block, group): every
group walks the block's pairs (the same chunks, so each feature's sums are added in the same
order: the same bits for any number of groups) and fills only its features' slots. Groups repeat
the per-pair bookkeeping, but the per-feature work, most of a pass, is split (without groups, threads
sat idle in this pass: docs/kernel-notes.md). The blocks' histograms are then added per feature in
parallel, in block order.

Precision (``PairScratch(dtype=...)``). The grower passes couplings pre-rounded to a power-of-two
grid (:mod:`.fixed_point`) and float64 accumulators (every OLE criterion): every sum is then exact,
so the histogram is the same in any order, for any block or group count, and on the GPU
(:mod:`.cuda._histograms_kernels`). The kernel also takes float32 chunk accumulators (the former
``criterion="ole"``; kept for measurement): each chunk's sums are flushed into a float64
histogram, and the coupling-sum channel R is float64 throughout. A float32 row sum of ``m`` couplings ``c >= 0`` is within ``(m + 1) u`` of its exact
value, ``u = 2**-24``, relative to the sum (``m`` is at most the row's pairs in one chunk, a few
dozen), and these errors have random signs, so a candidate child coupling
``C_left(t) = sum_{b <= t} hi[b]`` carries an error of about ``u`` times the node's coupling,
tested at < 1e-6 of it (tests/test_ole_pairhist.py). Float32 halves the accumulators' memory
traffic and doubles the SIMD lanes of the pair loop; a whole OLE tree gains little from it, its
pair passes being dominated by per-pair bookkeeping and by each touched row's flush (one scatter
per feature and channel). The measured error and speeds: docs/kernel-notes.md.
With float64 accumulators the split's children's ``C`` (their node hessians, leaf values, recorded
gains) are the histogram's exact sums, which the grower takes from the split (:mod:`.grower`).

A split's children's histograms (:func:`pair_hist_plan`): each child that is split later from its
own pairs, or the smaller child's and the split pairs' with the larger's as ``parent - smaller -
split pairs``, whichever pass costs less (:func:`pass_cost`); the GPU makes the same choice on the
card from the pair counts the partition left there (:mod:`.cuda._histograms_kernels`).

Pairs live per node in a contiguous range of one of two pair buffers and are partitioned with the
rows into the other buffer (:mod:`.pair_partition`); pairs split across the two children leave the
node's list.
"""
from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from .common import PH_CHANNELS, PH_HI, PH_NANP, PH_R
from .histogram import n_blocks_for
from .pairhist_subset import build_pair_hist_subset, reduce_feature_slots, subset_output, zero_feature_slots

__all__ = ["PairScratch", "HistPairs", "FeatureSlots", "ChunkScratch", "build_pair_hist", "pass_cost", "pair_hist_plan", "PAIRS_DIRECT", "PAIRS_LEFT_SMALL",
           "PAIRS_RIGHT_SMALL", "ROW_COST"]

#: A pair-histogram pass costs about 27 ns per pair plus 280 ns per row it touches (each touched row
#: scatters its sums into every feature's histogram once), measured on MSLR-shaped data: the row
#: term dominates deep nodes, where rows keep only one or two pairs each.
ROW_COST = 10.0
#: :func:`pair_hist_plan`'s choices: each child that needs one built from its own pairs; the left
#: child's and the split pairs' built, the right child's by subtraction from the parent's; the mirror.
PAIRS_DIRECT = 0
PAIRS_LEFT_SMALL = 1
PAIRS_RIGHT_SMALL = 2

# Up to this many features the pair-by-pair kernel (pairhist_subset) is faster than the chunked one:
# measured on MSLR-shaped pairs pruned at epsilon 0.2, one thread, 9 vs 15 ns/pair at 1 feature, 17
# vs 23 at 2, equal at 4, 33 vs 19 at 8.
SUBSET_MAX_FEATURES = 3
# ... and at nodes with few pairs at any feature count: there the chunked kernel pays its per-row
# cost for one or two pairs per row (measured ~220 ns/pair at 8 features below 20,000 pairs, pair by
# pair ~35 ns/pair).
SUBSET_MAX_PAIRS = 16384
_BLOCK_PAIRS = 16384
_MAX_BLOCKS = 8
# Rows per chunk: bigger chunks cut fewer queries in two (fewer row scatters) while A (rows x
# features float64, 1024 x 136 x 8 B = 1.1 MB) still sits in L2; 1024 measured ~20% faster than
# 256 on the MSLR-shaped benchmark, 2048 no better.
_CHUNK_ROWS = 1024
# Feature groups (more work items than blocks, see the module docstring): at least this many
# features per group, so the repeated per-pair bookkeeping stays small beside the per-feature work;
# and a single-block node is cut into groups only from this many pairs (136 features x 8192 pairs
# is ~0.3 ms of one thread's work: more than waking the thread team).
_GROUP_MIN_FEATURES = 8
_GROUP_MIN_PAIRS = 8192
# At most this many work items per pass: each needs its own row -> slot map (4 bytes per training
# row: 154 MB for 32 items at 1.2M rows), so machines beyond 32 threads get no more items.
_MAX_ITEMS = 32


class HistPairs(NamedTuple):
    """The pairs a pass reads: rows ``pi, pj`` (one integer dtype) and couplings ``pc`` (float64)."""
    pi: np.ndarray
    pj: np.ndarray
    pc: np.ndarray


class FeatureSlots(NamedTuple):
    """The features a pass fills (int64): their indices, first histogram slots and value-bin counts."""
    feats: np.ndarray
    foff: np.ndarray
    fnb: np.ndarray


class ChunkScratch(NamedTuple):
    """A work item's chunk scratch (:class:`PairScratch`'s arrays; with a leading item axis for the
    parallel pass): row -> chunk slot map, the chunk's rows, accumulators, row coupling sums, bin tile."""
    loc: np.ndarray
    rows: np.ndarray
    acc: np.ndarray
    nanacc: np.ndarray
    rsum: np.ndarray
    tile: np.ndarray


class PairScratch:
    """Per-fit scratch of the pair-histogram kernel: row -> chunk-slot maps (kept at -1) and accumulators.

    ``dtype``: the per-chunk accumulators' type, ``np.float32`` (the fast exact path) or
    ``np.float64`` (the reference); each chunk's sums are flushed into the float64 histogram.
    """

    def __init__(self, n_rows: int, n_features: int, any_nan: bool, chunk_rows: int = _CHUNK_ROWS,
                 dtype: "type | np.dtype" = np.float64) -> None:
        if int(chunk_rows) < 2:  # a pair with two new rows must always fit in an empty chunk
            raise ValueError(f"chunk_rows must be >= 2, got {chunk_rows}")
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype must be float32 or float64, got {dtype}")
        self.n_rows, self.n_features, self.chunk_rows = int(n_rows), int(n_features), int(chunk_rows)
        self.any_nan = bool(any_nan)
        self.dtype = dtype
        self._allocate(_MAX_BLOCKS)
        self.tile: np.ndarray | None = None  # (items, chunk_rows, features) bins of the chunk's rows, dtype of the bins
        self.subset: dict[str, np.ndarray] = {}  # pairhist_subset's per-block histograms
        self.blocks: np.ndarray | None = None  # per-block histograms of the chunked kernel, reused across nodes

    def _allocate(self, items: int) -> None:
        # one set per work item; loc (rows x items int32) is the large one, so sets beyond the
        # blocks' are made only when a pass has more items (more threads than blocks)
        c, f, dt = self.chunk_rows, self.n_features, self.dtype
        self.loc = np.full((items, self.n_rows), -1, dtype=np.int32)
        self.rows = np.empty((items, c), dtype=np.int64)
        self.acc: np.ndarray = np.empty((items, c, f), dtype=dt)
        self.nanacc: np.ndarray = np.empty((items, c if self.any_nan else 0, f), dtype=dt)
        self.rsum = np.empty((items, c), dtype=np.float64)

    def ensure_items(self, items: int) -> None:
        """At least ``items`` per-item scratch sets (work items of one pass)."""
        if self.loc.shape[0] < items:
            self._allocate(items)

    def chunk(self, item: int, tile: np.ndarray) -> ChunkScratch:
        """Work item ``item``'s :class:`ChunkScratch` (``tile``: :meth:`tile_for`'s array)."""
        return ChunkScratch(self.loc[item], self.rows[item], self.acc[item], self.nanacc[item], self.rsum[item],
                            tile[item])

    def tile_for(self, bins: np.ndarray) -> np.ndarray:
        items = self.loc.shape[0]
        t = self.tile
        if t is None or t.dtype != bins.dtype or t.shape[2] != bins.shape[1] or t.shape[0] < items:
            t = self.tile = np.empty((items, self.rows.shape[1], bins.shape[1]), dtype=bins.dtype)
        return t


def feature_groups(n_blocks: int, n_features: int, n_pairs: int, threads: int) -> int:
    """Feature groups per block of a pair-histogram pass: enough for ``threads`` work items when
    there are fewer blocks (at least ``_GROUP_MIN_FEATURES`` features each, at most ``_MAX_ITEMS``
    items, and only from ``_GROUP_MIN_PAIRS`` pairs); 1 otherwise. Any count gives the same histogram."""
    if threads <= n_blocks or n_pairs < _GROUP_MIN_PAIRS:
        return 1
    return int(max(1, min(min(threads, _MAX_ITEMS) // n_blocks, n_features // _GROUP_MIN_FEATURES)))


@njit(cache=True)
def _pair_block(bins, pairs, lo, hi, fs, any_nan, scratch, out):
    """Pairs ``lo:hi`` of :class:`HistPairs` ``pairs`` into ``out`` at the features of
    :class:`FeatureSlots` ``fs``, chunk by chunk through one item's :class:`ChunkScratch`."""
    pi, pj, pc = pairs
    feats, foff, fnb = fs
    loc, rows, acc, nanacc, rsum, tile = scratch  # locals: the loops below index plain arrays
    n_feat = feats.shape[0]
    # a run of consecutive features (all of them, or a feature group): a plain copy from ``first``
    first = feats[0] if n_feat > 0 else 0
    full = True
    for f in range(n_feat):
        full = full and feats[f] == first + f
    cap = rows.shape[0]
    k = lo
    while k < hi:
        nloc = 0
        while k < hi:
            a = pi[k]
            b = pj[k]
            new = (1 if loc[a] < 0 else 0) + (1 if (loc[b] < 0 and b != a) else 0)
            if nloc + new > cap:
                break
            # inline row entry, twice (a helper function taking the arrays ran several times slower;
            # an @njit(inline='always') helper, same x86 instruction count, made pair_hist 20-37% slower
            # per OLE tree: benchmarks/ole_phases.py --criteria ole, interleaved, 0.46-0.54 s vs 0.63-0.65 s)
            sa = loc[a]
            if sa < 0:
                sa = nloc
                nloc += 1
                loc[a] = sa
                rows[sa] = a
                rsum[sa] = 0.0
                if full:  # the row's bins, contiguous for the pair loops below
                    for f in range(n_feat):
                        tile[sa, f] = bins[a, first + f]
                else:
                    for f in range(n_feat):
                        tile[sa, f] = bins[a, feats[f]]
                for f in range(n_feat):
                    acc[sa, f] = 0.0
                if any_nan:
                    for f in range(n_feat):
                        nanacc[sa, f] = 0.0
            sb = loc[b]
            if sb < 0:
                sb = nloc
                nloc += 1
                loc[b] = sb
                rows[sb] = b
                rsum[sb] = 0.0
                if full:
                    for f in range(n_feat):
                        tile[sb, f] = bins[b, first + f]
                else:
                    for f in range(n_feat):
                        tile[sb, f] = bins[b, feats[f]]
                for f in range(n_feat):
                    acc[sb, f] = 0.0
                if any_nan:
                    for f in range(n_feat):
                        nanacc[sb, f] = 0.0
            c64 = pc[k]
            rsum[sa] += c64
            rsum[sb] += c64
            c = acc.dtype.type(c64)  # the accumulator's type: float32 lanes are twice as many per vector
            z = acc.dtype.type(0.0)
            # 2-D indexing rather than row views: views cost a reference-count update each
            if not any_nan:
                for f in range(n_feat):
                    cb = c if tile[sa, f] < tile[sb, f] else z
                    acc[sb, f] += cb
                    acc[sa, f] += c - cb
            else:
                for f in range(n_feat):
                    top = fnb[f]
                    x = np.int64(tile[sa, f])
                    y = np.int64(tile[sb, f])
                    # larger bin NaN, smaller not: the pair goes to nanp at the smaller row's bin
                    to_nb = c if (x < y and y == top) else z
                    to_na = c if (y < x and x == top) else z
                    to_b = c if (x < y and y != top) else z
                    acc[sb, f] += to_b
                    nanacc[sa, f] += to_nb
                    nanacc[sb, f] += to_na
                    acc[sa, f] += c - to_b - to_nb - to_na
            k += 1
        for s in range(nloc):  # flush: each row's chunk sums into the float64 histogram
            row = rows[s]
            loc[row] = -1
            r = rsum[s]
            if any_nan:
                for f in range(n_feat):
                    slot = foff[f] + np.int64(tile[s, f])
                    out[slot, PH_HI] += np.float64(acc[s, f])
                    out[slot, PH_NANP] += np.float64(nanacc[s, f])
                    out[slot, PH_R] += r
            else:
                for f in range(n_feat):
                    slot = foff[f] + np.int64(tile[s, f])
                    out[slot, PH_HI] += np.float64(acc[s, f])
                    out[slot, PH_R] += r


@njit(cache=True, parallel=True)
def _pair_parallel(bins, pairs, start, end, fs, any_nan, n_blocks, n_groups, scratch, buf, out):
    """Work item ``b * n_groups + g``: block ``b``'s pairs for group ``g``'s features, into ``out``
    (one block) or ``buf[b]``, then ``out`` = the blocks' sum, feature by feature in parallel.
    ``scratch``: every item's :class:`ChunkScratch` (arrays with a leading item axis)."""
    feats, foff, fnb = fs
    loc, rows, acc, nanacc, rsum, tile = scratch
    n = end - start
    nf = feats.shape[0]
    for item in prange(n_blocks * n_groups):
        b = item // n_groups
        g = item - b * n_groups
        lo = start + (n * b) // n_blocks
        hi = start + (n * (b + 1)) // n_blocks
        f0 = (nf * g) // n_groups
        f1 = (nf * (g + 1)) // n_groups
        dest = out if n_blocks == 1 else buf[b]
        zero_feature_slots(dest, foff[f0:f1], fnb[f0:f1])
        _pair_block(bins, pairs, lo, hi, FeatureSlots(feats[f0:f1], foff[f0:f1], fnb[f0:f1]), any_nan,
                    ChunkScratch(loc[item], rows[item], acc[item], nanacc[item], rsum[item], tile[item]), dest)
    if n_blocks > 1:
        for t in prange(nf):
            reduce_feature_slots(buf, n_blocks, foff[t], foff[t] + fnb[t] + 1, out)


def build_pair_hist(bins: np.ndarray, pi: np.ndarray, pj: np.ndarray, pc: np.ndarray, start: int, end: int,
                    offsets: np.ndarray, n_bins: np.ndarray, n_slots: int, scratch: PairScratch | None = None,
                    features: np.ndarray | None = None, groups: int | None = None) -> np.ndarray:
    """Pair histogram ``(n_slots, 3)`` = [hi, nanp, R] of pairs ``start:end`` (see the module docstring).

    ``bins``: (rows, features), any strides: the grower passes the transposed feature-major matrix,
    and each row's bins are copied once per chunk into a contiguous tile. ``scratch`` sets the
    accumulator type (float64 when none is given). ``features``: only these features' slots are
    built (``criterion="ole_fast"``); the other slots are 0, and with a ``scratch`` the result is
    the scratch's array, valid until the next call with it (``pairhist_subset.subset_output``).
    ``groups``: feature groups per block of pairs (the same result for any count; at most one per
    feature); None chooses them from the thread count (``feature_groups``).
    """
    if features is not None and (len(features) <= SUBSET_MAX_FEATURES or end - start <= SUBSET_MAX_PAIRS):
        # pair by pair: no per-row cost (pairhist_subset says why)
        return build_pair_hist_subset(bins, pi, pj, pc, start, end, offsets, n_bins, n_slots, features,
                                      None if scratch is None else scratch.subset)
    if scratch is None:
        scratch = PairScratch(bins.shape[0], bins.shape[1], True)
    s = scratch
    tile = s.tile_for(bins)
    if features is None:
        feats = np.arange(bins.shape[1], dtype=np.int64)
    else:  # sorted and unique: all features then means arange, the kernel's plain-copy path
        feats = np.unique(np.asarray(features, dtype=np.int64))
        if feats.size and (feats[0] < 0 or feats[-1] >= bins.shape[1]):
            raise ValueError(f"features must be in [0, {bins.shape[1]}), got {feats[0]}..{feats[-1]}")
    foff = np.ascontiguousarray(offsets[feats], dtype=np.int64)
    fnb = np.ascontiguousarray(n_bins[feats], dtype=np.int64)
    nb = n_blocks_for(end - start, block=_BLOCK_PAIRS, max_blocks=_MAX_BLOCKS)
    if groups is None:
        ng = feature_groups(nb, feats.size, end - start, numba.get_num_threads())
    elif isinstance(groups, (bool, np.bool_)) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"groups must be an integer >= 1 or None, got {groups!r}")
    else:
        ng = int(min(groups, max(1, feats.size)))
    # a feature subset (ole_fast: searched, then dropped) reuses one histogram: see subset_output
    out = np.empty((n_slots, PH_CHANNELS), dtype=np.float64) if features is None else \
        subset_output(s.subset, n_slots, foff, fnb)
    if nb == 1 and ng == 1:
        zero_feature_slots(out, foff, fnb)
        _pair_block(bins, HistPairs(pi, pj, pc), start, end, FeatureSlots(feats, foff, fnb), s.any_nan,
                    s.chunk(0, tile), out)
        return out
    s.ensure_items(nb * ng)
    tile = s.tile_for(bins)
    # one buffer per fit: a fresh (blocks, slots, 3) array per node page-faults on every slot it fills
    # (each block zeroes the slots it fills, and only those are read back)
    buf = s.blocks
    if buf is None or buf.shape[1] != n_slots:
        buf = s.blocks = np.empty((_MAX_BLOCKS, n_slots, PH_CHANNELS), dtype=np.float64)
    _pair_parallel(bins, HistPairs(pi, pj, pc), start, end, FeatureSlots(feats, foff, fnb), s.any_nan, nb, ng,
                   ChunkScratch(s.loc, s.rows, s.acc, s.nanacc, s.rsum, tile), buf, out)
    return out


@njit(cache=True)
def pass_cost(n_pairs, n_rows):
    """The cost of a pair-histogram pass over ``n_pairs`` pairs of a node of ``n_rows`` rows, in pairs
    (:data:`ROW_COST` per touched row: at most ``n_rows``, at most two a pair)."""
    return n_pairs + ROW_COST * min(n_rows, 2.0 * n_pairs)


@njit(cache=True)
def pair_hist_plan(n_left, n_right, n_parent, rows_left, rows_right, rows_parent, need_left, need_right):
    """How a split's children's pair histograms are made: :data:`PAIRS_DIRECT` (each child with
    ``need_*`` from its own ``n_*`` pairs), or, when the larger child (by pairs; ties: the right) needs
    one and it costs less (:func:`pass_cost`), :data:`PAIRS_LEFT_SMALL` / :data:`PAIRS_RIGHT_SMALL`:
    the smaller child's and the ``n_parent - n_left - n_right`` split pairs' (rows of both children:
    the parent's rows) built, the larger's by subtraction from the parent's. The CPU's choice and,
    compiled as a device function, the GPU's (on counts that stay on the card).

    >>> pair_hist_plan(10, 500, 600, 20.0, 400.0, 420.0, True, True) == PAIRS_LEFT_SMALL
    True
    >>> pair_hist_plan(10, 500, 600, 20.0, 400.0, 420.0, True, False) == PAIRS_DIRECT  # the larger is not split
    True
    """
    cost_left = pass_cost(n_left, rows_left)
    cost_right = pass_cost(n_right, rows_right)
    direct = (cost_left if need_left else 0.0) + (cost_right if need_right else 0.0)
    split = pass_cost(n_parent - n_left - n_right, rows_parent)
    if n_left <= n_right:
        if need_right and cost_left + split < direct:
            return PAIRS_LEFT_SMALL
    elif need_left and cost_right + split < direct:
        return PAIRS_RIGHT_SMALL
    return PAIRS_DIRECT
