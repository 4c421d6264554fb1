"""customobj._metric_kernels, through the metric functions that wrap them (customobj/metrics.py):
every metric against a slow, obvious plain-Python reference (one query at a time) on random queries,
ties and empty queries included."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from customobj.metrics import (
    average_precision,
    dcg,
    err,
    misordered_pairs,
    ndcg,
    ndcg_mpboost,
    precision_at_percent,
    reciprocal_rank,
)


# ------------------------------------------------------------------------------------------------
# slow, obvious references (one query at a time, plain Python)
# ------------------------------------------------------------------------------------------------
def ref_order(s, y, ties="stable"):
    if ties == "stable":
        return sorted(range(len(s)), key=lambda i: (-s[i], i))
    return sorted(range(len(s)), key=lambda i: (-s[i], y[i], i))


def ref_dcg(s, y, k, ties="stable", gain=None, mpboost=False):
    k = len(s) if k is None else min(k, len(s))
    total = 0.0
    for r, i in enumerate(ref_order(s, y, ties)[:k], start=1):
        g = 2.0 ** y[i] - 1 if gain is None else gain[int(y[i])]
        d = (1.0 if r == 1 else math.log2(r)) if mpboost else math.log2(1 + r)
        total += g / d
    return total


def ref_ndcg(s, y, k, ties="stable", gain=None, mpboost=False, empty=1.0):
    gains = [2.0 ** v - 1 if gain is None else gain[int(v)] for v in y]
    # ideal: rows sorted by gain descending; feeding gains as scores gives that order
    ideal = ref_dcg(gains, y, k, "stable", gain, mpboost)
    if ideal <= 0:
        return empty
    return ref_dcg(s, y, k, ties, gain, mpboost) / ideal


def ref_err(s, y, k, max_grade, ties="stable"):
    k = len(s) if k is None else min(k, len(s))
    total, p_continue = 0.0, 1.0
    for r, i in enumerate(ref_order(s, y, ties)[:k], start=1):
        R = (2.0 ** y[i] - 1) / 2.0**max_grade
        total += p_continue * R / r
        p_continue *= 1 - R
    return total


def ref_ap(s, y, k=None, empty=1.0, ties="stable"):
    n_rel = sum(v > 0 for v in y)
    if n_rel == 0:
        return empty
    k = len(s) if k is None else min(k, len(s))
    hits, total = 0, 0.0
    for r, i in enumerate(ref_order(s, y, ties)[:k], start=1):
        if y[i] > 0:
            hits += 1
            total += hits / r
    return total / min(n_rel, k)


def ref_rr(s, y, k=None, empty=1.0, ties="stable"):
    if not any(v > 0 for v in y):
        return empty
    k = len(s) if k is None else min(k, len(s))
    for r, i in enumerate(ref_order(s, y, ties)[:k], start=1):
        if y[i] > 0:
            return 1.0 / r
    return 0.0


def ref_pairs(s, y, sizes):
    """All within-query pairs with different labels: (|s_i - s_j|, correct) in (query, i, j) order."""
    out, start = [], 0
    for n in sizes:
        for i in range(start, start + n):
            for j in range(i + 1, start + n):
                if y[i] != y[j]:
                    hi, lo = (i, j) if y[i] > y[j] else (j, i)
                    out.append((abs(s[i] - s[j]), s[hi] > s[lo]))
        start += n
    return out


def ref_precision(s, y, sizes, percent):
    pairs = ref_pairs(s, y, sizes)
    if not pairs:
        return 1.0
    pairs = sorted(pairs, key=lambda p: -p[0])  # Python's sort is stable
    n_top = max(1, math.ceil(round(percent * len(pairs) / 100, 9)))
    return sum(c for _, c in pairs[:n_top]) / n_top


def per_query(fn, s, y, sizes, **kw):
    out, start = [], 0
    for n in sizes:
        if n:
            out.append(fn(list(s[start:start + n]), list(y[start:start + n]), **kw))
        start += n
    return out


# ------------------------------------------------------------------------------------------------
# random data vs references
# ------------------------------------------------------------------------------------------------
@st.composite
def ranking_data(draw, max_groups=6, max_size=9, max_label=3):
    sizes = draw(st.lists(st.integers(0, max_size), min_size=1, max_size=max_groups))
    n = sum(sizes)
    # few distinct scores so ties are frequent
    scores = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    labels = draw(st.lists(st.integers(0, max_label), min_size=n, max_size=n))
    return np.array(scores, float) / 2, np.array(labels, float), sizes


def _nonempty(sizes):
    return any(n > 0 for n in sizes)


@settings(max_examples=60, deadline=None)
@given(data=ranking_data(), k=st.sampled_from([1, 3, 5, None]), ties=st.sampled_from(["stable", "pessimistic"]))
def test_graded_metrics_match_reference(data, k, ties):
    s, y, sizes = data
    if not _nonempty(sizes):
        return
    nz = [n for n in sizes if n]
    for fn, ref, kw in [
        (ndcg, ref_ndcg, {}),
        (ndcg_mpboost, lambda a, b, k, ties: ref_ndcg(a, b, k, ties, mpboost=True), {}),
        (dcg, ref_dcg, {}),
        (err, lambda a, b, k, ties: ref_err(a, b, k, y.max(), ties), {}),
    ]:
        got = fn(s, y, sizes, k=k, ties=ties, per_query=True, **kw)
        want = per_query(ref, s, y, sizes, k=k, ties=ties)
        assert got[np.array(sizes) > 0] == pytest.approx(want, abs=1e-12)
        assert fn(s, y, sizes, k=k, ties=ties) == pytest.approx(np.mean(want), abs=1e-12)
        assert len(got) == len(sizes) and len(want) == len(nz)
    gain = [0.0, 1.0, 3.0, 10.0]
    got = ndcg(s, y, sizes, k=k, ties=ties, gain=gain, per_query=True)[np.array(sizes) > 0]
    assert got == pytest.approx(per_query(ref_ndcg, s, y, sizes, k=k, ties=ties, gain=gain), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=ranking_data(), k=st.sampled_from([1, 3, None]), empty=st.sampled_from([1.0, 0.0]))
def test_binary_metrics_match_reference(data, k, empty):
    s, y, sizes = data
    if not _nonempty(sizes):
        return
    mask = np.array(sizes) > 0
    got = average_precision(s, y, sizes, k=k, empty=empty, per_query=True)[mask]
    assert got == pytest.approx(per_query(ref_ap, s, y, sizes, k=k, empty=empty), abs=1e-12)
    got = reciprocal_rank(s, y, sizes, k=k, empty=empty, per_query=True)[mask]
    assert got == pytest.approx(per_query(ref_rr, s, y, sizes, k=k, empty=empty), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=ranking_data(), percent=st.sampled_from([100, 50, 33.3, 10, 1]))
def test_pairwise_metrics_match_reference(data, percent):
    s, y, sizes = data
    pairs = ref_pairs(s, y, sizes)
    n_bad = sum(not c for _, c in pairs)
    count, frac = misordered_pairs(s, y, sizes)
    assert count == n_bad
    assert frac == (n_bad / len(pairs) if pairs else 0.0)
    assert precision_at_percent(s, y, sizes, percent) == pytest.approx(ref_precision(s, y, sizes, percent), abs=1e-15)
    # precision at 100% is overall pairwise accuracy
    assert precision_at_percent(s, y, sizes, 100) == pytest.approx(1 - frac, abs=1e-15)
    counts, _ = misordered_pairs(s, y, sizes, per_query=True)
    assert counts.sum() == count and counts.shape == (len(sizes),)


def test_precision_top_count_is_exact_decimal():
    # 30 pairs in one query (labels 0..), 10% -> exactly 3 pairs, not ceil(3.0000000000000004) = 4
    y = np.array([1.0] * 3 + [0.0] * 10)
    s = np.arange(13, dtype=float)[::-1].copy()
    s[[0, 1, 2]] = [-1.0, -2.0, 100.0]  # the two largest |diff| pairs involve row 2 (correct)...
    pairs = ref_pairs(s, y, [13])
    assert len(pairs) == 30
    assert precision_at_percent(s, y, [13], 10) == pytest.approx(ref_precision(s, y, [13], 10))
    top = sorted(pairs, key=lambda p: -p[0])[:3]
    assert precision_at_percent(s, y, [13], 10) == pytest.approx(sum(c for _, c in top) / 3)


# ------------------------------------------------------------------------------------------------
# dispatch codes: an unknown BinaryMetric is signalled, never computed as reciprocal rank
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", [2, -1])
def test_binary_relevance_signals_an_unknown_metric_code(which):
    from customobj import _metric_kernels as K
    from customobj._kernel_status import KernelStatus

    s, y = np.array([0.5, 0.1, 0.9]), np.array([1.0, 0.0, 1.0])
    ptr = np.array([0, 3], dtype=np.int64)
    values, status = np.full(1, -7.0), np.full(1, -7, dtype=np.int64)
    assert K.binary_relevance_all(s, y, ptr, 10, False, which, values, status) == KernelStatus.UNKNOWN_CODE
    assert values[0] == -7.0 and status[0] == -7  # nothing written
    for code, ref in ((K.BinaryMetric.AVERAGE_PRECISION, average_precision), (K.BinaryMetric.RECIPROCAL_RANK,
                                                                            reciprocal_rank)):
        assert K.binary_relevance_all(s, y, ptr, 10, False, int(code), values, status) == KernelStatus.OK
        assert status[0] == K.QueryStatus.OK and values[0] == ref(s, y, [3])


def test_the_metrics_refuse_an_unknown_code_at_the_boundary():
    from customobj import metrics

    with pytest.raises(ValueError, match="which must be a BinaryMetric code"):
        metrics._run_binary([0.5, 0.1], [1.0, 0.0], [2], None, 1.0, "stable", False, 2)
