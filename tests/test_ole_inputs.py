"""customobj.ole.inputs: feature matrices, labels, query structures and per-row lengths checked at the
boundary of TreeBooster, errors naming the argument."""
import numpy as np
import pytest

from customobj.groups import Groups
from customobj.ole.inputs import as_fit_labels, as_matrix, check_fit_rows, resolve_groups


def test_as_matrix_converts_to_contiguous_float64():
    X = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]  # not contiguous, integer
    out = as_matrix(X)
    assert out.dtype == np.float64 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, X)
    X32 = np.ones((2, 3), np.float32)
    assert as_matrix(X32).dtype == np.float64
    assert as_matrix(X32, keep_float32=True).dtype == np.float32


def test_as_matrix_keeps_nan_and_inf_and_converts_numeric_objects():
    X = np.array([[1, np.nan], [np.inf, -np.inf]], dtype=object)
    np.testing.assert_array_equal(as_matrix(X), np.array([[1.0, np.nan], [np.inf, -np.inf]]))


@pytest.mark.parametrize("X, kw, exc, message", [
    (None, {}, TypeError, "X must be a 2-D array of features, got None"),
    (np.zeros(3), {}, ValueError, "X must be 2-D (rows x features), got shape (3,)"),
    (np.zeros((2, 2), complex), {}, ValueError, "X has complex dtype"),
    (np.array([["a", "b"]], dtype=object), {}, TypeError, "X holds strings"),
    (np.array([["a", "b"]]), {}, TypeError, "X must be numeric, got dtype <U1"),
    (np.zeros((0, 3)), {"for_fit": True}, ValueError, "X has 0 rows"),
    (np.zeros((3, 0)), {"for_fit": True}, ValueError, "X has 0 feature(s)"),
])
def test_as_matrix_refuses_by_name(X, kw, exc, message):
    with pytest.raises(exc) as info:
        as_matrix(X, **kw)
    assert message in str(info.value)


def test_as_matrix_allows_empty_outside_fit_and_names_the_argument():
    assert as_matrix(np.zeros((0, 3))).shape == (0, 3)
    with pytest.raises(ValueError, match=r"eval_set\[0\] X must be 2-D"):
        as_matrix(np.zeros(3), "eval_set[0] X")


def test_resolve_groups_from_sizes_or_query_ids():
    assert resolve_groups(None, None, 5) is None
    by_sizes = resolve_groups([2, 3], None, 5)
    by_qid = resolve_groups(None, [7, 7, 9, 9, 9], 5)
    np.testing.assert_array_equal(by_sizes.sizes, [2, 3])
    np.testing.assert_array_equal(by_qid.sizes, [2, 3])


def test_resolve_groups_refuses_both_and_says_when_sizes_look_like_ids():
    with pytest.raises(ValueError, match=r"pass group= \(query sizes\) or qid= .*not both"):
        resolve_groups([5], [0] * 5, 5)
    with pytest.raises(ValueError, match=r"group holds one entry per row: if these are query ids, pass them as qid="):
        resolve_groups([1, 1, 2, 2, 2], None, 5)
    with pytest.raises(TypeError, match="eval_qid.0. must hold one query id per row"):
        resolve_groups(None, Groups.from_sizes([5]), 5, name="eval_group[0]", qid_name="eval_qid[0]")


def test_check_fit_rows_names_the_short_array():
    y = np.zeros(4)
    check_fit_rows(4, y, None)
    check_fit_rows(4, y, [1.0, 0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="X has 5 rows but y has 4"):
        check_fit_rows(5, y, None)
    with pytest.raises(ValueError, match="X has 4 rows but sample_weight has 3"):
        check_fit_rows(4, y, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"sample_weight must be 1-D \(one weight per row\), got shape \(4, 1\)"):
        check_fit_rows(4, y, np.ones((4, 1)))
    with pytest.raises(ValueError, match="every weight is zero"):
        check_fit_rows(4, y, np.zeros(4))


def test_as_fit_labels():
    np.testing.assert_array_equal(as_fit_labels([0, 2, 1]), [0.0, 2.0, 1.0])
    assert as_fit_labels(np.array([1, 2], dtype=object)).dtype == np.float64
    with pytest.raises(ValueError, match="y is None"):
        as_fit_labels(None)
    with pytest.raises(TypeError, match="y holds strings"):
        as_fit_labels(np.array(["a"], dtype=object))


def test_training_targets_prepares_the_objective_and_adds_init_score():
    from customobj.objectives import RankNet
    from customobj.ole.inputs import training_targets

    y = np.array([0.0, 1.0, 2.0, 0.0, 1.0])
    prep, scores = training_targets(RankNet(), 5, y, [3, 2], None, None, None)
    assert scores.shape == (5,) and not scores.any() and prep is not None
    init = np.array([0.5, -1.0, 2.0, 0.0, 3.0])
    _, scores = training_targets(RankNet(), 5, y, None, [7, 7, 7, 9, 9], None, init)
    np.testing.assert_array_equal(scores, init)
    with pytest.raises(ValueError, match="RankNet is a ranking objective: fit needs group="):
        training_targets(RankNet(), 5, y, None, None, None, None)
    with pytest.raises(ValueError, match="init_score"):
        training_targets(RankNet(), 5, y, [5], None, None, np.full(5, np.nan))


def test_checked_callbacks():
    from customobj.ole.inputs import checked_callbacks

    assert checked_callbacks(None) == [] and checked_callbacks((print,)) == [print]
    with pytest.raises(TypeError, match="callbacks must be callables, got int"):
        checked_callbacks([print, 3])


def test_fit_positions_are_one_integer_per_row_or_refused_by_name():
    from customobj.ole.inputs import as_fit_positions

    assert as_fit_positions(None, 3) is None
    got = as_fit_positions(np.array([2.0, 0.0, 1.0]), 3)
    assert got.dtype == np.int64 and got.tolist() == [2, 0, 1] and not got.flags.writeable
    for bad, exc, message in [([0, 1], ValueError, r"one display position per row \(3 rows\)"),
                              ([[0, 1, 2]], ValueError, "must be 1-D"),
                              ([0, -1, 2], ValueError, "found -1 at row 1"),
                              ([0, np.nan, 2], ValueError, "found nan at row 1"),
                              ([0, 1, 2.5], ValueError, "found 2.5 at row 2"),
                              ([True, False, True], TypeError, "integer display positions, got dtype bool"),
                              (["a", "b", "c"], TypeError, "integer display positions")]:
        with pytest.raises(exc, match=message):
            as_fit_positions(bad, 3)
