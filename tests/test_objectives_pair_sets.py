"""customobj.objectives._pair_sets: the label pairs of each query against the brute-force list of
tests/_oracles.py, the pair list built once and read-only, explicit pairs checked at the boundary,
QBRank's labelled rows."""
import numpy as np
import pytest

from customobj.objectives import _pairwise_kernels as PK
from customobj.objectives._pair_sets import LabelPairs, check_pairs_option, labeled_rows, no_pairs, pairs_in_range

from _oracles import ref_label_pairs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_label_pairs_are_every_ordered_pair_of_a_query_once(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 7, 6)
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = rng.integers(0, 4, ptr[-1]).astype(np.float64)
    lp = LabelPairs(labels, ptr)
    expected = sorted(ref_label_pairs(labels, ptr))
    assert lp.n_pairs == len(expected)
    pi, pj, th = lp.pair_list(labels, ptr, PK.THETA_DIFF, 0.0)
    assert sorted(zip(pi.tolist(), pj.tolist())) == expected
    np.testing.assert_array_equal(th, labels[pi] - labels[pj])  # QBRank's grade margin


def test_pair_list_is_built_once_and_read_only():
    labels = np.array([2.0, 0.0, 1.0, 1.0])
    ptr = np.array([0, 4], dtype=np.int64)
    lp = LabelPairs(labels, ptr)
    first = lp.pair_list(labels, ptr, PK.THETA_CONST, 1.5)
    assert lp.pair_list(labels, ptr, PK.THETA_CONST, 1.5) is first
    assert not any(a.flags.writeable for a in first)
    assert np.all(first[2] == 1.5)
    assert lp.pair_list(labels, ptr, PK.THETA_CONST, 2.0) is not first  # another margin, another list


def test_degenerate_queries_have_no_pairs():
    labels = np.array([1.0, 1.0, 3.0])
    lp = LabelPairs(labels, np.array([0, 2, 2, 3], dtype=np.int64))  # ties, an empty and a one-row query
    assert lp.n_pairs == 0
    assert [a.size for a in no_pairs()] == [0, 0, 0]


def test_explicit_pairs_are_checked():
    arr = check_pairs_option([[0, 1], [2, 1]])
    assert arr.dtype.kind == "i" and arr.shape == (2, 2) and not arr.flags.writeable
    pairs_in_range(arr, 3)
    with pytest.raises(ValueError, match=r"pairs\[1\] = \[2, 1\] points outside the data \(rows 0..1\)"):
        pairs_in_range(arr, 2)
    with pytest.raises((TypeError, ValueError), match="pairs"):
        check_pairs_option([[0, 1, 2]])
    with pytest.raises((TypeError, ValueError), match="edges"):
        check_pairs_option([[-1, 0]], name="edges")


def test_labeled_rows_follow_the_option():
    from customobj.objectives import Prepared

    prep = Prepared.build([2.0, 0.0, 1.0, 1.0, 3.0], [2, 2, 0, 1])
    assert labeled_rows("all", prep).tolist() == [True] * 5
    assert labeled_rows("none", prep).tolist() == [False] * 5
    # queries whose rows share one label (and one-row queries) give no label pairs: the paper's set L
    assert labeled_rows("single_label_queries", prep).tolist() == [False, False, True, True, True]
    mask = np.array([True, False, False, True, False])
    assert labeled_rows(mask, prep) is mask
    with pytest.raises(ValueError, match="labeled mask has 2 entries but data has 5 rows"):
        labeled_rows(mask[:2], prep)
