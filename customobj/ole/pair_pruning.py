r"""Coupling-mass pruning of the pairs ``criterion="ole_fast"`` searches splits with.

Per query ``q`` with couplings ``c_p > 0`` (mass :math:`M_q = \sum_{p \in q} c_p`), keep the
largest couplings and drop the smallest ones, as many as fit in a budget of ``epsilon`` of the
query's mass:

.. math::

    D_q = \{p \in q : c_p < \tau_q\}, \qquad \sum_{p \in D_q} c_p \le \epsilon\, M_q .

Pairs with ``c = 0`` carry no mass and are dropped; negative couplings (no objective of customobj
makes them) are always kept, so the bound is on the positive mass. The threshold ``tau_q`` is a
bucket boundary: couplings are put in quarter-octave buckets (the float64 exponent and the top two
mantissa bits: buckets ``[1, 1.25), [1.25, 1.5), [1.5, 1.75), [1.75, 2)`` times a power of two),
counted down from the query's largest coupling (the last of ``N_BUCKETS = 64`` holding everything
about 16 octaves below it), and whole buckets are dropped from the smallest up while the dropped
mass stays within the budget. So every kept coupling of a query is at least every dropped one,
the bound holds exactly (it is checked on the same sums), and the kept set exceeds that of a full
sort by at most one bucket (couplings within a factor 1.25), at O(pairs) cost (no sort, no logarithm;
when each query's pairs are contiguous, as LambdaRank writes them, two passes over memory run by
blocks of queries in parallel: :mod:`customobj.ole.pair_pruning_kernels`).

Consequence for a tree node holding rows of the queries ``Q``: its in-node coupling ``C`` (the
OLE node hessian is ``H - 2C``: Xia, Zhai, Wang, "Analysis of Regression Tree Fitting Algorithms in
Learning to Rank", section 3.1) summed over the kept pairs is low by at most

.. math::

    0 \le C - \tilde C \le \sum_{p \in D,\ p \subset \mathrm{node}} c_p
      \le \epsilon \sum_{q \in Q} M_q ,

because the dropped pairs inside the node are dropped pairs of queries it holds. How many pairs
each ``epsilon`` keeps is measured by ``benchmarks/ole_pair_density.py``; the figures are in
docs/kernel-notes.md and docs/ole-fast.md.

Examples
--------
>>> import numpy as np
>>> from customobj.ole.pair_pruning import prune_pairs
>>> pi = np.array([0, 0, 1, 3, 3], np.int32); pj = np.array([1, 2, 2, 4, 5], np.int32)
>>> pc = np.array([1.0, 0.05, 0.5, 2.0, 2.0])
>>> query_of_row = np.array([0, 0, 0, 1, 1, 1], np.int32)
>>> out = tuple(np.empty(5, a.dtype) for a in (pi, pj, pc))
>>> k = prune_pairs(pi, pj, pc, query_of_row, 2, 0.1, *out)
>>> k, out[2][:k].tolist()   # 0.05 <= 0.1 * 1.55 is dropped; query 1 cannot drop a 2.0
(4, [1.0, 0.5, 2.0, 2.0])
"""
from __future__ import annotations

import numpy as np

from .context import Pairs
from .pair_pruning_kernels import (BUCKETS_PER_OCTAVE, N_BUCKETS, KeyedPairs, PairOutput, QueryTable,
                                   _dropped_leaf_sums, _prune, _prune_contiguous)

__all__ = ["prune_pairs", "prune_for_tree", "query_of_rows", "Dropped", "dropped_leaf_couplings",
           "N_BUCKETS", "BUCKETS_PER_OCTAVE"]


def prune_pairs(pi: np.ndarray, pj: np.ndarray, pc: np.ndarray, query_of_row: np.ndarray, n_queries: int,
                epsilon: float, oi: np.ndarray, oj: np.ndarray, oc: np.ndarray, *, write_dropped: bool = True,
                thresholds: tuple | None = None) -> int:
    """Write the kept pairs, in their order, to the front of ``(oi, oj, oc)``, the dropped ones behind them.

    Parameters
    ----------
    pi, pj, pc : ndarray
        Pairs (row indices, same integer dtype) and couplings (float64), any order.
    query_of_row : ndarray of int32
        Query index (``0 <= q < n_queries``) of every row; both rows of a pair are in one query.
    n_queries : int
    epsilon : float
        Fraction of each query's coupling mass that may be dropped, ``0 <= epsilon < 1``.
    oi, oj, oc : ndarray
        Outputs, at least ``len(pc)`` long, dtypes of ``pi, pj, pc``; may not alias the inputs.
    write_dropped : bool
        False: only the kept pairs are written, to ``o*[:k]``; of ``o*[k:]`` only ``o*[k]`` may
        change (the branch-free placement writes every pair at the next kept slot).
    thresholds : (ndarray, ndarray) of int64, optional
        Filled per query with the key of its largest coupling and its first dropped bucket: what
        :func:`is_dropped` needs to tell the dropped pairs later.

    Returns
    -------
    int
        ``k``: the kept pairs are ``o*[:k]``, the dropped ones ``o*[k:len(pc)]`` (in reverse order).
    """
    eps = float(epsilon)
    if not 0.0 <= eps < 1.0:
        raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
    m = pc.shape[0]
    if min(oi.shape[0], oj.shape[0], oc.shape[0]) < m or pi.shape[0] != m or pj.shape[0] != m:
        raise ValueError("prune_pairs: pair arrays of different lengths or outputs too short")
    if m == 0:
        return 0
    # the kernel indexes with these: checked here, not trusted (O(rows + pairs), ~1 ms per million)
    n_queries = int(n_queries)
    query_of_row = np.ascontiguousarray(query_of_row, dtype=np.int32)
    if query_of_row.size and (query_of_row.min() < 0 or query_of_row.max() >= n_queries):
        raise ValueError(f"query_of_row must hold query indices in [0, {n_queries})")
    if min(pi.min(), pj.min()) < 0 or max(pi.max(), pj.max()) >= query_of_row.shape[0]:
        raise ValueError(f"pairs must join rows in [0, {query_of_row.shape[0]}) (the rows of query_of_row)")
    pc = np.ascontiguousarray(pc, dtype=np.float64)
    bits = pc.view(np.int64)
    tops = np.zeros(n_queries, dtype=np.int64) if thresholds is None else thresholds[0]
    cuts = np.full(n_queries, N_BUCKETS, dtype=np.int64) if thresholds is None else thresholds[1]
    pairs, table, out = KeyedPairs(pi, pj, pc, bits), QueryTable(query_of_row, tops, cuts), PairOutput(oi, oj, oc)
    k = _prune_contiguous(pairs, table, n_queries, eps, out, write_dropped)
    if k < 0:  # some query's pairs are not contiguous: per-query tables over all pairs
        k = _prune(pairs, table, n_queries, eps, out, write_dropped)
    return int(k)


def query_of_rows(ptr: np.ndarray) -> np.ndarray:
    """Query index of every row from the group offsets ``ptr`` (``rows ptr[q]:ptr[q+1]`` form query ``q``)."""
    ptr = np.asarray(ptr, dtype=np.int64)
    sizes = np.diff(ptr)
    if sizes.size and (ptr[0] != 0 or sizes.min() < 0):
        raise ValueError("ptr must start at 0 and not decrease")
    return np.repeat(np.arange(sizes.size, dtype=np.int32), sizes)


class Dropped:
    """The pairs a tree's splits were searched without: the round's pairs and each query's threshold."""

    __slots__ = ("pairs", "query_of_row", "tops", "cuts", "only_dropped")

    def __init__(self, pairs: tuple, query_of_row: np.ndarray, tops: np.ndarray, cuts: np.ndarray,
                 only_dropped: bool) -> None:
        self.pairs, self.query_of_row, self.tops, self.cuts = pairs, query_of_row, tops, cuts
        self.only_dropped = only_dropped  # pairs holds only the dropped ones (else the round's pairs)


def prune_for_tree(bufs: "tuple[Pairs, Pairs]", query_of_row: np.ndarray, n_queries: int, epsilon: float) -> tuple:
    """The grower's two pair buffers, the kept pairs in the first, and a :class:`Dropped` record.

    ``bufs = (pairs, scratch)``: the round's pairs and the scratch buffer they ping-pong with. The
    kept pairs go to ``scratch[:k]`` and, when the scratch has room, ping-pong with
    ``scratch[k:2k]``, leaving the round's pairs untouched (only the kept pairs are written: the
    dropped ones are told apart later by their query's threshold). Otherwise the dropped pairs are
    written behind the kept ones and the kept pairs ping-pong with ``pairs[:k]``. Either way the
    tree's partitions (which stay within their buffer's ``[0, k)``) never overwrite what
    :func:`dropped_leaf_couplings` reads.
    """
    src, dst = bufs
    m = src[2].shape[0]
    qor = np.ascontiguousarray(query_of_row, dtype=np.int32)
    tops = np.zeros(n_queries, dtype=np.int64)
    cuts = np.full(n_queries, N_BUCKETS, dtype=np.int64)
    k = prune_pairs(src[0], src[1], src[2], qor, n_queries, epsilon, dst[0], dst[1], dst[2], write_dropped=False,
                    thresholds=(tops, cuts))
    if 2 * k <= dst[2].shape[0]:
        kept = tuple(a[:k] for a in dst)
        return (kept, tuple(a[k:2 * k] for a in dst)), Dropped(src, qor, tops, cuts, False)
    k = prune_pairs(src[0], src[1], src[2], qor, n_queries, epsilon, dst[0], dst[1], dst[2])
    kept = tuple(a[:k] for a in dst)
    return (kept, tuple(a[:k] for a in src)), Dropped(tuple(a[k:m] for a in dst), qor, tops, cuts, True)


def dropped_leaf_couplings(order: np.ndarray, ranges: list, dropped: "Dropped", n_rows: int) -> np.ndarray:
    """Per leaf (rows ``order[s:e]`` for ``(s, e)`` in ``ranges``) the coupling of the dropped pairs inside it."""
    starts = np.array([r[0] for r in ranges], dtype=np.int64)
    ends = np.array([r[1] for r in ranges], dtype=np.int64)
    out = np.zeros(len(ranges))
    pi, pj, pc = dropped.pairs
    pc = np.ascontiguousarray(pc, dtype=np.float64)
    _dropped_leaf_sums(order, starts, ends, KeyedPairs(pi, pj, pc, pc.view(np.int64)),
                       QueryTable(dropped.query_of_row, dropped.tops, dropped.cuts), dropped.only_dropped, n_rows, out)
    return out
