"""numba.cuda kernels of the losses whose pairs or pair weights follow the current ranking:
LambdaLoss (Wang et al. 2018; its three weightings) and YetiRank (Gulin et al. 2011; CatBoost's
``YetiRank``); the GPU twins of ``_sampled_pairs_kernels``.

The formulas come from ``_listwise_terms`` (pair weights, YetiRank's noise), ``_noise`` (the
seeded streams) and ``_pairwise_kernels.pair_grad`` (the logistic pair gradient), all through
``_cuda_runtime.device_function``; these kernels are the GPU-shaped drivers, float64, no atomics:

- LambdaLoss: the rows' positions by score (``_lambdarank_cuda.rank_rows``, one thread per row,
  counting: the CPU's stable order), then ``lambdaloss_weights`` (one thread per listed label
  pair), then ``_pairwise_cuda.pair_list_rows`` (one thread per row, its pairs in list order from
  the incidence built once per data set), so a row's sum is the CPU's, term by term.
- YetiRank: ``yetirank_ranks`` (one thread per row and permutation, consecutive threads on
  consecutive rows) ranks a row's noisy key among its query's keys by counting; every key is
  recomputed from the query's SplitMix64 stream in O(1) (``splitmix_at``), the same draws the CPU
  takes in order, so the sampled permutations are the CPU's. ``yetirank_rows`` (one thread per row)
  adds the logistic terms of the row's own neighbour pairs (two per permutation, found from its
  positions) in the CPU's list order (by permutation, then position), so its sums are the CPU's
  pair-list loop's, term by term, with no per-query loop (issue 42, item 2); the running
  ``decay^(r - 1)`` is read from a table of the CPU's running product (``yetirank_decays``). Its pair
  couplings (``TreeBooster(device="cuda")``'s OLE criteria, driven by ``_couplings_route``) walk the
  same pairs again, a warp per query (``yetirank_count_pairs``: a warp sum; ``yetirank_fill_pairs``:
  a fixed-order warp scan places the kept pairs) and keep those of coupling > 0, in the CPU's order,
  as the CPU booster does. Its cost (``grad_hess_loss``, ``MultiObjective``'s per-label GPU cost):
  ``yetirank_query_losses`` (one thread per query) adds the logistic losses of the query's sampled pairs
  of the round, in the CPU's list order (``_pairwise_kernels.pair_list_query_losses``: its bits).
"""
from typing import Any, NamedTuple

from numba import int64

from .._cuda_runtime import cuda_module, device_function
from . import _listwise_terms as LT
from . import _block_cuda as CB
from ._block_cuda import QUERY_THREADS
from ._noise import splitmix_at
from ._pairwise_kernels import LOGISTIC, pair_grad
from ._pairwise_terms import pair_terms

cuda = cuda_module()

_pair_weight = device_function(LT.lambdaloss_weight)
_query = device_function(LT.yetirank_query)
_draw = device_function(splitmix_at)
_key = device_function(LT.yetirank_key)
_neighbours = device_function(LT.yetirank_pair)
_yeti_weight = device_function(LT.yetirank_weight)
_grad = device_function(pair_grad)
_terms = device_function(pair_terms)
#: The pair loss of both (RankNet's logistic, ``theta`` = sigma for LambdaLoss, 1 for YetiRank).
_LOGISTIC = int(LOGISTIC)


@cuda.jit(cache=True)
def lambdaloss_weights(pi, pj, pos, row_gain, inv_idcg, mode, mu, out_w):
    """LambdaLoss's weight of every listed label pair at the current positions ``pos``."""
    k = CB.grid_item(pi.shape[0])
    if k >= 0:
        out_w[k] = _pair_weight(mode, row_gain[pi[k]], row_gain[pj[k]], inv_idcg[pi[k]], pos[pi[k]], pos[pj[k]], mu)


class Sampled(NamedTuple):
    """YetiRank's sampled permutations of a round, as its kernels read them."""

    n_perm: int
    order: Any  # order[n_perm lo + p n + position]: the row at that position of permutation p
    rank: Any  # rank[p n_rows + i]: row i's position in permutation p
    decays: Any  # decays[r - 1] = decay^(r - 1), the CPU's running product (``yetirank_decays``)


@cuda.jit(cache=True)
def yetirank_ranks(scores, ptr, qid, sampled, seed, rnd):
    """Thread ``p n + i``: row ``i``'s position in permutation ``p`` of its query (ascending noisy key,
    ties by row), written to ``sampled.rank[p n + i]`` and ``sampled.order[n_perm lo + p n_q + position]``."""
    n_rows = scores.shape[0]
    t = CB.grid_item(n_rows * sampled.n_perm)
    if t < 0:
        return
    i = t % n_rows
    p = t // n_rows
    lo, n, start = _query(ptr, qid[i], seed, rnd)
    if n < 2:
        return
    first = p * n  # the draws of the earlier permutations
    mine = _key(scores[i], _draw(start, first + i - lo))
    r = 0
    for j in range(lo, lo + n):
        other = _key(scores[j], _draw(start, first + j - lo))
        if other < mine or (other == mine and j < i):
            r += 1
    sampled.rank[t] = r
    sampled.order[sampled.n_perm * lo + first + r] = i


@cuda.jit(device=True)
def _neighbours_at(labels, sampled, at, qweight, r):
    """``(a, b, w)``: the sampled neighbours ``order[at - 1]``, ``order[at]`` (positions ``r - 1``,
    ``r``), better labelled first, and their pair weight."""
    a = sampled.order[at - 1]
    b = sampled.order[at]
    swap, gap = _neighbours(labels[a], labels[b])
    if swap:
        a, b = b, a
    return a, b, _yeti_weight(qweight, gap, sampled.decays[r - 1], sampled.n_perm)


@cuda.jit(cache=True)
def yetirank_rows(scores, labels, ptr, qid, qweight, sampled, out_grad, out_hess):
    """Thread ``i``: row ``i``'s sampled neighbour pairs (weight > 0) added into its own gradient and
    hessian in the CPU's list order (by permutation, then position: the pair above the row, then the
    one below), so each sum is the CPU's pair-list loop's, term by term: O(permutations) per row."""
    i = CB.grid_item(scores.shape[0])
    if i < 0:
        return
    q = qid[i]
    lo = ptr[q]
    n = ptr[q + 1] - lo
    g = out_grad[i]
    h = out_hess[i]
    for p in range(sampled.n_perm if n >= 2 else 0):
        r = sampled.rank[p * scores.shape[0] + i]
        for at in range(max(r, 1), min(r + 2, n)):  # the pairs (at - 1, at) of position r
            a, b, w = _neighbours_at(labels, sampled, sampled.n_perm * lo + p * n + at, qweight[q], at)
            if w > 0.0:  # the CPU drops the pairs of weight 0 (equal labels)
                pg, pc = _grad(_LOGISTIC, scores[a] - scores[b], 1.0)
                g = g + w * pg if a == i else g - w * pg
                h += w * pc
    out_grad[i] = g
    out_hess[i] = h


@cuda.jit(cache=True)
def yetirank_query_losses(scores, labels, ptr, qweight, sampled, per_query):
    """Thread ``q``: query ``q``'s loss at the round's sampled pairs, ``w log(1 + e^{-(s_a - s_b)})`` of each
    neighbour pair of weight > 0 added in the CPU's list order (by permutation, then position), into
    ``per_query[q]`` (0 for a query of fewer than two rows): ``pair_list_query_losses``' terms and order."""
    q = CB.grid_item(ptr.shape[0] - 1)
    if q < 0:
        return
    lo = ptr[q]
    n = ptr[q + 1] - lo
    acc = 0.0
    for p in range(sampled.n_perm if n >= 2 else 0):
        for r in range(1, n):
            a, b, w = _neighbours_at(labels, sampled, sampled.n_perm * lo + p * n + r, qweight[q], r)
            if w > 0.0:  # the CPU drops the pairs of weight 0 (equal labels)
                acc = CB.add_rn(acc, w * _terms(_LOGISTIC, scores[a] - scores[b], 1.0)[0])
    per_query[q] = acc


@cuda.jit(device=True)
def _sampled_pair(scores, labels, ptr, qweight, sampled, q, e):
    """``(a, b, c)``: query ``q``'s ``e``-th sampled pair in the CPU's order (permutation
    ``e // (n - 1)``, position ``e % (n - 1) + 1``) and its coupling, 0 for a pair of weight 0 (the
    CPU drops it) or past the query's last pair."""
    lo = ptr[q]
    n = ptr[q + 1] - lo
    if n < 2 or e >= sampled.n_perm * (n - 1):
        return 0, 0, 0.0
    p = e // (n - 1)
    r = e - p * (n - 1) + 1
    a, b, w = _neighbours_at(labels, sampled, sampled.n_perm * lo + p * n + r, qweight[q], r)
    if w <= 0.0:
        return a, b, 0.0
    return a, b, w * _grad(_LOGISTIC, scores[a] - scores[b], 1.0)[1]


@cuda.jit(device=True)
def _steps(ptr, sampled, q):
    """How many ``blockDim.x``-wide steps query ``q``'s sampled pairs take."""
    n = ptr[q + 1] - ptr[q]
    m = sampled.n_perm * (n - 1) if n >= 2 else 0
    return (m + cuda.blockDim.x - 1) // cuda.blockDim.x


@cuda.jit(cache=True)
def yetirank_count_pairs(scores, labels, ptr, qweight, sampled, counts):
    """YetiRank's couplings, COUNT pass: block ``q`` (one warp) counts query ``q``'s sampled pairs of
    coupling > 0, its lanes taking the pairs a warp's width at a time."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    q, _, _ = CB.query_block(ptr)
    if q < 0:
        return  # the whole block: no thread reaches a barrier
    kept = 0
    for k in range(_steps(ptr, sampled, q)):
        if _sampled_pair(scores, labels, ptr, qweight, sampled, q, k * cuda.blockDim.x + cuda.threadIdx.x)[2] > 0.0:
            kept += 1
    total = CB.block_sum(sh, kept)
    if cuda.threadIdx.x == 0:
        counts[q] = total


@cuda.jit(cache=True)
def yetirank_fill_pairs(scores, labels, ptr, qweight, sampled, offsets, out_i, out_j, out_c):
    """YetiRank's couplings, FILL pass: block ``q``'s counted pairs ``(i, j, w h)`` from ``offsets[q]``,
    placed in the CPU's order by a fixed-order scan of each step's kept flags."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=int64)
    q, _, _ = CB.query_block(ptr)
    if q < 0:
        return
    t = offsets[q]
    for k in range(_steps(ptr, sampled, q)):
        a, b, c = _sampled_pair(scores, labels, ptr, qweight, sampled, q, k * cuda.blockDim.x + cuda.threadIdx.x)
        t = CB.place_kept(sh, t, a, b, c, (out_i, out_j, out_c))


#: The kernels that work a block of ``QUERY_THREADS`` threads (a warp) per query (``_launch.launch``).
BLOCK_PER_SEGMENT = (yetirank_count_pairs, yetirank_fill_pairs)
