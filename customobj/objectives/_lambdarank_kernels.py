"""Numba drivers of LambdaRank / LambdaMART (Burges 2010, sections 3, 4, 7): gradients, loss and
pair couplings over all queries. The per-query work (the ``|dZ|`` formulas and the pair loop)
lives in ``_lambdarank_pass``; the codes and records in ``_lambdarank_records``.

Every query is sorted by current score (stable, ties by row order). Queries go to threads in
runs of whole queries of about equal work (``query_chunks``: about ``CHUNK_ROWS`` rows' worth
each, balanced by rows times upper rows rather than by query count, so unequal queries do not
leave threads idle; scratch arrays allocated once per run). Each query is computed alone, so
results never depend on the runs or the thread count; the four drivers share that one loop,
``_run_blocks``. Couplings sort each query once: a COUNT pass stores the order, the FILL (or
fused GRAD_FILL) pass reuses it.

Every driver takes a :class:`~._lambdarank_records.PassInputs` record whose ``metric`` is a
plain-int :class:`~._lambdarank_records.Metric` code and returns a
:class:`customobj._kernel_status.KernelStatus` (last, when it also returns values): an unknown
metric computes nothing and returns ``UNKNOWN_CODE``.
"""
from enum import IntEnum
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .._dcg_kernels import discount_table, ideal_dcg_query
from .._kernel_status import KernelStatus
from . import _lambdarank_fused
from . import _lambdarank_grades as GR
from ._lambdarank_pass import (  # noqa: F401 - the pre-enum code names stay importable from here
    COUNT, ERR, FILL, GRAD, GRAD_FILL, LOSS, MAP, MRR, NDCG, _sort_query, query_count, query_grad, query_loss,
)
from ._lambdarank_records import (  # noqa: F401 - the codes and records are part of this module's interface
    LOSS_LANES, Channel, Debias, IntChannel, Metric, Mode, PassInputs, PassOutputs, Query, block_scratch_arrays,
)


class Discount(IntEnum):
    """The pair loop's ``D`` (``qnorm`` is ``1/IDCG@k`` under both; upper rows are always in the top k).

    AT_K: ``D = 0`` beyond ``k`` for both rows (``|dZ|`` = exact change of NDCG@k; the default).
    FULL: the lower row keeps its untruncated ``D`` (LightGBM's lambdarank, XGBoost's rank:ndcg).
    """

    AT_K = 0
    FULL = 1


#: The pre-enum names of the conventions (aliases of the members).
DISCOUNT_AT_K, DISCOUNT_FULL = Discount
#: Rows per parallel work item, about (``query_chunks``): dozens of items per thread on 16 threads
#: at MSLR-WEB10K size (1,200 items for 2.4M rows), each item's scratch allocation amortised over
#: ~17 queries of 120 rows.
CHUNK_ROWS = 2048


@njit(cache=True)
def pair_discount_table(n, k, discount):
    """``(D, status)``: the pair loop's ``D`` for queries of at most ``n`` rows under convention
    ``discount`` (a :class:`Discount` code); an unknown code gives an empty ``D`` and ``UNKNOWN_CODE``."""
    if discount == Discount.AT_K:
        return discount_table(n, k), KernelStatus.OK
    if discount == Discount.FULL:
        return discount_table(n, n), KernelStatus.OK
    return np.zeros(0), KernelStatus.UNKNOWN_CODE


@njit(cache=True, parallel=True)
def ideal_dcg(row_gain, ptr, disc):
    """DCG of the label-sorted order of each query (positions beyond ``k`` have ``disc = 0``).

    Queries in parallel, each summed alone (the same values for any thread count): serial, this
    per-query sort was ~13% of a one-thread ``LambdaRank.grad_hess`` (it runs in ``prepare``)."""
    nq = ptr.size - 1
    out = np.zeros(nq, dtype=np.float64)
    for q in prange(nq):
        out[q] = ideal_dcg_query(row_gain, ptr[q], ptr[q + 1], disc, ptr[q + 1] - ptr[q])
    return out


@njit(cache=True)
def query_chunks(ptr, lim, chunk_rows):
    """Query offsets ``bounds`` of the parallel work items: item ``c`` is queries
    ``bounds[c]:bounds[c + 1]``, consecutive runs of about equal work ``n (1 + min(n, lim))`` per
    query of ``n`` rows (the sort plus a pair loop over at most ``lim`` upper rows), about
    ``rows / chunk_rows`` items, at most one per query (items may be empty). Depends only on the
    data and the cuts, never on the thread count."""
    nq = ptr.size - 1
    total = 0.0
    for q in range(nq):
        n = ptr[q + 1] - ptr[q]
        total += n * (1.0 + min(n, lim))
    n_items = max(1, min(nq, (ptr[nq] - ptr[0] + chunk_rows - 1) // chunk_rows))
    bounds = np.full(n_items + 1, nq, dtype=np.int64)
    bounds[0] = 0
    c = 1
    acc = 0.0
    for q in range(nq):
        n = ptr[q + 1] - ptr[q]
        acc += n * (1.0 + min(n, lim))
        while c < n_items and acc >= total * c / n_items:
            bounds[c] = q + 1
            c += 1
    return bounds


@njit(cache=True)
def _known(mode, metric):
    known_mode = (mode == Mode.GRAD or mode == Mode.LOSS or mode == Mode.COUNT or mode == Mode.FILL
                  or mode == Mode.GRAD_FILL or mode == Mode.TERMS or mode == Mode.GRAD_LOSS)
    known_metric = metric == Metric.NDCG or metric == Metric.ERR or metric == Metric.MAP or metric == Metric.MRR
    return known_mode and known_metric


@njit(cache=True)
def _block_scratch(ptr, q0, q1):
    size = 1
    for q in range(q0, q1):
        size = max(size, ptr[q + 1] - ptr[q])
    return block_scratch_arrays(size)


@njit(cache=True, parallel=True)
def _run_blocks(mode, inp, out, order, offsets, per_query, deb):
    """The one block loop (work items from ``query_chunks``): each query with at least two rows and
    ``qnorm > 0`` through the kernel of ``mode``. GRAD and LOSS sort into the block scratch, COUNT
    into ``order`` (stored for FILL), FILL, GRAD_FILL and TERMS read ``order`` and write pairs from
    ``offsets[q]``; LOSS, GRAD_LOSS and COUNT write ``per_query[q]``; TERMS reads and writes ``deb`` too.
    Returns a KernelStatus (``UNKNOWN_CODE`` before any work)."""
    if not _known(mode, inp.metric):
        return KernelStatus.UNKNOWN_CODE
    ptr, qnorm, scores = inp.ptr, inp.qnorm, inp.scores
    fills = mode == Mode.FILL or mode == Mode.GRAD_FILL or mode == Mode.TERMS
    bounds = query_chunks(ptr, min(inp.k, inp.trunc), CHUNK_ROWS)
    for item in prange(bounds.size - 1):
        q0 = bounds[item]
        q1 = bounds[item + 1]
        F, I = _block_scratch(ptr, q0, q1)
        neg, own_order = F[Channel.NEG], I[IntChannel.ORDER]
        for q in range(q0, q1):
            start = ptr[q]
            n = ptr[q + 1] - start
            if n < 2 or qnorm[q] == 0.0:
                continue
            kk = min(inp.k, n)
            cut = Query(n, qnorm[q], kk, min(kk, inp.trunc), offsets[q] if fills else 0)
            if mode == Mode.GRAD:
                _sort_query(scores, start, n, neg, own_order)
                query_grad(mode, inp, out, cut, own_order, F, I, deb, False)
            elif mode == Mode.GRAD_LOSS:
                _sort_query(scores, start, n, neg, own_order)
                per_query[q] = query_grad(mode, inp, out, cut, own_order, F, I, deb, False)
            elif mode == Mode.LOSS:
                _sort_query(scores, start, n, neg, own_order)
                per_query[q] = query_loss(inp, out, cut, own_order, F, deb)
            elif mode == Mode.COUNT:
                o = order[start:start + n]
                _sort_query(scores, start, n, neg, o)
                per_query[q] = query_count(inp, out, cut, o, F, deb)
            else:
                query_grad(mode, inp, out, cut, order[start:start + n], F, I, deb, False)
    return KernelStatus.OK


class LabelInputs(NamedTuple):
    """:class:`PassInputs` of ``m`` labels on the same scores and queries, stacked: row ``k`` of each 2-D
    array and entry ``k`` of each option array are label ``k``'s (``label_inputs``)."""

    scores: np.ndarray
    ptr: np.ndarray
    row_gain: np.ndarray  # (m, n)
    qnorm: np.ndarray  # (m, n_queries)
    disc: np.ndarray  # (m, d)
    weights: np.ndarray  # (m, n) (read only where use_weights)
    use_weights: np.ndarray  # (m,) bool
    metric: np.ndarray  # (m,) int64 Metric codes
    k: np.ndarray
    trunc: np.ndarray
    sigma: np.ndarray  # (m,) float64
    norm: np.ndarray  # (m,) bool
    hess_scale: np.ndarray
    fused: bool  # the labels share one pair pass (``_lambdarank_fused.fusable``)
    fused_min_rows: int  # ... for queries of at least this many rows (``_lambdarank_fused.FUSED_MIN_ROWS``)
    fused_loss: bool  # ... in GRAD_LOSS too (``_lambdarank_fused.FUSED_LOSS``)
    walks: np.ndarray  # (n_queries,) bool: a label walks the query's pairs of different gains (:func:`_label_walks`)


def label_inputs(inps: "tuple[PassInputs, ...]") -> LabelInputs:
    """Stack the labels' PassInputs (the same ``scores`` and ``ptr``; a label without weights gets zeros)."""
    n = inps[0].scores.size
    width = max(p.disc.size for p in inps)
    disc = np.zeros((len(inps), width))
    for k, p in enumerate(inps):
        disc[k, :p.disc.size] = p.disc
    weights = np.stack([p.weights if p.weights.size == n else np.zeros(n) for p in inps])
    metric, cutoff = np.array([p.metric for p in inps], dtype=np.int64), np.array([p.k for p in inps], dtype=np.int64)
    trunc = np.array([p.trunc for p in inps], dtype=np.int64)
    sigma, norm = np.array([p.sigma for p in inps], dtype=np.float64), np.array([p.norm for p in inps])
    row_gain, qnorm = np.stack([p.row_gain for p in inps]), np.stack([p.qnorm for p in inps])
    return LabelInputs(inps[0].scores, inps[0].ptr, row_gain, qnorm, disc, weights,
                       np.array([p.use_weights for p in inps]), metric, cutoff, trunc, sigma, norm,
                       np.array([p.hess_scale for p in inps], dtype=np.float64),
                       _lambdarank_fused.fusable(metric, cutoff, trunc, sigma, norm, disc),
                       _lambdarank_fused.FUSED_MIN_ROWS, _lambdarank_fused.FUSED_LOSS,
                       _label_walks(inps[0].ptr, row_gain, qnorm, GR.WALK_SHARE_FUSED))


@njit(cache=True)
def _label(L, k):
    return PassInputs(L.scores, L.ptr, L.row_gain[k], L.qnorm[k], L.disc[k], L.weights[k], L.use_weights[k],
                      L.metric[k], L.k[k], L.trunc[k], L.sigma[k], L.norm[k], L.hess_scale[k])


@njit(cache=True)
def _label_walks(ptr, row_gain, qnorm, share):
    """Per query, whether a label (row ``k`` of ``row_gain`` / ``qnorm``) has few enough pairs of different gains
    (at most ``share``, ``_lambdarank_grades``' ``WALK_SHARE_FUSED``) that each label's own walk beats the fused
    pass (which walks every pair: benchmarks/grade_walk.py, docs/multi-objective.md). It depends on the labels
    only, so :func:`label_inputs` asks it once per data set (it was asked every round, per label: about 2% of a
    two-label round on MQ2008)."""
    nq = ptr.size - 1
    walks = np.zeros(nq, dtype=np.bool_)
    size = 1
    for q in range(nq):
        size = max(size, ptr[q + 1] - ptr[q])
    I = block_scratch_arrays(size)[1]
    for q in range(nq):
        start, n = ptr[q], ptr[q + 1] - ptr[q]
        for k in range(row_gain.shape[0]):
            if n > 1 and qnorm[k][q] != 0.0 and GR.grade_count(row_gain[k][start:start + n], n, I, share) > 0:
                walks[q] = True
                break
    return walks


@njit(cache=True, parallel=True)
def _run_labels(mode, L, grads, hess, per_query, no_i, no_f, deb):
    """``_run_blocks``' GRAD or GRAD_LOSS for the ``m`` labels of ``L`` on the same scores: each query is
    sorted once; with ``L.fused`` its pairs are walked once for all labels (``_lambdarank_fused``), else
    (or where its exp table underflows, or a label's own grade walk is faster: ``L.walks``) once per
    label, written into row ``k`` of ``grads`` / ``hess`` (each query's rows zeroed, then added to as
    ``_run_blocks`` adds; ``per_query[k]``: GRAD_LOSS's utilities); ``no_i``, ``no_f``,
    ``deb``: the empty pair outputs and TERMS record of these modes. A label's results are those of
    ``_run_blocks`` alone, bit for bit: the same order, the same expressions. Returns a KernelStatus
    (``UNKNOWN_CODE`` before any work)."""
    m = L.metric.size
    for k in range(m):
        if not _known(mode, L.metric[k]) or not (mode == Mode.GRAD or mode == Mode.GRAD_LOSS):
            return KernelStatus.UNKNOWN_CODE
    ptr, scores = L.ptr, L.scores
    loss = mode == Mode.GRAD_LOSS
    fused = L.fused and (L.fused_loss or not loss)
    bounds = query_chunks(ptr, min(L.k[0], L.trunc[0]), CHUNK_ROWS)
    for item in prange(bounds.size - 1):
        F, I = _block_scratch(ptr, bounds[item], bounds[item + 1])
        Xl, X = _lambdarank_fused.scratch(m if fused else 0, F.shape[1] - LOSS_LANES if fused else 0)
        sums = np.empty((2, m))
        own_order = I[IntChannel.ORDER]
        for q in range(bounds[item], bounds[item + 1]):
            n = ptr[q + 1] - ptr[q]
            for k in range(m):  # written, not added to: the caller's rows need no zeroing pass (cache-hot here)
                grads[k, ptr[q]:ptr[q + 1]] = 0.0
                hess[k, ptr[q]:ptr[q + 1]] = 0.0
            if n > 1:  # once for every label: the scores are theirs
                _sort_query(scores, ptr[q], n, F[Channel.NEG], own_order)
            if n > 1 and fused and n >= L.fused_min_rows and not L.walks[q] and \
                    _lambdarank_fused.fused_query(loss, L, q, n, own_order, Xl, X, sums, grads, hess, per_query):
                continue
            exp_sigma = np.nan  # the sigma of the query's exp table in F (NaN: none yet)
            for k in range(m if n > 1 else 0):
                inp = _label(L, k)
                if inp.qnorm[q] == 0.0:
                    continue
                kk = min(inp.k, n)
                cut = Query(n, inp.qnorm[q], kk, min(kk, inp.trunc), 0)
                out = PassOutputs(grads[k], hess[k], no_i, no_i, no_f)
                # the exp table depends on the scores and sigma only: made once for the labels that share sigma
                per_query[k, q] = query_grad(mode, inp, out, cut, own_order, F, I, deb, inp.sigma == exp_sigma)
                exp_sigma = inp.sigma
    return KernelStatus.OK


_NO_I = np.zeros(0, dtype=np.int64)
_NO_F = np.zeros(0, dtype=np.float64)
#: The rows of every pair output are int32 (int64 only past int32's range, ``pair_index_dtype``): numba
#: compiles ``_run_blocks`` (and the per-query kernels it calls) once per pair dtype, ~25 s of CPU on a
#: cold cache, and the OLE booster keeps its pairs in int32 (half the index traffic). So the passes
#: without pairs pass int32 empties too, and callers that return int64 rows widen them in place
#: (:func:`int64_pair_rows`).
_NO_PAIRS = np.zeros(0, dtype=np.int32)


def _without_pairs(out_grad: np.ndarray, out_hess: np.ndarray) -> PassOutputs:
    """The outputs of a pass that writes no pairs (their rows typed as every pair pass's: ``_NO_PAIRS``)."""
    return PassOutputs(out_grad, out_hess, _NO_PAIRS, _NO_PAIRS, _NO_F)


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a``. The TERMS record's positions are always passed read-only (the clicks'
    own are, ``customobj.clicks``), the empty record's too: a writable one typed the record otherwise,
    another whole compilation of ``_run_blocks`` (~30 s on a cold cache) in any process using both."""
    view = a.view()
    view.setflags(write=False)
    return view


#: The TERMS record of every other mode (nothing read, nothing written).
_NO_DEBIAS = Debias(read_only(_NO_I), _NO_F, _NO_F, False, _NO_F, _NO_F, _NO_F)

# The drivers pass the mode as a plain int: numba types an IntEnum member argument by walking its class's
# members, about half a millisecond a call (cProfile, issue 41), more than a round's other Python.
# The drivers below are plain Python calling the one parallel block loop: numba writes a cached
# kernel that calls a ``parallel=True`` kernel whose code came from the cache into a library that
# segfaults when loaded by the next process (tests/test_numba_cache.py replays it), so no cached
# kernel calls a parallel one.


@njit(cache=True)
def _serial_sum(values):
    # A serial sum: values.sum() in a parallel kernel would become a thread-dependent reduction.
    total = 0.0
    for q in range(values.size):
        total += values[q]
    return total


def lambdarank_grad_hess(inp: PassInputs, out_grad: np.ndarray, out_hess: np.ndarray) -> int:
    """Adds every query's gradients and hessians into ``out_grad`` / ``out_hess``; returns the status."""
    return _run_blocks(int(Mode.GRAD), inp, _without_pairs(out_grad, out_hess), _NO_I, _NO_I, _NO_F,
                       _NO_DEBIAS)


def lambdarank_grad_hess_loss(inp: PassInputs, out_grad: np.ndarray, out_hess: np.ndarray) -> "tuple[float, int]":
    """``(loss, status)``: ``lambdarank_grad_hess``'s additions (the same bits) and ``lambdarank_loss``'s
    value with each pair's softplus tabled (``_lambdarank_terms.softplus_tabled``: within
    ``SOFTPLUS_TABLE_ERROR`` times the sum of the pairs' ``w |dZ|`` times the norm factors), from one sort
    and one pair pass per query (GRAD_LOSS; ``MultiObjective`` reads both each round)."""
    per_query = np.zeros(inp.ptr.size - 1)
    status = _run_blocks(int(Mode.GRAD_LOSS), inp, _without_pairs(out_grad, out_hess), _NO_I, _NO_I,
                         per_query, _NO_DEBIAS)
    return _serial_sum(per_query), status


def lambdarank_labels(inps: tuple, with_loss: bool, grads: np.ndarray,
                      hess: np.ndarray) -> "tuple[np.ndarray, int]":
    """``(losses, status)``: for label ``k`` of ``inps`` (PassInputs on the same scores and queries),
    ``lambdarank_grad_hess``'s gradients and hessians written into ``grads[k]`` / ``hess[k]`` (what they held is
    not read) and, ``with_loss``,
    ``lambdarank_grad_hess_loss``'s loss as ``losses[k]`` (else 0), the same bits as those calls per label,
    with one sort of each query for all labels (``MultiObjective``'s LambdaRank labels)."""
    return lambdarank_stacked_labels(label_inputs(inps), with_loss, grads, hess)


def lambdarank_stacked_labels(L: LabelInputs, with_loss: bool, grads: np.ndarray,
                              hess: np.ndarray) -> "tuple[np.ndarray, int]":
    """:func:`lambdarank_labels` of labels already stacked by :func:`label_inputs` (``MultiObjective``
    stacks its labels once and replaces only the scores each round)."""
    per_query = np.zeros((L.metric.size, L.ptr.size - 1))
    status = _run_labels(int(Mode.GRAD_LOSS if with_loss else Mode.GRAD), L, grads, hess, per_query, _NO_PAIRS, _NO_F,
                         _NO_DEBIAS)
    return np.array([_serial_sum(per_query[k]) for k in range(L.metric.size)]), status


def lambdarank_loss(inp: PassInputs) -> "tuple[float, int]":
    """``(loss, status)``: the utility summed over queries (serially, in query order)."""
    per_query = np.zeros(inp.ptr.size - 1)
    status = _run_blocks(int(Mode.LOSS), inp, _without_pairs(_NO_F, _NO_F), _NO_I, _NO_I, per_query,
                         _NO_DEBIAS)
    return _serial_sum(per_query), status


def lambdarank_pair_offsets(inp: PassInputs, order: np.ndarray) -> "tuple[np.ndarray, int]":
    """Sorts every query into ``order`` (rows by score); returns ``(offsets, status)``, the offsets
    of each query's pairs with nonzero ``|dZ|`` (size n_queries + 1; the last is the pair count)."""
    nq = inp.ptr.size - 1
    per_query = np.zeros(nq)
    status = _run_blocks(int(Mode.COUNT), inp, _without_pairs(_NO_F, _NO_F), order, _NO_I, per_query,
                         _NO_DEBIAS)
    counts = np.zeros(nq + 1, dtype=np.int64)
    counts[1:] = per_query  # pair counts are below 2**53: exact in float64
    return np.cumsum(counts), status


def lambdarank_pair_fill(inp: PassInputs, with_grad: bool, out: PassOutputs, order: np.ndarray,
                         offsets: np.ndarray) -> int:
    """Writes query ``q``'s pairs (rows, coupling) to ``out.pair_*[offsets[q]:offsets[q + 1]]`` (any
    integer dtype for the rows); with ``with_grad`` also adds the gradients and hessians into
    ``out.grad`` / ``out.hess`` (one pair pass: GRAD_FILL). ``order`` and ``offsets`` come from
    ``lambdarank_pair_offsets``. Returns the status."""
    mode = Mode.GRAD_FILL if with_grad else Mode.FILL
    return _run_blocks(int(mode), inp, out, order, offsets, _NO_F, _NO_DEBIAS)


def lambdarank_pair_terms(inp: PassInputs, deb: Debias, out: PassOutputs, order: np.ndarray,
                          offsets: np.ndarray) -> int:
    """TERMS: writes query ``q``'s pairs (rows; ``out.pair_c`` their debiased hessians) to
    ``out.pair_*[offsets[q]:offsets[q + 1]]`` and their debiased lambdas, losses and undebiased
    estimate costs to ``deb.lam`` / ``deb.cost`` / ``deb.est`` (unweighted, unnormalised;
    ``_lambdarank_terms.unbiased_pair``). ``order`` and ``offsets`` come from
    ``lambdarank_pair_offsets``. Returns the status."""
    return _run_blocks(int(Mode.TERMS), inp, out, order, offsets, _NO_F, deb)


def lambdarank_couplings(inp: PassInputs, with_grad: bool, out_grad: np.ndarray,
                         out_hess: np.ndarray) -> "tuple[np.ndarray, np.ndarray, np.ndarray, int]":
    """``(i, j, c, status)`` of every pair with nonzero ``|dZ|``, grouped by query and by upper
    position; with ``with_grad`` also adds the gradients and hessians (one pair pass: GRAD_FILL)."""
    order = np.empty(inp.ptr[inp.ptr.size - 1], dtype=np.int64)
    offsets, status = lambdarank_pair_offsets(inp, order)
    m = int(offsets[-1])
    out_i, out_j = int64_pair_rows(m, inp.scores.size)
    out_c = np.empty(m, dtype=np.float64)
    if status == KernelStatus.OK:
        status = lambdarank_pair_fill(inp, with_grad, PassOutputs(out_grad, out_hess, out_i.written, out_j.written,
                                                                  out_c), order, offsets)
    return out_i.widened(), out_j.widened(), out_c, status


class Int64Rows(NamedTuple):
    """A pair-row array returned as int64 (the couplings' public dtype) that the pass writes as
    ``written``: int32 in the int64 array's own memory (``_NO_PAIRS``), widened in place afterwards, so no
    second array; ``written`` is the int64 array itself past int32's range."""

    rows: np.ndarray
    written: np.ndarray

    def widened(self) -> np.ndarray:
        """``rows``, holding the values the pass wrote to ``written``."""
        if self.written.dtype != np.int64:
            _widen_in_place(self.rows, self.written)
        return self.rows


def int64_pair_rows(m: int, n_rows: int) -> "tuple[Int64Rows, Int64Rows]":
    """Two :class:`Int64Rows` of ``m`` pairs over ``n_rows`` rows: written as int32 below 2**31 - 1 rows."""
    out = []
    for _ in range(2):
        rows = np.empty(m, dtype=np.int64)
        out.append(Int64Rows(rows, rows.view(np.int32)[:m] if n_rows < 2**31 - 1 else rows))
    return out[0], out[1]


@njit(cache=True)
def _widen_in_place(rows, written):
    # written[k] lies in bytes 4k..4k+3 of rows' memory, rows[k] in 8k..8k+7: from the last down, each
    # store overwrites only written[2k] and written[2k + 1], already read (2k >= k).
    for k in range(written.size - 1, -1, -1):
        rows[k] = written[k]
