"""Tests of customobj/clicks/simulation.py: the displayed rows, the click models' probabilities,
determinism, and checked arguments."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj.data import simulate_clicks


@pytest.fixture(scope="module")
def data():
    return customobj.data.synthetic(40, 15, 4, seed=2, max_grade=2)


def test_shows_the_rankers_top_rows_in_order(data):
    log = simulate_clicks(data, ranker=data.X[:, 1], shown=5, sessions=2, seed=0)
    starts = np.concatenate(([0], np.cumsum(log.group)[:-1]))
    for s, n in zip(starts, log.group):
        rows = log.row[s:s + n]
        assert log.position[s:s + n].tolist() == list(range(n))
        q = log.qid[s]
        members = np.flatnonzero(np.repeat(np.arange(len(data.group)), data.group) == q)
        top = members[np.argsort(-data.X[members, 1], kind="stable")][:5]
        assert rows.tolist() == top.tolist()
    assert np.array_equal(log.true_label, data.y[log.row]) and np.array_equal(log.X, data.X[log.row])
    assert len(log.group) == 2 * len(data.group)


def test_same_seed_same_log_other_seed_other_log(data):
    a = simulate_clicks(data, ranker=data.X[:, 0], seed=5)
    b = simulate_clicks(data, ranker=data.X[:, 0], seed=5)
    c = simulate_clicks(data, ranker=data.X[:, 0], seed=6)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a.y, c.y)


def test_pbm_click_rates_follow_examination_times_relevance(data):
    eta, table = 1.5, (0.1, 0.5, 1.0)
    log = simulate_clicks(data, ranker=data.X[:, 0], eta=eta, click_prob=table, sessions=400, seed=1)
    expect = (1.0 / (log.position + 1.0)) ** eta * np.asarray(table)[log.true_label.astype(int)]
    for p in range(10):
        at = log.position == p
        mean, var = expect[at].mean(), (expect[at] * (1 - expect[at])).sum() / at.sum() ** 2
        assert abs(log.y[at].mean() - mean) < 5 * np.sqrt(var)  # 5 standard errors


def test_cascade_clicks_at_most_once_and_never_below_a_click(data):
    log = simulate_clicks(data, ranker=data.X[:, 0], click_model="cascade", click_prob=(0.2, 0.6, 0.9),
                          sessions=50, seed=3)
    starts = np.concatenate(([0], np.cumsum(log.group)[:-1]))
    per_session = np.add.reduceat(log.y, starts)
    assert per_session.max() == 1.0
    # top row: clicked with its click probability (5 standard errors)
    top = log.position == 0
    p = np.asarray((0.2, 0.6, 0.9))[log.true_label[top].astype(int)]
    assert abs(log.y[top].mean() - p.mean()) < 5 * np.sqrt((p * (1 - p)).sum()) / top.sum()


def test_a_model_with_predict_is_a_ranker(data):
    class Model:
        def predict(self, X):
            return X[:, 2]

    a = simulate_clicks(data, ranker=Model(), seed=0)
    b = simulate_clicks(data, ranker=data.X[:, 2], seed=0)
    assert np.array_equal(a.row, b.row) and np.array_equal(a.y, b.y)


def test_grades_beyond_the_table_use_its_last_entry(data):
    log = simulate_clicks(data, ranker=data.X[:, 0], eta=0.0, click_prob=(0.0, 1.0), sessions=3, seed=0)
    assert np.array_equal(log.y, (log.true_label >= 1).astype(float))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(click_model="dbn"), ValueError, "click_model"),
    (dict(eta=-1.0), ValueError, "eta"),
    (dict(click_prob=(0.1, 1.5)), ValueError, "click_prob"),
    (dict(click_prob="0.1"), TypeError, "click_prob"),
    (dict(click_prob=()), TypeError, "click_prob"),
    (dict(shown=0), ValueError, "shown"),
    (dict(sessions=0), ValueError, "sessions"),
    (dict(sessions=100_000, shown=1000), ValueError, "MAX_LOG_ROWS"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(ranker=np.zeros(3)), ValueError, "ranker"),
    (dict(ranker=np.full(600, np.nan)), ValueError, "ranker"),
])
def test_bad_arguments(data, kwargs, exc, match):
    kwargs = dict(dict(ranker=data.X[:, 0]), **kwargs)
    if kwargs["ranker"].shape[0] == 600:
        kwargs["ranker"] = np.full(data.y.size, np.nan)
    with pytest.raises(exc, match=match):
        simulate_clicks(data, **kwargs)


def test_fractional_grades_are_refused(data):
    with pytest.raises(ValueError, match="data labels"):
        simulate_clicks((data.X, data.y + 0.5, data.group), ranker=data.X[:, 0])


@pytest.mark.parametrize("make_X, exc", [
    (lambda X: X[:-1], ValueError),          # rows short (was an IndexError from inside)
    (lambda X: np.vstack([X, X[:1]]), ValueError),  # rows long (was accepted silently)
    (lambda X: None, TypeError),             # was a TypeError from inside the indexing
    (lambda X: X[:, 0], ValueError),         # 1-D (was accepted)
    (lambda X: X[:, :, None], ValueError),   # 3-D
    (lambda X: X.astype(str), TypeError),
])
def test_features_are_checked_against_the_labels(data, make_X, exc):
    with pytest.raises(exc, match="data X"):
        simulate_clicks((make_X(data.X), data.y, data.group), ranker=data.X[:, 0])


def test_data_must_be_a_triple(data):
    for bad in (None, (data.X, data.y), "Xyg"):
        with pytest.raises(TypeError, match="data must be"):
            simulate_clicks(bad, ranker=data.X[:, 0])


def test_dataframe_and_sparse_features_log_the_same_rows(data):
    pd = pytest.importorskip("pandas")
    sparse = pytest.importorskip("scipy.sparse")
    ref = simulate_clicks(data, ranker=data.X[:, 0], sessions=2, seed=0)
    frame = pd.DataFrame(data.X, columns=[f"f{j}" for j in range(data.X.shape[1])],
                         index=np.arange(data.y.size) + 1000)  # an index that is not the row number (was a KeyError)
    from_frame = simulate_clicks((frame, data.y, data.group), ranker=data.X[:, 0], sessions=2, seed=0)
    assert np.array_equal(from_frame.X, ref.X) and np.array_equal(from_frame.y, ref.y)
    from_csr = simulate_clicks((sparse.csr_matrix(data.X), data.y, data.group), ranker=data.X[:, 0], sessions=2, seed=0)
    assert np.array_equal(from_csr.X.toarray(), ref.X)


def test_a_model_ranks_a_plain_triple(data):
    class Model:
        def predict(self, X):
            return np.asarray(X)[:, 2]

    a = simulate_clicks((data.X, data.y, data.group), ranker=Model(), seed=0)  # was AttributeError (data.X)
    assert np.array_equal(a.row, simulate_clicks(data, ranker=data.X[:, 2], seed=0).row)
