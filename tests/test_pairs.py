import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from customobj import label_pairs
from customobj.pairs import count_label_pairs


def reference_pairs(labels, sizes):
    out = []
    start = 0
    for s in sizes:
        for a in range(start, start + s):
            for b in range(start, start + s):
                if labels[a] > labels[b]:
                    out.append((a, b, labels[a] - labels[b]))
        start += s
    return out


def test_hand_example():
    i, j, d = label_pairs([2, 1, 0, 1, 1, 0], [3, 3])
    assert list(zip(i.tolist(), j.tolist(), d.tolist())) == [
        (0, 1, 1.0), (0, 2, 2.0), (1, 2, 1.0), (3, 5, 1.0), (4, 5, 1.0)
    ]
    assert i.dtype == np.int64 and d.dtype == np.float64


def test_degenerate_groups_give_no_pairs():
    i, j, d = label_pairs([1, 1, 1, 3, 0], [3, 1, 0, 1])
    assert i.size == j.size == d.size == 0
    assert count_label_pairs([1, 1, 1, 3, 0], [3, 1, 0, 1]).tolist() == [0, 0, 0, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), min_size=0, max_size=12), min_size=1, max_size=6))
def test_matches_reference(queries):
    labels = np.array([y for q in queries for y in q], dtype=float)
    sizes = [len(q) for q in queries]
    i, j, d = label_pairs(labels, sizes)
    assert list(zip(i.tolist(), j.tolist(), d.tolist())) == reference_pairs(labels, sizes)


def test_cap_samples_subset_reproducibly():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, size=200).astype(float)
    sizes = [50, 50, 60, 40]
    full = set(zip(*[a.tolist() for a in label_pairs(labels, sizes)[:2]]))
    counts = count_label_pairs(labels, sizes)
    i, j, d = label_pairs(labels, sizes, max_pairs_per_query=30, seed=7)
    assert i.size == int(np.minimum(counts, 30).sum())
    assert set(zip(i.tolist(), j.tolist())) <= full
    assert np.all(labels[i] - labels[j] == d)
    # each query keeps exactly min(count, cap) of its own pairs, no duplicates
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    q_of = np.searchsorted(ptr, i, side="right") - 1
    assert np.bincount(q_of, minlength=len(sizes)).tolist() == np.minimum(counts, 30).tolist()
    assert len(set(zip(i.tolist(), j.tolist()))) == i.size
    again = label_pairs(labels, sizes, max_pairs_per_query=30, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip((i, j, d), again))
    other = label_pairs(labels, sizes, max_pairs_per_query=30, seed=8)
    assert not np.array_equal(i, other[0]) or not np.array_equal(j, other[1])


def test_cap_sampling_is_roughly_uniform():
    labels = np.array([1.0] * 5 + [0.0] * 5)  # 25 pairs in one query
    hits = np.zeros((10, 10))
    for seed in range(400):
        i, j, _ = label_pairs(labels, [10], max_pairs_per_query=5, seed=seed)
        hits[i, j] += 1
    rates = hits[:5, 5:] / 400
    assert np.allclose(rates, 5 / 25, atol=0.08)


def test_cap_larger_than_count_keeps_all():
    labels = [2, 1, 0]
    full = label_pairs(labels, [3])
    capped = label_pairs(labels, [3], max_pairs_per_query=100)
    assert all(np.array_equal(a, b) for a, b in zip(full, capped))


@pytest.mark.parametrize(
    "kwargs, exc, msg",
    [
        (dict(max_pairs_per_query=-1), ValueError, "max_pairs_per_query must be >= 0"),
        (dict(max_pairs_per_query=2.5), TypeError, "max_pairs_per_query must be an integer"),
        (dict(seed=-3), ValueError, "seed must be >= 0"),
    ],
)
def test_bad_options(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        label_pairs([1, 0], [2], **kwargs)


def test_bad_labels():
    with pytest.raises(ValueError, match="labels must be finite"):
        label_pairs([1, np.nan], [2])
    with pytest.raises(ValueError, match="non-negative"):
        label_pairs([1, -1], [2])
    with pytest.raises(ValueError, match="group sizes sum to 3 but data has 2 rows"):
        label_pairs([1, 0], [3])


# --- issue 13: integer options beyond int64 are refused before numba sees them ---------------------------
def test_integer_options_range_checked():
    y, g = np.array([0.0, 1.0, 2.0, 1.0]), [4]
    with pytest.raises(ValueError, match=r"max_pairs_per_query must be <= 4611686018427387903, got 9223372036854775808"):
        label_pairs(y, g, max_pairs_per_query=2**63)
    with pytest.raises(ValueError, match=r"seed must be <= 18446744073709551615"):
        label_pairs(y, g, max_pairs_per_query=2, seed=2**64)
    with pytest.raises(ValueError, match=r"seed must be >= 0"):
        label_pairs(y, g, seed=-1)
    # At the limits: the largest seed and cap work (the cap then keeps every pair).
    i, j, d = label_pairs(y, g, max_pairs_per_query=2**62 - 1, seed=2**64 - 1)
    assert i.size == 5 and np.all(d > 0)
    a = label_pairs(y, g, max_pairs_per_query=2, seed=2**64 - 1)
    assert a[0].size == 2


def test_labels_and_groups_checked():
    with pytest.raises(ValueError, match=r"labels must satisfy \|labels\| <= 1e\+100"):
        label_pairs([0.0, 1e300], [2])
    with pytest.raises(ValueError, match=r"group sizes must be <= 1099511627776"):
        count_label_pairs(np.zeros(10), [2**62] * 3 + [2**62 + 10])
