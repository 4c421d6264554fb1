r"""NDCG's grade walk: each upper row's pairs with a different gain only (``_lambdarank_pass._ndcg_pairs``).

A pair of equal gains has :math:`|\Delta Z| = |g_a - g_b| |D_a - D_b| = 0`, so its lambda, hessian and cost
are exact zeros: adding them changes no sum (``x + 0 = x``, and a sum that starts at ``+0`` stays ``+0``
through ``+-0`` terms), and a FILL pass writes no such pair. LETOR's queries are mostly of one grade
(MQ2008 Fold 1: 23% of the pairs have different gains), so walking only the pairs of different gains, in
the same order, gives the same bits for a fraction of the pair work, as LightGBM's lambdarank loop does
(``if (label_high == label_low) continue``, there a branch per pair).

How, per sorted query of at most ``MAX_GRADES`` distinct gains (:func:`grade_lists`): each position's grade,
the number of positions above it of the same gain, and per grade the list of the positions of every other
gain, ascending. Upper row ``a`` of grade ``k`` then walks list ``k`` from entry ``a - same_above[a]`` (the
positions above ``a`` of another gain come first) to its end: no test per pair, no pair skipped that has
a nonzero ``|dZ|``. The lists cost ``O(n G)`` a query, against ``O(n^2)`` pairs. Where the pairs of
different gains are a large share of the query's, the walk over every pair (no index load a pair, and
GRAD_LOSS's terms in whole vectors) is as fast or faster: each mode has its share (``WALK_SHARE_*``, measured),
and a query of more than ``MAX_GRADES`` gains walks every pair; :func:`grade_lists` then returns 0.

References
----------
Burges (2010), "From RankNet to LambdaRank to LambdaMART: An Overview", section 6 (a pair of equal labels
has no lambda); LightGBM, ``src/objective/rank_objective.hpp`` (``LambdarankNDCG::GetGradientsForOneQuery``).
"""
import numpy as np  # noqa: F401 - the doctests' np
from numba import njit

from ._lambdarank_records import MAX_GRADES, Channel, IntChannel

__all__ = ["WALK_SHARE_GRAD", "WALK_SHARE_LOSS", "WALK_SHARE_FILL", "WALK_SHARE_FUSED", "grade_count", "grade_lists"]

# The largest share of a query's pairs with different gains for which each mode takes the grade walk, from
# ``python benchmarks/grade_walk.py`` on AMD Zen 3 (docs/multi-objective.md, "Only the pairs of different
# gains"): the walk's time over every pair's on 30- / 120-row queries at 0.62 / 0.67 / 0.80 of the pairs:
# GRAD 0.87, 0.80 / 0.86, 0.81 / 0.99, 0.94 (so every share: 1.0); GRAD_LOSS 0.84, 0.83 / 0.87, 0.92 / 0.98,
# 1.08; FILL (and GRAD_FILL) 0.96, 0.91 / 0.93, 0.99 / 0.99, 0.97.
WALK_SHARE_GRAD = 1.0
WALK_SHARE_LOSS = 0.7
WALK_SHARE_FILL = 0.7
# MultiObjective's driver (``_lambdarank_kernels._label_walks``): a query of 40+ rows takes the fused GRAD pass of
# every label unless a label's share is at most this, then each label its own walk. The walks' time over the fused
# pass's (MQ2008's and 120-row synthetic labels, m = 2 / 4): 0.61 / 0.64 on MQ2008, 0.72 / 0.74 at 0.5 of the
# pairs, 0.94 / 0.95 at 0.62, 0.96 / 1.05 at 0.67, 1.14 / 1.21 at 0.8.
WALK_SHARE_FUSED = 0.65


@njit(cache=True)
def grade_count(g, n, I, share):
    """The number of distinct gains ``G`` of the ``n`` gains ``g`` (any order: a query's rows, or its sorted
    positions), each position's grade and the number of same-gain positions before it in ``I``'s ``GRADE``,
    ``SAME_ABOVE`` rows, each grade's first position and count in ``GRADE_FIRST``, ``GRADE_COUNT``; or 0
    where the walk over every pair is to be taken: more than ``MAX_GRADES`` gains, or more than ``share`` (the
    mode's ``WALK_SHARE_*``) of the pairs of different gains. The choice depends on the labels only, not on the
    order (``_lambdarank_kernels._label_walks`` asks it of each label's unsorted rows, once per data set).

    >>> from customobj.objectives._lambdarank_records import block_scratch_arrays
    >>> I = block_scratch_arrays(4)[1]
    >>> grade_count(np.array([1.0, 0.0, 1.0, 0.0]), 4, I, 1.0), grade_count(np.array([1.0, 0.0, 1.0, 0.0]), 4, I, 0.5)
    (2, 0)
    """
    grade, above, first, count = I[IntChannel.GRADE], I[IntChannel.SAME_ABOVE], I[IntChannel.GRADE_FIRST], \
        I[IntChannel.GRADE_COUNT]
    n_grades = 0
    for r in range(n):
        gr = g[r]
        k = 0
        while k < n_grades and g[first[k]] != gr:
            k += 1
        if k == n_grades:
            if n_grades == MAX_GRADES:
                return 0
            first[k] = r
            count[k] = 0
            n_grades += 1
        grade[r] = k
        above[r] = count[k]
        count[k] += 1
    same = 0
    for k in range(n_grades):
        same += count[k] * (count[k] - 1) // 2
    pairs = n * (n - 1) // 2
    return 0 if pairs - same > share * pairs else n_grades


@njit(cache=True)
def grade_lists(n, F, I, share):
    """The grade walk's lists of one sorted query of ``n`` rows (gains in ``F[Channel.GAIN]``): :func:`grade_count`'s
    rows, and per grade ``k`` the positions of every other gain, ascending, in ``I[IntChannel.OTHERS + k]``;
    returns :func:`grade_count`'s ``G`` at ``share`` (0: walk every pair, no list written).

    >>> from customobj.objectives._lambdarank_records import block_scratch_arrays
    >>> F, I = block_scratch_arrays(4)
    >>> F[Channel.GAIN, :4] = [3.0, 0.0, 0.0, 0.0]
    >>> grade_lists(4, F, I, 1.0), I[IntChannel.OTHERS, :3].tolist(), I[IntChannel.OTHERS + 1, :1].tolist()
    (2, [1, 2, 3], [0])
    """
    n_grades = grade_count(F[Channel.GAIN], n, I, share)
    grade = I[IntChannel.GRADE]
    for k in range(n_grades):
        others = I[IntChannel.OTHERS + k]
        size = 0
        for r in range(n):  # branch-free: every position written, the list advanced past the other gains'
            others[size] = r
            size += 1 if grade[r] != k else 0
    return n_grades
