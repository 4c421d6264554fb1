"""numba.cuda kernels of the pairwise losses: the GPU drivers of ``_pairwise_kernels`` (RankNet,
RankSVM, MPBoost with every DDF, QBRank, PreferencePairs), calling the CPU's own pair math
(``_pairwise_terms``, through ``device_function``). Data and pair lists travel as records
(:class:`LabelRows`, :class:`PairList`), the loss as its ``PairSpec``.

One thread per row, no atomics. A row sums its own pair terms in the order the CPU kernels add
them into that row, so a row's sum equals the CPU's bit for bit where ``exp`` / ``log`` agree:

- label pairs (``label_pairs_rows``): the rows of the query sorted by label (``order``, built once
  per data set by ``label_order_kernel``). The CPU walks upper positions ``a`` and adds ``-pw g``
  into each lower row, then the upper row's own sum: a row first subtracts its pairs with the
  rows of higher labels (positions ``ptr[q]:block[t]``, in order), then adds its pairs with the
  rows of lower labels (positions ``lower[t]:ptr[q + 1]``).
- explicit pairs (``pair_list_rows``): pairs may share rows across queries, so each row reads
  its own pairs from an incidence list (``inc_ptr``, ``inc_pair``, ``inc_sign``; pairs in list
  order, built once per data set by ``_pairwise_route``) instead of adding atomically. Their losses
  (``pair_list_loss_rows``, ``MultiObjective``'s costs): each pair at its first row, per row in list order.

The listed pairs' couplings (driven by ``_pairwise_route.listed_couplings``: the label pair list of
``_pair_sets.LabelPairs.pair_list``, QBRank's label and explicit pairs, PreferencePairs' pairs), a
one-warp block per fixed chunk of the list (pairs of several queries may share a row, and a chunk
balances the work): ``count_kept_pairs`` then ``fill_kept_pairs`` keep the pairs of coupling > 0, in
list order, as the CPU booster's ``compact_pairs`` does; the offsets come from
``_lambdarank_cuda.scan_pairs``. With bagging, ``count_in_bag`` / ``place_in_bag`` keep the pairs of
coupling > 0 with both rows in the bag, in order (``compact_pairs`` with a bag). All four: each thread
a run of consecutive pairs of its block's chunk, placed by a fixed-order scan of the runs' counts (issue
42, item 2: one thread walking a whole chunk set the coupling time on a long query).
"""
from typing import Any, NamedTuple

from numba import int64

from .._cuda_runtime import cuda_module, device_function
from . import _pairwise_terms as T
from ._block_cuda import QUERY_THREADS, block_scan, block_sum

cuda = cuda_module()

# The pair math is the CPU's (``_pairwise_terms``), compiled for the GPU: NaN for an unknown code, which
# the routes (``_pairwise_route.check_spec``) refuse before any launch.
_theta = device_function(T.pair_theta)
_grad = device_function(T.pair_grad)
_pair_weight = device_function(T.pair_weight)
_terms = device_function(T.pair_terms)


class LabelRows(NamedTuple):
    """What ``label_pairs_rows`` reads of the data: the rows sorted by label per query (``order``,
    ``lower``: ``_pair_sets.LabelPairs``), each row's position in that order and the first position
    of its label block, and the row weights."""

    labels: Any
    ptr: Any
    qid: Any
    order: Any
    lower: Any
    lpos: Any
    block: Any
    weights: Any
    use_w: bool


class PairList(NamedTuple):
    """A list of pairs ``(pi[k], pj[k])`` with ``theta[k]``, per-pair weights (read when ``use_pw``)
    and the row weights (read when ``use_w``)."""

    pi: Any
    pj: Any
    theta: Any
    pair_w: Any
    use_pw: bool
    weights: Any
    use_w: bool


@cuda.jit(cache=True)
def label_pairs_rows(scores, d, spec, out_grad, out_hess):
    """One thread per row: the row's label pairs (``d``: :class:`LabelRows`, ``spec``: a ``PairSpec``)."""
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    q = d.qid[i]
    t = d.lpos[i]
    yi = d.labels[i]
    si = scores[i]
    acc_g = 0.0
    acc_h = 0.0
    for a in range(d.ptr[q], d.block[t]):  # rows with higher labels: this row is their lower row
        j = d.order[a]
        theta = _theta(spec.theta_mode, d.labels[j], yi, spec.p)
        g, c = _grad(spec.kind, scores[j] - si, theta)
        pw = spec.scale
        if d.use_w:
            pw *= _pair_weight(d.weights[j], d.weights[i])
        acc_g -= pw * g
        acc_h += spec.hmul * pw * c
    gi = 0.0
    hi_acc = 0.0
    for b in range(d.lower[t], d.ptr[q + 1]):  # rows with lower labels
        j = d.order[b]
        theta = _theta(spec.theta_mode, yi, d.labels[j], spec.p)
        g, c = _grad(spec.kind, si - scores[j], theta)
        pw = spec.scale
        if d.use_w:
            pw *= _pair_weight(d.weights[i], d.weights[j])
        gi += pw * g
        hi_acc += spec.hmul * pw * c
    out_grad[i] += acc_g + gi
    out_hess[i] += acc_h + hi_acc


@cuda.jit(cache=True)
def label_pairs_loss_rows(scores, d, spec, out):
    """One thread per row ``i`` at label position ``t``: ``out[t]`` = the losses ``pw phi`` of its pairs with
    the rows of lower labels, added in position order (the CPU's ``_query_loss`` for upper position ``t``;
    ``MultiObjective``'s per-label cost, ``_pairwise_route.label_pair_loss_with_cost``)."""
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    t = d.lpos[i]
    yi = d.labels[i]
    si = scores[i]
    acc = 0.0
    for b in range(d.lower[t], d.ptr[d.qid[i] + 1]):
        j = d.order[b]
        phi, _, _ = _terms(spec.kind, si - scores[j], _theta(spec.theta_mode, yi, d.labels[j], spec.p))
        pw = spec.scale
        if d.use_w:
            pw *= _pair_weight(d.weights[i], d.weights[j])
        acc += pw * phi
    out[t] = acc


@cuda.jit(cache=True)
def pair_list_rows(scores, pl, inc_ptr, inc_pair, inc_sign, spec, out_grad, out_hess):
    """One thread per row: the listed pairs ``pl`` (a :class:`PairList`) the row is in, in list order."""
    r = cuda.grid(1)
    if r >= scores.shape[0]:
        return
    acc_g = 0.0
    acc_h = 0.0
    for e in range(inc_ptr[r], inc_ptr[r + 1]):
        pw, g, c = _weighted_terms(scores, pl, spec, inc_pair[e])
        if inc_sign[e] > 0:
            acc_g += pw * g
        else:
            acc_g -= pw * g
        acc_h += spec.hmul * pw * c
    out_grad[r] += acc_g
    out_hess[r] += acc_h


@cuda.jit(cache=True)
def pair_list_loss_rows(scores, pl, inc_ptr, inc_pair, inc_sign, spec, out):
    """One thread per row ``r``: ``out[r]`` = the losses ``pw phi`` of the listed pairs ``pl`` whose first row
    ``pi`` it is, in list order (each pair counted once, for ``pi``'s query: ``MultiObjective``'s per-label
    cost, ``_pairwise_route.qbrank`` / ``preference_pairs`` given ``per_query``)."""
    r = cuda.grid(1)
    if r >= scores.shape[0]:
        return
    acc = 0.0
    for e in range(inc_ptr[r], inc_ptr[r + 1]):
        if inc_sign[e] > 0:
            k = inc_pair[e]
            phi, _, _ = _terms(spec.kind, scores[pl.pi[k]] - scores[pl.pj[k]], pl.theta[k])
            pw = spec.scale
            if pl.use_pw:
                pw *= pl.pair_w[k]
            if pl.use_w:
                pw *= _pair_weight(pl.weights[pl.pi[k]], pl.weights[pl.pj[k]])
            acc += pw * phi
    out[r] = acc


@cuda.jit(device=True)
def _weighted_terms(scores, pl, spec, k):
    """Listed pair ``k``'s weight ``scale * pair_w * (w_i + w_j) / 2`` and its raw ``(g, c)``."""
    i = pl.pi[k]
    j = pl.pj[k]
    g, c = _grad(spec.kind, scores[i] - scores[j], pl.theta[k])
    pw = spec.scale
    if pl.use_pw:
        pw *= pl.pair_w[k]
    if pl.use_w:
        pw *= _pair_weight(pl.weights[i], pl.weights[j])
    return pw, g, c


@cuda.jit(device=True)
def _coupling(scores, pl, spec, k):
    """Pair ``k``'s coupling ``h_ij`` times its weight: ``_pairwise_kernels.pair_list_couplings``."""
    pw, _, c = _weighted_terms(scores, pl, spec, k)
    return pw * c


@cuda.jit(device=True)
def _chunk(q, chunk, m):
    """Pairs ``lo:hi`` of chunk ``q`` of a list of ``m`` pairs."""
    return q * chunk, min(m, (q + 1) * chunk)


@cuda.jit(device=True)
def _run(chunk, m):
    """``(lo, hi)``: this thread's run of its block's chunk of a list of ``m`` pairs (``chunk`` pairs a
    block, block ``q`` the ``q``-th, the last one shorter; thread ``t`` the ``t``-th run of
    ``ceil(pairs of the chunk / blockDim.x)`` consecutive pairs: a short last chunk is spread over the
    threads too). ``lo = hi`` past the chunk's end."""
    start, end = _chunk(cuda.blockIdx.x, chunk, m)
    per = (end - start + cuda.blockDim.x - 1) // cuda.blockDim.x
    lo = min(end, start + cuda.threadIdx.x * per)
    return lo, min(end, lo + per)


@cuda.jit(device=True)
def _kept_run(scores, pl, spec, chunk):
    """``(lo, hi, kept)``: this thread's run (:func:`_run`) of the list ``pl`` and how many of its pairs
    have coupling > 0."""
    lo, hi = _run(chunk, pl.pi.shape[0])
    kept = 0
    for k in range(lo, hi):
        if _coupling(scores, pl, spec, k) > 0.0:
            kept += 1
    return lo, hi, kept


@cuda.jit(cache=True)
def count_kept_pairs(scores, pl, spec, chunk, counts):
    """Block ``q`` (one warp) per chunk of ``chunk`` listed pairs: those with coupling > 0. Each thread
    counts a run of consecutive pairs, then the block sums the runs (integers)."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    if cuda.blockIdx.x >= counts.shape[0]:
        return  # the whole block: no thread reaches a barrier
    _, _, kept = _kept_run(scores, pl, spec, chunk)
    total = block_sum(sh, kept)
    if cuda.threadIdx.x == 0:
        counts[cuda.blockIdx.x] = total


@cuda.jit(cache=True)
def fill_kept_pairs(scores, pl, spec, chunk, offsets, out_i, out_j, out_c):
    """Block ``q`` per chunk: its pairs with coupling > 0, in list order, from ``offsets[q]``. Each thread
    counts its run's kept pairs; one fixed-order scan of the counts over the threads (thread order is
    list order) gives each run its start; each thread computes its run's couplings again (the same
    operations: the same bits) and writes the kept ones."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    q = cuda.blockIdx.x
    if q >= offsets.shape[0] - 1:
        return
    lo, hi, kept = _kept_run(scores, pl, spec, chunk)
    before, _ = block_scan(sh, kept)
    t = offsets[q] + before
    for k in range(lo, hi):
        c = _coupling(scores, pl, spec, k)
        if c > 0.0:
            out_i[t] = pl.pi[k]
            out_j[t] = pl.pj[k]
            out_c[t] = c
            t += 1


@cuda.jit(device=True)
def _kept(pi, pj, pc, in_bag, k):
    return pc[k] > 0.0 and in_bag[pi[k]] and in_bag[pj[k]]


@cuda.jit(device=True)
def _bag_run(pi, pj, pc, in_bag, chunk):
    """``(lo, hi, kept)``: this thread's run (:func:`_run`) and how many of its pairs :func:`_kept` keeps."""
    lo, hi = _run(chunk, pi.shape[0])
    kept = 0
    for k in range(lo, hi):
        if _kept(pi, pj, pc, in_bag, k):
            kept += 1
    return lo, hi, kept


@cuda.jit(cache=True)
def count_in_bag(pi, pj, pc, in_bag, chunk, counts):
    """Block ``q`` (one warp) per chunk of ``chunk`` pairs: those with coupling > 0 and both rows in the
    bag. Each thread counts a run of consecutive pairs, then the block sums the runs (integers)."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    if cuda.blockIdx.x >= counts.shape[0]:
        return  # the whole block: no thread reaches a barrier
    _, _, kept = _bag_run(pi, pj, pc, in_bag, chunk)
    total = block_sum(sh, kept)
    if cuda.threadIdx.x == 0:
        counts[cuda.blockIdx.x] = total


@cuda.jit(cache=True)
def place_in_bag(pi, pj, pc, in_bag, chunk, offsets, out_i, out_j, out_c):
    """Block ``q`` per chunk: the pairs ``count_in_bag`` counts, in list order, from ``offsets[q]``. Each
    thread counts its run's kept pairs; one fixed-order scan of the counts over the threads (thread
    order is list order) gives each run its start; each thread writes its run."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    q = cuda.blockIdx.x
    if q >= offsets.shape[0] - 1:
        return
    lo, hi, kept = _bag_run(pi, pj, pc, in_bag, chunk)
    before, _ = block_scan(sh, kept)
    t = offsets[q] + before
    for k in range(lo, hi):
        if _kept(pi, pj, pc, in_bag, k):
            out_i[t] = pi[k]
            out_j[t] = pj[k]
            out_c[t] = pc[k]
            t += 1


#: The kernels that work a block of ``QUERY_THREADS`` threads per segment (``_launch.launch``): a chunk of
#: a pair list (the listed couplings, the in-bag compaction).
BLOCK_PER_SEGMENT = (count_kept_pairs, fill_kept_pairs, count_in_bag, place_in_bag)
