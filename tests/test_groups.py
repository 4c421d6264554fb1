import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from customobj import Groups, as_groups


def test_from_sizes_ptr_and_attributes():
    g = Groups.from_sizes([3, 0, 2])
    assert g.ptr.dtype == np.int64
    assert g.ptr.tolist() == [0, 3, 3, 5]
    assert g.sizes.tolist() == [3, 0, 2]
    assert (g.n_rows, g.n_groups, len(g)) == (5, 3, 3)


def test_from_qid_contiguous_blocks():
    g = Groups.from_qid(np.array([7, 7, 2, 2, 2, 9]))
    assert g.sizes.tolist() == [2, 3, 1]


def test_from_qid_strings_and_empty():
    assert Groups.from_qid(np.array(["a", "a", "b"])).sizes.tolist() == [2, 1]
    assert Groups.from_qid(np.array([], dtype=np.int64)).n_groups == 0


def test_from_qid_reappearing_names_qid_and_row():
    with pytest.raises(ValueError, match=r"qid 1 reappears at row 3.*sort"):
        Groups.from_qid([1, 1, 2, 1])


def test_from_ptr_roundtrip_and_checks():
    g = Groups.from_ptr([0, 2, 5])
    assert g == Groups.from_sizes([2, 3])
    with pytest.raises(ValueError, match="start at 0"):
        Groups.from_ptr([1, 2])
    with pytest.raises(ValueError, match="non-decreasing"):
        Groups.from_ptr([0, 3, 2])
    with pytest.raises(ValueError, match="ends at 5 but data has 6 rows"):
        Groups.from_ptr([0, 2, 5], n_rows=6)


def test_ptr_is_read_only():
    g = Groups.from_sizes([1, 2])
    with pytest.raises(ValueError):
        g.ptr[0] = 3


@pytest.mark.parametrize("group", [[2, 3], np.array([2, 3]), np.array([2.0, 3.0]), Groups.from_sizes([2, 3])])
def test_as_groups_accepts_every_form(group):
    assert as_groups(group, 5).sizes.tolist() == [2, 3]


def test_as_groups_sum_mismatch_message():
    with pytest.raises(ValueError, match="group sizes sum to 990 but data has 1000 rows"):
        as_groups([990], 1000)
    with pytest.raises(ValueError, match="covers 5 rows but data has 6"):
        as_groups(Groups.from_sizes([5]), 6)


@pytest.mark.parametrize(
    "bad, exc, msg",
    [
        (None, TypeError, "group is required"),
        (5, TypeError, "sequence of query sizes"),
        ("abc", TypeError, "sequence of query sizes"),
        ([2.5, 2.5], TypeError, "integers"),
        ([True, False], TypeError, "booleans"),
        ([[1, 2]], ValueError, "1-D"),
        ([3, -1, 3], ValueError, "non-negative; group 1 has size -1"),
        (np.array(["2", "3"]), TypeError, "integers"),
        (np.array([1, None], dtype=object), TypeError, "dtype object"),
    ],
)
def test_as_groups_rejects_bad_input(bad, exc, msg):
    with pytest.raises(exc, match=msg):
        as_groups(bad, 5)


def test_subset_selects_queries():
    g = Groups.from_sizes([2, 1, 3])
    rows, sub = g.subset([2, 0])
    assert rows.tolist() == [3, 4, 5, 0, 1]
    assert sub.sizes.tolist() == [3, 2]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=30))
def test_sizes_ptr_qid_agree(sizes):
    g = Groups.from_sizes(sizes)
    assert g.sizes.tolist() == list(sizes)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    nonempty = [s for s in sizes if s > 0]
    assert Groups.from_qid(qid).sizes.tolist() == nonempty
    assert Groups.from_ptr(g.ptr) == g


# --- issue 13: sizes and offsets are range-checked before they become int64 ------------------------------
WRAPPING = [2**62] * 3 + [2**62 + 10]  # int64 sum wraps to 10


@pytest.mark.parametrize("call,msg", [
    (lambda: Groups.from_sizes(WRAPPING, 10), r"group sizes must be <= 1099511627776 .*MAX_ROWS.*found 4611686018427387914"),
    (lambda: Groups.from_sizes(WRAPPING), r"group sizes must be <= 1099511627776"),
    (lambda: Groups.from_sizes([2**40, 2**40]), r"group sizes sum to 2199023255552 rows, more than .*MAX_ROWS"),
    (lambda: Groups.from_sizes(np.array([2**64 - 1, 11], dtype=np.uint64), 10), r"found 18446744073709551615"),
    (lambda: Groups.from_sizes([2**70, 1]), r"group sizes holds 1180591620717411303424"),
    (lambda: Groups.from_sizes(np.array([1e30, 1.0])), r"group sizes must be <= 1099511627776"),
    (lambda: Groups.from_ptr([0, 2**63 - 1, 5]), r"ptr must be <= 1099511627776"),
    (lambda: Groups.from_ptr(np.array([0, 2**64 - 1], dtype=np.uint64)), r"ptr must be <= 1099511627776"),
    (lambda: Groups.from_ptr([0, -2**63 + 1, 5]), r"ptr must be >= 0"),
    (lambda: as_groups(WRAPPING, 10), r"group sizes must be <= 1099511627776"),
])
def test_sizes_that_would_wrap_int64_are_refused(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_wrapping_groups_never_reach_a_kernel():
    """The issue's example segfaulted RankNet and misordered_pairs: run it where a crash fails one test."""
    from _isolated import run_isolated

    out = run_isolated("""
        import numpy as np, customobj as co
        from customobj import metrics
        sizes = [2**62] * 3 + [2**62 + 10]
        s, y = np.linspace(0, 1, 10), np.arange(10) % 3
        for call in (lambda: co.RankNet().grad_hess(s, y, sizes), lambda: metrics.misordered_pairs(s, y, sizes),
                     lambda: co.LambdaRank().grad_hess(s, y, sizes), lambda: metrics.ndcg(s, y, sizes)):
            try:
                call()
                print("accepted")
            except ValueError as exc:
                print("refused", "MAX_ROWS" in str(exc))
    """)
    assert out.split() == ["refused", "True"] * 4


def test_per_row_query_ids_passed_as_group_get_a_hint():
    qid = np.repeat([7, 8, 9], [3, 4, 3])
    with pytest.raises(ValueError, match=r"group sizes sum to 80 but data has 10 rows; group has one entry per row, "
                                         r"so it looks like per-row query ids: .*Groups.from_qid\(qid\)"):
        as_groups(qid, 10)
    with pytest.raises(ValueError, match=r"sum to 3 but data has 10 rows$"):  # no hint when lengths differ
        as_groups([1, 2], 10)
    assert as_groups(np.ones(10, np.int64), 10).n_groups == 10  # one-row queries are still valid
