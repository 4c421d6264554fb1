"""customobj/clicks/_label_columns.py: ``read_click_log(labels=[...])`` reads further label columns in
the log's row order, refuses bad ones naming ``labels`` and the column, and the columns train a
MultiObjective beside the clicks."""
import numpy as np
import pytest

from customobj.data import read_click_log

pd = pytest.importorskip("pandas")

ARGS = dict(query="q", position="p", click="c", features=["x"], first_position=0)


def table(**extra):
    base = {"q": ["b", "a", "b", "a", "a"], "p": [0, 2, 1, 0, 1], "c": [0, 1, 1, 0, 0], "x": [1.0, 2.0, 3.0, 4.0, 5.0]}
    return pd.DataFrame({**base, **extra})


def test_label_columns_come_back_in_row_order_and_none_without():
    d = read_click_log(table(buy=[0, 1, 0, 0, 1], dwell=[1.5, 0.0, 2.0, 3.0, 4.5]), labels=["buy", "dwell"], **ARGS)
    assert d.X[:, 0].tolist() == [4.0, 5.0, 2.0, 1.0, 3.0]  # the rows' new order
    assert d.labels.tolist() == [[0, 3.0], [1, 4.5], [1, 0.0], [0, 1.5], [0, 2.0]]
    assert d.labels.dtype == np.float64 and d.labels.flags.c_contiguous
    assert read_click_log(table(), **ARGS).labels is None


@pytest.mark.parametrize("extra, labels, exc, match", [
    ({"buy": [0, 1, -1, 0, 0]}, ["buy"], ValueError, r"labels: column 'buy' holds -1.0 at row \d; a label must be finite"),
    ({"buy": [0, 1, np.inf, 0, 0]}, ["buy"], ValueError, r"labels: column 'buy' holds inf"),
    ({"buy": [0, 1, None, 0, 0]}, ["buy"], ValueError, r"labels: column 'buy' has a missing value"),
    ({"buy": ["a", "b", "c", "d", "e"]}, ["buy"], TypeError, r"labels: column 'buy' must be numeric"),
    ({}, ["nope"], ValueError, r"labels: the table has no column 'nope'"),
    ({}, ["c"], ValueError, r"labels: column 'c' is the click column"),
    ({}, ["x"], ValueError, r"labels: column 'x' is a feature"),
    ({"buy": [0, 1, 0, 0, 0]}, ["buy", "buy"], ValueError, r"labels names a column twice"),
    ({}, "buy", TypeError, r"labels must be a non-empty list"),
    ({}, [], TypeError, r"labels must be a non-empty list"),
    ({}, [3], TypeError, r"labels must hold column names"),
])
def test_bad_label_columns_are_refused_naming_them(extra, labels, exc, match):
    with pytest.raises(exc, match=match):
        read_click_log(table(**extra), labels=labels, **ARGS)


def test_two_bad_label_columns_are_reported_together():
    with pytest.raises(ValueError) as e:
        read_click_log(table(buy=[0, -1, 0, 0, 0], dwell=[0, 0, np.nan, 0, 0]), labels=["buy", "dwell"], **ARGS)
    assert "'buy'" in str(e.value) and "'dwell'" in str(e.value)


def test_the_columns_train_a_multi_objective_beside_the_clicks():
    from customobj import LambdaRank
    from customobj.multi import MultiObjective

    d = read_click_log(table(buy=[0, 1, 0, 0, 1]), labels=["buy"], **ARGS)
    obj = MultiObjective([LambdaRank(), LambdaRank()], labels=[None, d.labels[:, 0]], method="linear")
    grad, _ = obj.grad_hess(np.zeros(d.y.size), d.y, group=d.group)
    assert np.all(np.isfinite(grad)) and grad.any()
