"""Optimal linear combination of two rankers (Burges 2010, sec. 7.1; Wu, Burges, Svore & Gao 2007).

For ``s(alpha) = alpha*s1 + (1-alpha)*s2`` the ranking of a query changes only at the alphas
where two of its rows swap, ``alpha = d2 / (d2 - d1)`` with ``d = s_i - s_j``; between two such
crossings NDCG@k is constant. So the mean NDCG@k over [0, 1] is a step function with finitely many
steps, and its maximum is found exactly by evaluating each query once per interval of its own
crossings and sweeping the merged step changes of all queries.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np

from customobj import _metric_kernels as K
from customobj._validation import as_labels, as_scores, check_pair_budget
from customobj.groups import Groups, as_groups
from customobj.metrics import _discounts, _empty, _k, _row_gains, ndcg

__all__ = ["best_linear_combination"]


def best_linear_combination(s1: Any, s2: Any, labels: Any, group: Union[Groups, Any], k: Optional[int] = 10, *,
                            empty: Union[float, str] = 1.0, gain: Optional[Any] = None) -> Tuple[float, float]:
    """Return ``(alpha, ndcg)`` maximising the mean NDCG@k of ``alpha*s1 + (1-alpha)*s2``, alpha in [0, 1].

    The candidates are alpha = 0, alpha = 1 and the midpoint of every interval between consecutive
    crossing points (of any query) in (0, 1); the smallest best alpha is returned. ``k``, ``empty``
    and ``gain`` mean what they mean in :func:`customobj.metrics.ndcg` (ties: stable), and the
    returned NDCG is ``ndcg(alpha*s1 + (1-alpha)*s2, labels, group, k, empty=empty, gain=gain)``.

    Crossing points themselves are not candidates: there rows tie, and NDCG is decided by the row
    order of the tied rows (the stable tie rule), not by the scores - and whether two float sums
    tie exactly at a computed crossing is itself a rounding accident. So the result is the best
    alpha whose ranking the scores determine; at alpha = 0 and 1 ties in s2 / s1 count as in ndcg().

    Cost: O(sum_q n_q^2) crossings, and one O(n_q log n_q) evaluation per crossing of query q.
    Inputs whose work ``sum_q n_q^2 (n_q - 1) / 2`` exceeds :data:`MAX_WORK` (1e10, about one query
    of 2,700 rows) raise ``ValueError`` instead of running for hours.
    """
    a = as_scores(s1, name="s1")
    b = as_scores(s2, a.shape[0], name="s2")
    y = as_labels(labels, a.shape[0], integer=gain is not None)
    g = as_groups(group, a.shape[0])
    e = _empty(empty)
    kk = _k(k)
    _check_work(g)
    gains = _row_gains(y, gain)
    disc = _discounts(g.ptr, "standard")

    cand_alpha, cand_mean = _candidate_curve(a, b, gains, g, disc, kk, e)
    best = int(np.argmax(cand_mean))
    alpha = float(cand_alpha[best])
    # Report the metric itself at alpha (same arithmetic as any caller's check).
    value = ndcg(alpha * a + (1.0 - alpha) * b, y, g, k, empty=empty, gain=gain)
    return alpha, float(value)


#: Largest ``sum_q n_q * n_q (n_q - 1) / 2`` (crossings times the cost of one evaluation) accepted.
MAX_WORK = 1e10


def _check_work(g):
    sizes = g.sizes.astype(np.float64)
    pairs = sizes * (sizes - 1.0) / 2.0
    check_pair_budget(int(pairs.sum()), "best_linear_combination",
                      hint="evaluate on fewer rows per query")
    work = float((pairs * sizes).sum())
    if work > MAX_WORK:
        q = int(np.argmax(pairs * sizes))
        raise ValueError(
            f"best_linear_combination needs about {work:.2g} operations (O(sum_q n_q^3); the largest "
            f"query, group {q}, has {int(sizes[q])} rows), more than customobj.combine.MAX_WORK = "
            f"{MAX_WORK:g}; evaluate on fewer rows per query"
        )


def _candidate_curve(a, b, gains, g, disc, kk, e):
    """Candidate alphas in increasing order (0, interval midpoints, 1) and the mean NDCG at each."""
    nq = g.n_groups
    at0, at1, first = np.empty(nq), np.empty(nq), np.empty(nq)
    status = np.empty(nq, dtype=np.int64)
    cap = int(K.count_pairs_upper(g.ptr))
    ev_alpha, ev_delta = np.empty(cap), np.empty(cap)
    m = K.combination_steps(a, b, gains, g.ptr, disc, kk, at0, at1, first, status, ev_alpha, ev_delta)
    ev_alpha, ev_delta = ev_alpha[:m], ev_delta[:m]

    ok = status == K.STATUS_OK
    undefined = status == K.STATUS_UNDEFINED
    n_mean = int(ok.sum()) + (int(undefined.sum()) if e is not None else 0)
    if n_mean == 0:
        raise ValueError(
            "no query to average over (no non-empty query, or every query was excluded by empty='exclude')"
        )
    # Queries with IDCG = 0 score `empty` for every alpha: they shift the mean, not the argmax.

    # Merge the queries' step changes: equal alphas from different queries form one step.
    order = np.argsort(ev_alpha, kind="stable")
    alphas, deltas = ev_alpha[order], ev_delta[order]
    uniq, start = np.unique(alphas, return_index=True)
    step = np.add.reduceat(deltas, start) if deltas.size else np.zeros(0)
    interval_sum = first[ok].sum() + np.concatenate(([0.0], np.cumsum(step)))
    edges = np.concatenate(([0.0], uniq, [1.0]))
    mids = 0.5 * (edges[:-1] + edges[1:])

    cand_alpha = np.concatenate(([0.0], mids, [1.0]))
    cand_sum = np.concatenate(([at0[ok].sum()], interval_sum, [at1[ok].sum()]))
    if e is not None:
        cand_sum += e * undefined.sum()
    return cand_alpha, cand_sum / n_mean
