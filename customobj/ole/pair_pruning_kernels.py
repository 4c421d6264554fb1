r"""The numba kernels of :mod:`customobj.ole.pair_pruning` (``criterion="ole_fast"``'s per-query
coupling-mass pruning; the bound and the bucket scheme are described there).

Two paths give the same result. ``_prune_contiguous``, when each query's pairs form one run (as
LambdaRank writes them): blocks of whole queries in parallel, thresholds first (three passes per
query while its pairs are in cache), then each block places its pairs at its own offsets.
``_prune``, any order: per-query tables over all pairs, then one placement pass. Placement is
branch-free (``_place_query`` says why). ``_dropped_leaf_sums``: the couplings of the dropped
pairs inside each leaf of a grown tree, by parallel blocks of pairs summed in block order.

The kernels take records (:class:`KeyedPairs`, :class:`PairOutput`, :class:`QueryTable`); the hot
loops unpack them into locals first, so their bodies are the ones of the unpacked arguments.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

#: Buckets per octave of coupling below the query's largest: the kept set exceeds a full sort's by
#: at most one bucket (a factor 2**(1/4) in coupling).
BUCKETS_PER_OCTAVE = 4
#: Buckets per query; the last holds every coupling below ``2**-16`` of the query's largest.
N_BUCKETS = 64


class KeyedPairs(NamedTuple):
    """The pairs to prune: rows ``pi, pj``, couplings ``pc`` (float64) and ``bits``, ``pc``'s int64 view
    (the bucket keys)."""
    pi: np.ndarray
    pj: np.ndarray
    pc: np.ndarray
    bits: np.ndarray


class PairOutput(NamedTuple):
    """Where the pruning places the pairs (dtypes of :class:`KeyedPairs`' ``pi, pj, pc``)."""
    oi: np.ndarray
    oj: np.ndarray
    oc: np.ndarray


class QueryTable(NamedTuple):
    """Each row's query and each query's threshold: the key of its largest coupling and its first
    dropped bucket (``N_BUCKETS``: none), int64; filled by the pruning, read by the later passes."""
    query_of_row: np.ndarray
    tops: np.ndarray
    cuts: np.ndarray


# A positive float64's bits shifted right by 50 (exponent, then the top two mantissa bits) increase
# with its value: a quarter-octave key without a logarithm.
_KEY_SHIFT = 50
# Parallel pruning: blocks of about this many pairs, at most _MAX_BLOCKS (both fix the blocks, not the threads).
_BLOCK_PAIRS = 65536
_MAX_BLOCKS = 16


@njit(cache=True)
def _bucket(bits, top):
    b = top - (bits >> _KEY_SHIFT)
    return b if b < N_BUCKETS else N_BUCKETS - 1


@njit(cache=True)
def _first_dropped_bucket(mass, total, eps):
    """Whole buckets (``mass[b]``, ``b`` counted down from the query's largest coupling) are
    dropped from the smallest up while their mass stays within ``eps * total``; returns the first
    dropped bucket (``N_BUCKETS``: none)."""
    cut = N_BUCKETS
    budget = eps * total
    dropped = 0.0
    for b in range(N_BUCKETS - 1, -1, -1):
        if dropped + mass[b] > budget:
            break
        dropped += mass[b]
        cut = b
    return cut


@njit(cache=True)
def _cuts(pi, pc, bits, m, query_of_row, n_queries, eps):
    """Per query the key of its largest coupling and the first dropped bucket (``N_BUCKETS``: none)."""
    top = np.zeros(n_queries, dtype=np.int64)
    qtot = np.zeros(n_queries)
    for k in range(m):
        c = pc[k]
        if c > 0.0:
            q = query_of_row[pi[k]]
            qtot[q] += c
            key = bits[k] >> _KEY_SHIFT
            if key > top[q]:
                top[q] = key
    mass = np.zeros((n_queries, N_BUCKETS))
    for k in range(m):
        c = pc[k]
        if c > 0.0:
            q = query_of_row[pi[k]]
            mass[q, _bucket(bits[k], top[q])] += c
    cut = np.empty(n_queries, dtype=np.int64)
    for q in range(n_queries):
        cut[q] = _first_dropped_bucket(mass[q], qtot[q], eps)
    return top, cut


@njit(cache=True, inline="always")
def _kept(c, key_bits, top, cut):
    """1 when a pair of coupling ``c`` is kept under its query's threshold ``(top, cut)``, else 0.
    Bitwise, not ``or``/``and``: short-circuits are branches, and these mispredict."""
    return np.int64((c < 0.0) | ((c > 0.0) & (_bucket(key_bits, top) < cut)))


@njit(cache=True, inline="always")
def _place_query(pairs, s, e, top, cut, write_dropped, out, front, back):
    """Pairs ``s:e`` of one query to the front of the output (kept) or, when asked, to its back.

    Branch-free: each pair is written at ``front`` (and at ``back - 1``) whatever its fate, and only
    the counters move by it; a branch on it mispredicts so often that pruning ran 3-5x slower
    (measured 117 and 68 ms against 24 on 3.7 million MSLR-shaped pairs). Both slots are free:
    ``front`` is the next kept slot, and ``back - 1 >= front`` while a pair is unplaced (equal only
    for the last free slot, which then receives the same pair twice).
    """
    pi, pj, pc, bits = pairs
    oi, oj, oc = out
    for k in range(s, e):
        c = pc[k]
        keep = _kept(c, bits[k], top, cut)
        oi[front] = pi[k]
        oj[front] = pj[k]
        oc[front] = c
        if write_dropped:  # the same for every pair: no misprediction
            oi[back - 1] = pi[k]
            oj[back - 1] = pj[k]
            oc[back - 1] = c
            back -= 1 - keep
        front += keep
    return front, back


@njit(cache=True)
def _prune(pairs, table, n_queries, eps, out, write_dropped):
    """The pairs of :class:`KeyedPairs` ``pairs``, any order, into ``out`` (kept to the front, dropped
    behind them when ``write_dropped``); fills ``table``'s thresholds; returns the kept count."""
    pi, pc, bits = pairs.pi, pairs.pc, pairs.bits
    query_of_row, top, cut = table
    m = pc.shape[0]
    top[:], cut[:] = _cuts(pi, pc, bits, m, query_of_row, n_queries, eps)
    front = 0
    back = m
    for k in range(m):  # pairs of any order: each with its own query's threshold
        q = query_of_row[pi[k]]
        front, back = _place_query(pairs, k, k + 1, top[q], cut[q], write_dropped, out, front, back)
    return front


@njit(cache=True)
def _query_cut(pc, bits, s, e, eps, mass):
    """Key of the largest coupling of pairs ``s:e`` (one query) and its first dropped bucket
    (``N_BUCKETS``: none): whole buckets from the smallest up while their mass fits ``eps`` of the total."""
    top = 0
    total = 0.0
    for k in range(s, e):
        c = pc[k]
        if c > 0.0:
            total += c
            key = bits[k] >> _KEY_SHIFT
            if key > top:
                top = key
    mass[:] = 0.0
    for k in range(s, e):
        c = pc[k]
        if c > 0.0:
            mass[_bucket(bits[k], top)] += c
    return top, _first_dropped_bucket(mass, total, eps)


@njit(cache=True, inline="always")
def _run_end(pi, query_of_row, s, hi):
    """End of the run of pairs from ``s`` (below ``hi``) whose first row is in the same query."""
    q = query_of_row[pi[s]]
    e = s + 1
    while e < hi and query_of_row[pi[e]] == q:
        e += 1
    return e


@njit(cache=True)
def _cut_queries(pi, pc, bits, query_of_row, lo, hi, eps, tops, cuts, seen):
    """Thresholds of the query runs of pairs ``lo:hi`` (into ``tops, cuts``, marking ``seen``);
    returns (pairs kept, number of runs)."""
    mass = np.zeros(N_BUCKETS)
    kept = 0
    runs = 0
    s = lo
    while s < hi:
        e = _run_end(pi, query_of_row, s, hi)
        q = query_of_row[pi[s]]
        seen[q] = True
        runs += 1
        top, cut = _query_cut(pc, bits, s, e, eps, mass)
        tops[q] = top
        cuts[q] = cut
        for k in range(s, e):  # while the run is in cache
            kept += _kept(pc[k], bits[k], top, cut)
        s = e
    return kept, runs


@njit(cache=True)
def _place_queries(pairs, table, lo, hi, write_dropped, out, front, back):
    """The query runs of pairs ``lo:hi`` into ``out`` from ``front`` (kept) and below ``back`` (dropped)."""
    pi = pairs.pi
    query_of_row, tops, cuts = table
    s = lo
    while s < hi:
        e = _run_end(pi, query_of_row, s, hi)
        q = query_of_row[pi[s]]
        front, back = _place_query(pairs, s, e, tops[q], cuts[q], write_dropped, out, front, back)
        s = e
    return front, back


@njit(cache=True)
def _find_placed(pairs, table, lo, hi, step, want):
    """Index of the first pair of ``lo:hi`` (the last one when ``step`` is -1) that is kept
    (``want`` 1) or dropped (0); -1 if none."""
    pi, pc, bits = pairs.pi, pairs.pc, pairs.bits
    query_of_row, tops, cuts = table
    k = lo if step > 0 else hi - 1
    while lo <= k < hi:
        q = query_of_row[pi[k]]
        if _kept(pc[k], bits[k], tops[q], cuts[q]) == want:
            return k
        k += step
    return -1


@njit(cache=True)
def _restore(pairs, k, d, out):
    if k >= 0:
        out.oi[d] = pairs.pi[k]
        out.oj[d] = pairs.pj[k]
        out.oc[d] = pairs.pc[k]


@njit(cache=True)
def _restore_block_edges(pairs, table, bounds, front, write_dropped, out):
    """Rewrite the slots that parallel branch-free placement can overwrite: a block's stray writes
    land one slot past its kept range (the first kept slot of a later block, or the last dropped
    slot) and one slot below its dropped range (the first dropped slot of a later block, or the
    last kept slot)."""
    nb = bounds.shape[0] - 1
    m = bounds[nb]
    for b in range(1, nb):
        k = _find_placed(pairs, table, bounds[b], bounds[b + 1], 1, 1)
        _restore(pairs, k, front[b], out)
        if write_dropped:
            k = _find_placed(pairs, table, bounds[b], bounds[b + 1], 1, 0)
            _restore(pairs, k, m - (bounds[b] - front[b]) - 1, out)
    if write_dropped and nb > 1:
        total = front[nb]
        if total > 0:
            _restore(pairs, _find_placed(pairs, table, 0, m, -1, 1), total - 1, out)
        if total < m:
            _restore(pairs, _find_placed(pairs, table, 0, m, -1, 0), total, out)


@njit(cache=True)
def _block_bounds(pi, query_of_row, nb):
    """``nb + 1`` bounds of blocks of about equal pair counts, each starting where a query's run starts."""
    m = pi.shape[0]
    bounds = np.empty(nb + 1, dtype=np.int64)
    bounds[0] = 0
    bounds[nb] = m
    for b in range(1, nb):
        k = max(bounds[b - 1], (m * b) // nb)
        while 0 < k < m and query_of_row[pi[k]] == query_of_row[pi[k - 1]]:
            k += 1
        bounds[b] = k
    return bounds


@njit(cache=True, parallel=True)
def _prune_contiguous(pairs, table, n_queries, eps, out, write_dropped):
    """``_prune`` when each query's pairs are contiguous (LambdaRank writes them so). Returns -1
    when some query's pairs form more than one run.

    Blocks of whole queries (their number and bounds depend only on the pairs) run in parallel,
    twice: thresholds and kept counts (three passes per query while its pairs are in cache), then
    each block places its pairs at its offsets, so the result is the serial one whatever the
    thread count, and only the slots that receive pairs are written (untouched output pages cost
    no memory). A block's branch-free placement (``_place_query``) may write a pair into a slot of
    another block's range: ``_restore_block_edges`` rewrites those slots afterwards.
    """
    pi, pc, bits = pairs.pi, pairs.pc, pairs.bits
    query_of_row, tops, cuts = table
    m = pc.shape[0]
    seen = np.zeros(n_queries, dtype=np.bool_)
    bounds = _block_bounds(pi, query_of_row, max(1, min(_MAX_BLOCKS, m // _BLOCK_PAIRS)))
    nb = bounds.shape[0] - 1
    kept = np.zeros(nb, dtype=np.int64)
    runs = np.zeros(nb, dtype=np.int64)
    for b in prange(nb):
        kept[b], runs[b] = _cut_queries(pi, pc, bits, query_of_row, bounds[b], bounds[b + 1], eps, tops, cuts, seen)
    if runs.sum() != seen.sum():  # a query met twice (races on seen[] only ever write True)
        return -1
    front = np.zeros(nb + 1, dtype=np.int64)  # kept before block b; dropped before it: bounds[b] - front[b]
    for b in range(nb):
        front[b + 1] = front[b] + kept[b]
    for b in prange(nb):
        _place_queries(pairs, table, bounds[b], bounds[b + 1], write_dropped, out, front[b], m - (bounds[b] - front[b]))
    _restore_block_edges(pairs, table, bounds, front, write_dropped, out)
    return front[nb]


@njit(cache=True)
def _dropped_block(leaf, lo, hi, pairs, table, only_dropped, out):
    pi, pj, pc, bits = pairs
    query_of_row, tops, cuts = table
    for k in range(lo, hi):
        a = leaf[pi[k]]
        if a < 0 or a != leaf[pj[k]]:
            continue
        c = pc[k]
        if not only_dropped:  # the round's pairs: the dropped ones of positive coupling (the pruning's test)
            q = query_of_row[pi[k]]
            if not c > 0.0 or _kept(c, bits[k], tops[q], cuts[q]):
                continue
        out[a] += c


@njit(cache=True, parallel=True)
def _dropped_leaf_sums(order, starts, ends, pairs, table, only_dropped, n_rows, out):
    """``out[l] +=`` the couplings of the dropped pairs (all of ``pairs`` when ``only_dropped``, else
    those the thresholds of ``table`` drop) with both rows in leaf ``l`` (rows ``order[starts[l]:ends[l]]``)."""
    pc = pairs.pc
    n_leaves = starts.shape[0]
    leaf = np.full(n_rows, -1, dtype=np.int32)
    for l in range(n_leaves):
        for k in range(starts[l], ends[l]):
            leaf[order[k]] = l
    m = pc.shape[0]
    nb = max(1, min(_MAX_BLOCKS, m // _BLOCK_PAIRS))  # blocks fixed by the pair count: the sums do not
    part = np.zeros((nb, n_leaves))                     # depend on the threads
    for b in prange(nb):
        _dropped_block(leaf, (m * b) // nb, (m * (b + 1)) // nb, pairs, table, only_dropped, part[b])
    for b in range(nb):
        for l in range(n_leaves):
            out[l] += part[b, l]
