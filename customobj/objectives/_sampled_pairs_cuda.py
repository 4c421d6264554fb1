"""numba.cuda kernels of the losses whose pairs or pair weights follow the current ranking:
LambdaLoss (Wang et al. 2018; its three weightings) and YetiRank (Gulin et al. 2011; CatBoost's
``YetiRank``); the GPU twins of ``_sampled_pairs_kernels`` and ``_sampled_pairs_kernels``.

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
  takes in order, so the sampled permutations are the CPU's. ``yetirank_sums`` (one thread per
  query; its rows belong to no other query) walks the neighbour pairs in the CPU's list order (by
  permutation, then position) and adds their logistic terms into its rows, as the CPU's pair-list
  loop does. Its pair couplings (``TreeBooster(device="cuda")``'s OLE criteria, driven by
  ``_couplings_route``) walk the same pairs again: ``yetirank_count_pairs`` then
  ``yetirank_fill_pairs`` keep those of coupling > 0, in that order, as the CPU booster does.
"""
from .._cuda_runtime import cuda_module, device_function
from . import _listwise_terms as LT
from ._listwise_cuda import _keep_pair
from ._noise import query_stream, splitmix_at
from ._pairwise_kernels import LOGISTIC, pair_grad

cuda = cuda_module()

_pair_weight = device_function(LT.lambdaloss_weight)
_stream = device_function(query_stream)
_draw = device_function(splitmix_at)
_key = device_function(LT.yetirank_key)
_neighbours = device_function(LT.yetirank_pair)
_yeti_weight = device_function(LT.yetirank_weight)
_grad = device_function(pair_grad)
#: The pair loss of both (RankNet's logistic, ``theta`` = sigma for LambdaLoss, 1 for YetiRank).
_LOGISTIC = int(LOGISTIC)


@cuda.jit(cache=True)
def lambdaloss_weights(pi, pj, pos, row_gain, inv_idcg, mode, mu, out_w):
    """LambdaLoss's weight of every listed label pair at the current positions ``pos``."""
    k = cuda.grid(1)
    if k >= pi.shape[0]:
        return
    i = pi[k]
    j = pj[k]
    out_w[k] = _pair_weight(mode, row_gain[i], row_gain[j], inv_idcg[i], pos[i], pos[j], mu)


@cuda.jit(cache=True)
def yetirank_ranks(scores, ptr, qid, n_perm, seed, rnd, order):
    """Thread ``p n + i``: row ``i``'s position in permutation ``p`` of its query (ascending noisy key,
    ties by row), written to ``order[n_perm lo + p n_q + position]``."""
    t = cuda.grid(1)
    n_rows = scores.shape[0]
    if t >= n_rows * n_perm:
        return
    i = t % n_rows
    p = t // n_rows
    q = qid[i]
    lo = ptr[q]
    hi = ptr[q + 1]
    n = hi - lo
    if n < 2:
        return
    start = _stream(seed, rnd, q)
    first = p * n  # the draws of the earlier permutations
    mine = _key(scores[i], _draw(start, first + i - lo))
    r = 0
    for j in range(lo, hi):
        other = _key(scores[j], _draw(start, first + j - lo))
        if other < mine or (other == mine and j < i):
            r += 1
    order[n_perm * lo + first + r] = i


@cuda.jit(device=True)
def _neighbours_at(labels, order, at, qweight, dec, n_perm):
    """``(a, b, w)``: the sampled neighbours ``order[at - 1]``, ``order[at]``, better labelled first,
    and their pair weight (``dec`` the running ``decay^(r - 1)``)."""
    a = order[at - 1]
    b = order[at]
    swap, gap = _neighbours(labels[a], labels[b])
    if swap:
        a, b = b, a
    return a, b, _yeti_weight(qweight, gap, dec, n_perm)


@cuda.jit(cache=True)
def yetirank_sums(scores, labels, ptr, qweight, n_perm, decay, order, out_grad, out_hess):
    """Adds each query's sampled neighbour pairs (weight > 0) in the CPU's list order."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    lo = ptr[q]
    n = ptr[q + 1] - lo
    for p in range(n_perm if n >= 2 else 0):
        dec = 1.0
        for r in range(1, n):
            a, b, w = _neighbours_at(labels, order, n_perm * lo + p * n + r, qweight[q], dec, n_perm)
            dec *= decay
            if w > 0.0:  # the CPU drops the pairs of weight 0 (equal labels)
                g, c = _grad(_LOGISTIC, scores[a] - scores[b], 1.0)
                out_grad[a] += w * g
                out_grad[b] -= w * g
                out_hess[a] += w * c
                out_hess[b] += w * c


@cuda.jit(device=True)
def _kept_pairs(scores, labels, ptr, qweight, n_perm, decay, order, q, out_i, out_j, out_c, at):
    """Query ``q``'s sampled pairs of coupling > 0 in the CPU's order, written from ``at`` when
    ``at >= 0`` (else only counted); returns how many."""
    lo = ptr[q]
    n = ptr[q + 1] - lo
    kept = 0
    for p in range(n_perm if n >= 2 else 0):
        dec = 1.0
        for r in range(1, n):
            a, b, w = _neighbours_at(labels, order, n_perm * lo + p * n + r, qweight[q], dec, n_perm)
            dec *= decay
            if w > 0.0:
                c = w * _grad(_LOGISTIC, scores[a] - scores[b], 1.0)[1]
                kept = _keep_pair(out_i, out_j, out_c, at, kept, a, b, c)
    return kept


@cuda.jit(cache=True)
def yetirank_count_pairs(scores, labels, ptr, qweight, n_perm, decay, order, counts):
    """YetiRank's couplings, COUNT pass: per query its sampled pairs of coupling > 0."""
    q = cuda.grid(1)
    if q < ptr.shape[0] - 1:
        counts[q] = _kept_pairs(scores, labels, ptr, qweight, n_perm, decay, order, q, counts, counts, scores, -1)


@cuda.jit(cache=True)
def yetirank_fill_pairs(scores, labels, ptr, qweight, n_perm, decay, order, offsets, out_i, out_j, out_c):
    """YetiRank's couplings, FILL pass: the counted pairs ``(i, j, w h)`` from ``offsets[q]``."""
    q = cuda.grid(1)
    if q < ptr.shape[0] - 1:
        _kept_pairs(scores, labels, ptr, qweight, n_perm, decay, order, q, out_i, out_j, out_c, offsets[q])
