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


# ------------------------------------------------------------------------------------------------
# trust bias, DCM, UBM: simulated click rates against each model's probabilities (5 standard errors)
# ------------------------------------------------------------------------------------------------
TABLE = (0.1, 0.5, 0.9)


def _close_per_position(log, expect):
    for p in range(int(log.position.max()) + 1):
        at = log.position == p
        se = np.sqrt((expect[at] * (1 - expect[at])).sum()) / at.sum()
        assert abs(log.y[at].mean() - expect[at].mean()) < 5 * se + 1e-12, p


def _sessions(log):
    starts = np.concatenate(([0], np.cumsum(log.group)))
    return [slice(starts[i], starts[i + 1]) for i in range(len(log.group))]


def test_trust_click_rates(data):
    eta = 1.2
    plus, minus = customobj.clicks.simulation.trust_defaults(10)
    log = simulate_clicks(data, ranker=data.X[:, 0], click_model="trust", eta=eta, click_prob=TABLE, sessions=300,
                          seed=4)
    gamma = np.asarray(TABLE)[log.true_label.astype(int)]
    p = log.position
    _close_per_position(log, (1.0 / (p + 1.0)) ** eta * (plus[p] * gamma + minus[p] * (1 - gamma)))
    # the trust bias shows: non-relevant rows (grade 0) at the top are clicked far above PBM's rate
    top0 = (p == 0) & (log.true_label == 0)
    assert log.y[top0].mean() > 0.5


def test_trust_options_per_position(data):
    log = simulate_clicks(data, ranker=data.X[:, 0], click_model="trust", eta=0.0, click_prob=TABLE, sessions=200,
                          seed=5, epsilon_plus=1.0, epsilon_minus=np.linspace(0.5, 0.0, 10))
    gamma = np.asarray(TABLE)[log.true_label.astype(int)]
    _close_per_position(log, gamma + np.linspace(0.5, 0.0, 10)[log.position] * (1 - gamma))


def test_dcm_click_rates(data):
    cont = np.linspace(0.9, 0.2, 10)
    log = simulate_clicks(data, ranker=data.X[:, 0], click_model="dcm", click_prob=TABLE, sessions=300, seed=6,
                          continue_prob=cont)
    gamma = np.asarray(TABLE)[log.true_label.astype(int)]
    expect = np.empty_like(gamma)
    for s in _sessions(log):  # P(c_r) = gamma_r prod_{r' < r} (1 - gamma_r' (1 - lambda_r'))
        g = gamma[s]
        survive = np.concatenate(([1.0], np.cumprod(1 - g * (1 - cont[:g.size]))[:-1]))
        expect[s] = g * survive
    _close_per_position(log, expect)


def test_dcm_ends_in_cascade_and_in_no_position_bias(data):
    kw = dict(ranker=data.X[:, 0], click_prob=TABLE, sessions=5, seed=7)
    cascade = simulate_clicks(data, click_model="cascade", **kw)
    assert np.array_equal(simulate_clicks(data, click_model="dcm", continue_prob=0.0, **kw).y, cascade.y)
    every = simulate_clicks(data, click_model="dcm", continue_prob=1.0, **kw)  # every row examined
    wants = np.random.default_rng(7).random((2, every.y.size))[1] < np.asarray(TABLE)[every.true_label.astype(int)]
    assert np.array_equal(every.y, wants.astype(float))


def test_ubm_click_rates(data):
    eta = 1.0
    log = simulate_clicks(data, ranker=data.X[:, 0], click_model="ubm", eta=eta, click_prob=TABLE, sessions=300,
                          seed=8)
    gamma = np.asarray(TABLE)[log.true_label.astype(int)]
    expect = np.empty_like(gamma)
    for s in _sessions(log):  # exact: the distribution of the last click above (index 0: none yet)
        g = gamma[s]
        last = np.zeros(g.size + 1)
        last[0] = 1.0
        for r in range(g.size):  # 0-based position r; last click at j - 1 (j >= 1) or none (j = 0)
            d = r + 1 - np.arange(r + 1)  # distance to the last click: r + 1 with none, else r - (j - 1)
            p_click = (1.0 / d) ** eta * g[r]
            expect[s][r] = (last[:r + 1] * p_click).sum()
            last[:r + 1] *= 1 - p_click
            last[r + 1] = expect[s][r]
    _close_per_position(log, expect)


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon_plus=0.9), "epsilon_plus is an option of click_model='trust'"),
    (dict(click_model="dcm", epsilon_minus=0.1), "epsilon_minus is an option of click_model='trust'"),
    (dict(click_model="trust", continue_prob=0.5), "continue_prob is an option of click_model='dcm'"),
    (dict(click_model="trust", epsilon_plus=1.5), "epsilon_plus must be probabilities"),
    (dict(click_model="trust", epsilon_minus=[0.1, 0.2]), "epsilon_minus has 2 entries but shown=10"),
    (dict(click_model="dcm", continue_prob=np.nan), "continue_prob must be finite"),
    (dict(click_model="ubm", eta=-1.0), "eta"),
])
def test_model_options_are_checked(data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_clicks(data, ranker=data.X[:, 0], **kwargs)


def test_a_model_option_of_the_wrong_type(data):
    with pytest.raises(TypeError, match="epsilon_plus"):
        simulate_clicks(data, ranker=data.X[:, 0], click_model="trust", epsilon_plus=[True] * 10)
