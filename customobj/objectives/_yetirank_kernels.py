"""Numba kernel of YetiRank's pair sampling (Gulin, Kuralenok, Pavlov 2011; CatBoost's
``GenerateYetiRankPairsForQuery`` in ``catboost/private/libs/algo_helpers/yetirank_helpers.cpp``).

Per query and permutation, every row's score gets logistic noise, ``s_i + log(u / (1.000001 - u))``
(CatBoost multiplies ``exp(s_i)`` by ``u / (1.000001 - u)``: the same order), the rows are sorted
by the noisy score, and each neighbouring pair at positions ``(r - 1, r)`` whose labels differ
gets the weight ``YETI_SCALE * decay^(r - 1) * |y_a - y_b| * w_q / permutations``, the better
labelled row first. The uniforms come from the query's own SplitMix64 stream (``_noise.py``),
seeded by ``(seed, round, query)``: the pairs do not depend on the thread count. The per-row and
per-pair formulas are ``_listwise_terms``' (``yetirank_key``, ``yetirank_pair``, ``yetirank_weight``),
shared with the GPU kernels (``_cuda_sampled_pairs``).
"""
import numpy as np
from numba import njit, prange

from ._listwise_terms import NOISE_ONE, YETI_SCALE, yetirank_key, yetirank_pair, yetirank_weight
from ._noise import query_stream, splitmix_uniform

__all__ = ["NOISE_ONE", "YETI_SCALE", "yetirank_pairs"]


@njit(cache=True, parallel=True)
def yetirank_pairs(scores, labels, ptr, qweight, n_perm, decay, seed, rnd, offsets, out_i, out_j, out_w):
    """Writes the ``(n - 1) n_perm`` sampled neighbour pairs of each query of two rows or more from
    ``offsets[q]``; pairs of equal labels get weight 0 (the caller drops them)."""
    for q in prange(ptr.size - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        n = hi - lo
        if n < 2:
            continue
        state = query_stream(seed, rnd, q)
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
