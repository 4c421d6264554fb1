"""Numba kernels of the losses whose pairs or pair weights follow the current ranking: LambdaLoss's
pair weights and YetiRank's sampled pairs (the CPU twins of ``_sampled_pairs_cuda``).

**LambdaLoss** (Wang, Li, Golbandi, Bendersky, Najork 2018, sec. 4-5).

With 0-based positions ``r`` by current score and ``D(r) = 1/log2(2 + r)`` (``_dcg_kernels``), the
weight of a label pair ``y_i > y_j`` (gains ``G = 2^y - 1``, divided by the query's ideal DCG):

- ``NDCG1``:   ``G_i D(r_i)``                                   (NDCG-Loss1)
- ``NDCG2``:   ``|G_i - G_j| delta_ij``                          (NDCG-Loss2)
- ``NDCG2PP``: ``|G_i - G_j| (|D(r_i) - D(r_j)| + mu delta_ij)``  (NDCG-Loss2++)

with ``delta_ij = D(|r_i - r_j| - 1) - D(|r_i - r_j|)``, the paper's
``|1/D_{|i-j|} - 1/D_{|i-j|+1}|`` in 1-based ranks. The weight is ``_listwise_terms.lambdaloss_weight``,
shared with the GPU kernels.

**YetiRank** (Gulin, Kuralenok, Pavlov 2011; CatBoost's ``GenerateYetiRankPairsForQuery`` in
``catboost/private/libs/algo_helpers/yetirank_helpers.cpp``). Per query and permutation, every
row's score gets logistic noise, ``s_i + log(u / (1.000001 - u))`` (CatBoost multiplies ``exp(s_i)`` by ``u / (1.000001 - u)``: the same order), the rows are sorted
by the noisy score, and each neighbouring pair at positions ``(r - 1, r)`` whose labels differ
gets the weight ``YETI_SCALE * decay^(r - 1) * |y_a - y_b| * w_q / permutations``, the better
labelled row first. The uniforms come from the query's own SplitMix64 stream (``_noise.py``),
seeded by ``(seed, round, query)``: the pairs do not depend on the thread count. The per-row and
per-pair formulas are ``_listwise_terms``' (``yetirank_key``, ``yetirank_pair``, ``yetirank_weight``),
shared with the GPU kernels.
"""
import numpy as np
from numba import njit, prange

from .._dcg_kernels import discount_table, ideal_dcg_query
from ._listwise_terms import (NDCG1, NDCG2, NDCG2PP, NOISE_ONE, YETI_SCALE, lambdaloss_weight, yetirank_key,
                              yetirank_pair, yetirank_query, yetirank_weight)
from ._noise import splitmix_uniform

__all__ = ["NDCG1", "NDCG2", "NDCG2PP", "WEIGHTINGS", "score_positions", "inverse_ideal_dcg", "lambdaloss_pair_weights",
           "NOISE_ONE", "YETI_SCALE", "yetirank_pairs"]

#: ``LambdaLoss(weighting=...)`` -> the kernels' weighting code (the CPU's and the GPU route's one map).
WEIGHTINGS = {"ndcg1": NDCG1, "ndcg2": NDCG2, "ndcg2++": NDCG2PP}


@njit(cache=True, parallel=True)
def score_positions(scores, ptr, out_pos):
    """0-based position of each row in its query sorted by score descending (ties: row order)."""
    for q in prange(ptr.size - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        order = np.argsort(-scores[lo:hi], kind="mergesort")
        for r in range(hi - lo):
            out_pos[lo + order[r]] = r


@njit(cache=True)
def inverse_ideal_dcg(row_gain, ptr):
    """``1 / IDCG`` of each query's rows (0 where IDCG is 0: such queries contribute nothing)."""
    out = np.zeros(row_gain.size)
    n_max = 1
    for q in range(ptr.size - 1):
        n_max = max(n_max, ptr[q + 1] - ptr[q])
    disc = discount_table(n_max, n_max)
    for q in range(ptr.size - 1):
        idcg = ideal_dcg_query(row_gain, ptr[q], ptr[q + 1], disc, ptr[q + 1] - ptr[q])
        if idcg > 0.0:
            for t in range(ptr[q], ptr[q + 1]):
                out[t] = 1.0 / idcg
    return out


@njit(cache=True, parallel=True)
def lambdaloss_pair_weights(pi, pj, pos, row_gain, inv_idcg, mode, mu, out_w):
    """Weight of every pair ``(pi[k], pj[k])`` (``y_i > y_j``) under the weighting ``mode``."""
    if mode != NDCG1 and mode != NDCG2 and mode != NDCG2PP:
        raise ValueError("lambdaloss_pair_weights: unknown weighting")
    for k in prange(pi.size):
        i = pi[k]
        j = pj[k]
        out_w[k] = lambdaloss_weight(mode, row_gain[i], row_gain[j], inv_idcg[i], pos[i], pos[j], mu)


@njit(cache=True, parallel=True)
def yetirank_pairs(scores, labels, ptr, qweight, n_perm, decay, seed, rnd, offsets, out_i, out_j, out_w):
    """Writes the ``(n - 1) n_perm`` sampled neighbour pairs of each query of two rows or more from
    ``offsets[q]``; pairs of equal labels get weight 0 (the caller drops them)."""
    for q in prange(ptr.size - 1):
        lo, n, state = yetirank_query(ptr, q, seed, rnd)
        if n < 2:
            continue
        k = offsets[q]
        noisy = np.empty(n)
        for _ in range(n_perm):
            for t in range(n):
                u, state = splitmix_uniform(state)
                noisy[t] = yetirank_key(scores[lo + t], u)
            order = np.argsort(noisy, kind="mergesort")
            dec = 1.0
            for r in range(1, n):
                a = lo + order[r - 1]
                b = lo + order[r]
                swap, gap = yetirank_pair(labels[a], labels[b])
                if swap:
                    a, b = b, a
                out_i[k] = a
                out_j[k] = b
                out_w[k] = yetirank_weight(qweight[q], gap, dec, n_perm)
                k += 1
                dec *= decay
