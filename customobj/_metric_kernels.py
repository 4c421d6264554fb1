"""Numba kernels of the ranking metrics (docs/formulas.md, "Metrics"): one function per query + an outer loop.

Conventions shared by every kernel here:

* ``ptr`` are int64 query offsets, rows ``ptr[q]:ptr[q+1]`` form query ``q``.
* Sort-based metrics rank rows by descending score with a *stable* sort (equal scores keep row
  order); ``pessimistic`` instead puts the lower label first among equal scores.
* Outer loops write ``out_value[q]`` and ``out_status[q]``: ``STATUS_OK``, ``STATUS_EMPTY_GROUP``
  (size-0 query, value 0.0) or ``STATUS_UNDEFINED`` (the metric has no ideal to normalise by:
  IDCG = 0, or no relevant document; value 0.0). Python applies the ``empty`` policy, so the
  kernels never divide by zero and never produce NaN.
* ``binary_relevance_all`` picks its metric by a :class:`BinaryMetric` code; an unknown code
  computes nothing and returns ``KernelStatus.UNKNOWN_CODE`` (``customobj._kernel_status``).
"""
from enum import IntEnum

import numpy as np
from numba import njit

from ._dcg_kernels import ideal_dcg_query  # noqa: F401  (the metrics' IDCG; its home is _dcg_kernels)
from ._kernel_status import KernelStatus


class QueryStatus(IntEnum):
    """What each outer loop writes to ``out_status[q]``."""

    OK = 0
    EMPTY_GROUP = 1  # a size-0 query (value 0.0)
    UNDEFINED = 2  # no ideal to normalise by (value 0.0)


#: The pre-enum names of the statuses (aliases of the members).
STATUS_OK, STATUS_EMPTY_GROUP, STATUS_UNDEFINED = QueryStatus


class BinaryMetric(IntEnum):
    """The metric of ``binary_relevance_all`` (relevant = label > 0)."""

    AVERAGE_PRECISION = 0
    RECIPROCAL_RANK = 1


@njit(cache=True)
def rank_order(scores, labels, lo, hi, pessimistic):
    """Local indices (0..n-1) of rows ``lo:hi`` by descending score; ties stable or pessimistic."""
    n = hi - lo
    neg = np.empty(n, dtype=np.float64)
    if pessimistic:
        # Stable sort by label ascending first, then a stable sort by score keeps that
        # label order inside every block of equal scores.
        first = np.argsort(labels[lo:hi], kind="mergesort")
        for t in range(n):
            neg[t] = -scores[lo + first[t]]
        second = np.argsort(neg, kind="mergesort")
        out = np.empty(n, dtype=np.int64)
        for t in range(n):
            out[t] = first[second[t]]
        return out
    for t in range(n):
        neg[t] = -scores[lo + t]
    return np.argsort(neg, kind="mergesort")


@njit(cache=True)
def dcg_of_order(order, gains, lo, disc, k):
    """DCG@k = sum_{r<k} gain(row at rank r) * disc[r] of one query ranked by ``order`` (its rows, from ``lo``)."""
    n = order.shape[0]
    kk = n if k > n else k
    total = 0.0
    for r in range(kk):
        total += gains[lo + order[r]] * disc[r]
    return total


@njit(cache=True)
def dcg_query(scores, gains, labels, lo, hi, disc, k, pessimistic):
    """DCG@k = sum_{r<k} gain(row at rank r) * disc[r] for one query."""
    return dcg_of_order(rank_order(scores, labels, lo, hi, pessimistic), gains, lo, disc, k)


@njit(cache=True)
def _query_has_rows(ptr, q, out_value, out_status):
    """Zero query ``q``'s value; an empty query is marked ``STATUS_EMPTY_GROUP`` (False returned)."""
    out_value[q] = 0.0
    if ptr[q + 1] == ptr[q]:
        out_status[q] = STATUS_EMPTY_GROUP
        return False
    return True


@njit(cache=True)
def dcg_all(scores, gains, labels, ptr, disc, k, pessimistic, normalize, out_value, out_status):
    """Per-query DCG@k, or NDCG@k when ``normalize`` (IDCG = 0 -> STATUS_UNDEFINED)."""
    for q in range(ptr.shape[0] - 1):
        if not _query_has_rows(ptr, q, out_value, out_status):
            continue
        lo = ptr[q]
        hi = ptr[q + 1]
        d = dcg_query(scores, gains, labels, lo, hi, disc, k, pessimistic)
        if not normalize:
            out_value[q] = d
            out_status[q] = STATUS_OK
            continue
        ideal = ideal_dcg_query(gains, lo, hi, disc, k)
        if ideal <= 0.0:
            out_status[q] = STATUS_UNDEFINED
        else:
            out_value[q] = d / ideal
            out_status[q] = STATUS_OK


@njit(cache=True)
def err_query(scores, labels, prob, lo, hi, k, pessimistic):
    """ERR@k = sum_r (1/r) R_r prod_{i<r} (1 - R_i), with R precomputed per row in ``prob``."""
    n = hi - lo
    order = rank_order(scores, labels, lo, hi, pessimistic)
    kk = n if k > n else k
    not_stopped = 1.0
    total = 0.0
    for r in range(kk):
        p = prob[lo + order[r]]
        total += not_stopped * p / (r + 1.0)
        not_stopped *= 1.0 - p
    return total


@njit(cache=True)
def err_all(scores, labels, prob, ptr, k, pessimistic, out_value, out_status):
    for q in range(ptr.shape[0] - 1):
        if not _query_has_rows(ptr, q, out_value, out_status):
            continue
        lo = ptr[q]
        hi = ptr[q + 1]
        out_value[q] = err_query(scores, labels, prob, lo, hi, k, pessimistic)
        out_status[q] = STATUS_OK


@njit(cache=True)
def count_relevant(labels, lo, hi):
    """The relevant rows (label > 0) of the query ``lo:hi``."""
    n_rel = 0
    for i in range(lo, hi):
        if labels[i] > 0.0:
            n_rel += 1
    return n_rel


@njit(cache=True)
def average_precision_query(scores, labels, lo, hi, k, pessimistic):
    """AP@k = sum_{r<=k, rel} P@r / min(R, k); R = number of relevant (y > 0) rows. -1 if R = 0."""
    n = hi - lo
    n_rel = count_relevant(labels, lo, hi)
    if n_rel == 0:
        return -1.0
    order = rank_order(scores, labels, lo, hi, pessimistic)
    kk = n if k > n else k
    hits = 0
    total = 0.0
    for r in range(kk):
        if labels[lo + order[r]] > 0.0:
            hits += 1
            total += hits / (r + 1.0)
    denom = n_rel if n_rel < kk else kk
    return total / denom


@njit(cache=True)
def reciprocal_rank_query(scores, labels, lo, hi, k, pessimistic):
    """1 / rank of the first relevant row within the top k (0 if none there); -1 if no relevant row."""
    if count_relevant(labels, lo, hi) == 0:
        return -1.0
    n = hi - lo
    order = rank_order(scores, labels, lo, hi, pessimistic)
    kk = n if k > n else k
    for r in range(kk):
        if labels[lo + order[r]] > 0.0:
            return 1.0 / (r + 1.0)
    return 0.0


@njit(cache=True)
def binary_relevance_all(scores, labels, ptr, k, pessimistic, which, out_value, out_status):
    """``which`` (a :class:`BinaryMetric` code): average precision or reciprocal rank per query;
    returns the KernelStatus (an unknown ``which`` writes nothing)."""
    if which != BinaryMetric.AVERAGE_PRECISION and which != BinaryMetric.RECIPROCAL_RANK:
        return KernelStatus.UNKNOWN_CODE
    for q in range(ptr.shape[0] - 1):
        if not _query_has_rows(ptr, q, out_value, out_status):
            continue
        lo = ptr[q]
        hi = ptr[q + 1]
        if which == BinaryMetric.AVERAGE_PRECISION:
            v = average_precision_query(scores, labels, lo, hi, k, pessimistic)
        else:
            v = reciprocal_rank_query(scores, labels, lo, hi, k, pessimistic)
        if v < 0.0:
            out_status[q] = STATUS_UNDEFINED
        else:
            out_value[q] = v
            out_status[q] = STATUS_OK
    return KernelStatus.OK


@njit(cache=True)
def misordered_query(scores, labels, lo, hi):
    """(pairs with y_i > y_j and s_i <= s_j, pairs with y_i != y_j) of one query."""
    bad = 0
    total = 0
    for i in range(lo, hi):
        for j in range(i + 1, hi):
            if labels[i] > labels[j]:
                total += 1
                if scores[i] <= scores[j]:
                    bad += 1
            elif labels[j] > labels[i]:
                total += 1
                if scores[j] <= scores[i]:
                    bad += 1
    return bad, total


@njit(cache=True)
def misordered_all(scores, labels, ptr, out_bad, out_total):
    for q in range(ptr.shape[0] - 1):
        bad, total = misordered_query(scores, labels, ptr[q], ptr[q + 1])
        out_bad[q] = bad
        out_total[q] = total


@njit(cache=True)
def count_label_pairs(labels, ptr):
    """Number of within-query pairs with different labels (all queries)."""
    total = 0
    for q in range(ptr.shape[0] - 1):
        for i in range(ptr[q], ptr[q + 1]):
            for j in range(i + 1, ptr[q + 1]):
                if labels[i] != labels[j]:
                    total += 1
    return total


@njit(cache=True)
def fill_pair_margins(scores, labels, ptr, out_abs_diff, out_correct):
    """Every pair with different labels, in (query, i, j>i) order: |s_i - s_j| and whether the
    higher-labelled row has the strictly higher score."""
    m = 0
    for q in range(ptr.shape[0] - 1):
        for i in range(ptr[q], ptr[q + 1]):
            for j in range(i + 1, ptr[q + 1]):
                if labels[i] == labels[j]:
                    continue
                d = scores[i] - scores[j]
                out_abs_diff[m] = abs(d)
                if labels[i] > labels[j]:
                    out_correct[m] = d > 0.0
                else:
                    out_correct[m] = d < 0.0
                m += 1
    return m


@njit(cache=True)
def top_fraction_correct(abs_diff, correct, n_top):
    """Fraction of correct pairs among the ``n_top`` largest |s_x - s_y| (stable on ties)."""
    n = abs_diff.shape[0]
    neg = np.empty(n, dtype=np.float64)
    for t in range(n):
        neg[t] = -abs_diff[t]
    order = np.argsort(neg, kind="mergesort")
    good = 0
    for t in range(n_top):
        if correct[order[t]]:
            good += 1
    return good / n_top


# ------------------------------------------------------------------------------------------------
# optimal linear combination of two rankers (Burges 2010, sec. 7.1)
# ------------------------------------------------------------------------------------------------
@njit(cache=True)
def query_crossings(s1, s2, gains, lo, hi):
    """Sorted distinct alphas in (0, 1) where two rows of the query with different gains swap
    order under alpha*s1 + (1-alpha)*s2 (equal-gain swaps cannot change DCG)."""
    n = hi - lo
    buf = np.empty(n * (n - 1) // 2, dtype=np.float64)
    m = 0
    for i in range(lo, hi):
        for j in range(i + 1, hi):
            if gains[i] == gains[j]:
                continue
            d1 = s1[i] - s1[j]
            d2 = s2[i] - s2[j]
            den = d2 - d1
            if den == 0.0:  # parallel: the pair never swaps
                continue
            a = d2 / den  # alpha*d1 + (1-alpha)*d2 = 0
            if a > 0.0 and a < 1.0:
                buf[m] = a
                m += 1
    c = np.sort(buf[:m])
    u = 0
    for t in range(m):
        if u == 0 or c[t] != c[u - 1]:
            c[u] = c[t]
            u += 1
    return c[:u]


@njit(cache=True)
def combined_dcg_query(s1, s2, gains, lo, hi, alpha, disc, k):
    """DCG@k of the query ranked by alpha*s1 + (1-alpha)*s2 (stable on ties)."""
    n = hi - lo
    neg = np.empty(n, dtype=np.float64)
    for t in range(n):
        neg[t] = -(alpha * s1[lo + t] + (1.0 - alpha) * s2[lo + t])
    return dcg_of_order(np.argsort(neg, kind="mergesort"), gains, lo, disc, k)


@njit(cache=True)
def count_pairs_upper(ptr):
    total = 0
    for q in range(ptr.shape[0] - 1):
        n = ptr[q + 1] - ptr[q]
        total += n * (n - 1) // 2
    return total


@njit(cache=True)
def combination_steps(s1, s2, gains, ptr, disc, k, out_at0, out_at1, out_first, out_status,
                      out_alpha, out_delta):
    """Per query: NDCG@k at alpha = 0, at alpha = 1, on the first open interval (0, c_1), and one
    event (c_t, NDCG on (c_t, c_{t+1}) - NDCG on (c_{t-1}, c_t)) per distinct crossing c_t.

    Interval values are evaluated at midpoints, so no tie at a crossing is ever evaluated.
    Returns the number of events written to ``out_alpha`` / ``out_delta``.
    """
    m = 0
    for q in range(ptr.shape[0] - 1):
        lo = ptr[q]
        hi = ptr[q + 1]
        out_at0[q] = 0.0
        out_at1[q] = 0.0
        out_first[q] = 0.0
        if hi == lo:
            out_status[q] = STATUS_EMPTY_GROUP
            continue
        ideal = ideal_dcg_query(gains, lo, hi, disc, k)
        if ideal <= 0.0:
            out_status[q] = STATUS_UNDEFINED
            continue
        out_status[q] = STATUS_OK
        out_at0[q] = combined_dcg_query(s1, s2, gains, lo, hi, 0.0, disc, k) / ideal
        out_at1[q] = combined_dcg_query(s1, s2, gains, lo, hi, 1.0, disc, k) / ideal
        c = query_crossings(s1, s2, gains, lo, hi)
        left = 0.0
        prev = 0.0
        for t in range(c.shape[0] + 1):
            right = c[t] if t < c.shape[0] else 1.0
            v = combined_dcg_query(s1, s2, gains, lo, hi, 0.5 * (left + right), disc, k) / ideal
            if t == 0:
                out_first[q] = v
            else:
                out_alpha[m] = left
                out_delta[m] = v - prev
                m += 1
            prev = v
            left = right
    return m
