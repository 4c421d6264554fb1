"""Training one method on one fold (customobj/compare/trainers.py): the Split record, every backend's
TrainResult (scores of the right rows, a curve per trained round), multi-output scores. Tiny data,
a few rounds, early stopping off, one thread."""
import numpy as np
import pytest
import scipy.sparse as sp

import customobj
import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does)
from customobj.compare.methods import parse_method
from customobj.compare.trainers import Settings, Split, TrainResult, _first_curve, catboost_available, train
from customobj.data import synthetic

ROUNDS = 4


@pytest.fixture(scope="module")
def fold():
    return tuple(Split.from_data(synthetic(q, 8, 5, seed=s)) for q, s in ((30, 1), (10, 2), (12, 3)))


def test_split_from_data_checks_queries_and_densifies():
    d = synthetic(4, 5, 3, seed=0)
    s = Split.from_data((sp.csr_matrix(d.X), d.y.astype(np.int32), list(d.group)))
    assert isinstance(s.X, np.ndarray) and s.X.dtype == np.float64 and s.X.flags.c_contiguous
    np.testing.assert_array_equal(s.X, d.X)
    assert s.y.dtype == np.float64 and s.sizes.dtype == np.int64
    assert s.ptr.tolist() == np.concatenate([[0], np.cumsum(d.group)]).tolist()
    assert s.qid.tolist() == np.repeat(np.arange(len(d.group)), d.group).tolist()
    with pytest.raises(ValueError, match=r"the data has no query information"):
        Split.from_data((d.X, d.y, None))


METHODS = ["lgb:lambdarank", "lgb:RankNet", "xgb:rank:ndcg", "xgb:LambdaRank(k=10)", "ole:RankNet[ole]",
           pytest.param("cb:YetiRank", marks=pytest.mark.skipif(not catboost_available(), reason="catboost not installed"))]


@pytest.mark.parametrize("name", METHODS)
def test_every_backend_returns_scores_and_a_curve_per_round(fold, name):
    tr, va, te = fold
    res = train(parse_method(name), Settings(rounds=ROUNDS, num_leaves=7, early_stopping=0, jobs=1), tr, va, te)
    assert isinstance(res, TrainResult)
    assert res.test_scores.shape == (te.y.size,) and res.valid_scores.shape == (va.y.size,)
    assert np.all(np.isfinite(res.test_scores)) and np.all(np.isfinite(res.valid_scores))
    assert res.rounds_trained == res.best_round == ROUNDS and res.curve.shape == (ROUNDS,)
    assert np.all((res.curve >= 0) & (res.curve <= 1)) and res.train_time > 0
    assert np.unique(res.test_scores).size > 1  # the model learned something that separates rows


def test_multi_output_scores_are_one_per_row(fold):
    tr, va, te = fold
    res = train(parse_method("lgb:McRank"), Settings(rounds=3, num_leaves=7, early_stopping=0, jobs=1), tr, va, te)
    assert res.test_scores.shape == (te.y.size,)
    assert np.all(res.test_scores >= 0) and np.all(res.test_scores <= tr.y.max())  # an expected grade


def test_first_curve_walks_the_nested_record():
    assert _first_curve({"valid": {"ndcg@10": [0.5, 0.6]}, "train": {"x": [1.0]}}).tolist() == [0.5, 0.6]
    assert _first_curve([0.1]).tolist() == [0.1]
    assert _first_curve({"valid": {}}).size == 0


def test_regression_em_trains_on_a_click_log_and_stops_early():
    from customobj.compare.trainers import _best_round
    from customobj.data import simulate_clicks

    d = synthetic(40, 10, 5, seed=0)
    log = simulate_clicks(d, ranker=d.X[:, 0], sessions=3, seed=0)
    tr = Split(log.X, log.y.astype(np.float64), log.group.astype(np.int64), log.position)
    va = Split.from_data(synthetic(10, 8, 5, seed=1))
    st = Settings(rounds=6, num_leaves=7, early_stopping=0, jobs=1)
    res = train(parse_method("lgb:RegressionEM(n_iter=3)"), st, tr, va, va)
    assert res.rounds_trained == res.best_round == 6 and res.curve.shape == (6,)
    # the kept model is the EM model's first best_round trees: its validation score is the curve's
    kept = customobj.metrics.ndcg(res.valid_scores, va.y, va.sizes, 10)
    assert kept == pytest.approx(res.curve[-1])
    with pytest.raises(ValueError, match="--clicks"):
        train(parse_method("lgb:RegressionEM"), st, va, va, va)
    # early stopping's rule: the first best, found before `patience` rounds without a gain
    curve = np.array([0.1, 0.3, 0.2, 0.3, 0.25, 0.5])
    assert [_best_round(curve, p) for p in (0, 1, 2, 3, 4)] == [6, 2, 2, 2, 6]


def test_the_warm_up_sample_reaches_the_first_click():
    """A click log whose first ~500 rows hold no click: the 2-round trial must still see one (it failed
    for the click methods with a ValueError that blamed their options)."""
    from customobj.compare.trainers import SAMPLE_ROWS, warm_up, warm_up_sample

    sizes = np.full(120, 10, dtype=np.int64)
    y = np.zeros(sizes.sum())
    y[[SAMPLE_ROWS + 203, SAMPLE_ROWS + 215, 1100]] = 1.0
    rng = np.random.default_rng(0)
    split = Split(rng.normal(size=(y.size, 4)), y, sizes, np.tile(np.arange(10), 120))
    sample = warm_up_sample(split)
    assert sample.sizes.sum() == SAMPLE_ROWS + 210 and sample.y.sum() == 1.0  # whole queries, up to the click
    assert np.array_equal(sample.position, split.position[:SAMPLE_ROWS + 210])
    warm_up(parse_method("lgb:Unbiased(objective=LambdaRank)"), Settings(rounds=2, num_leaves=7, jobs=1), sample)
    graded = Split(split.X, np.ones_like(y), sizes)  # no row above the lowest label: about SAMPLE_ROWS rows
    assert warm_up_sample(graded).sizes.sum() == SAMPLE_ROWS


@pytest.mark.parametrize("name", ["lgb:YetiRank", "ole:XENDCG"])
def test_the_run_seed_reaches_an_objective_that_draws_random_numbers(fold, name):
    """Issue 39: --seeds K trained K identical copies of YetiRank / XENDCG, whose own seed stayed 0."""
    tr, va, te = fold
    spec = parse_method(name)
    runs = [train(spec, Settings(rounds=3, num_leaves=7, early_stopping=0, jobs=1, seed=seed), tr, va, te)
            for seed in (0, 1, 0)]
    assert not np.array_equal(runs[0].test_scores, runs[1].test_scores)
    np.testing.assert_array_equal(runs[0].test_scores, runs[2].test_scores)  # one seed, one model
    fixed = parse_method(name.replace(":YetiRank", ":YetiRank(seed=4)").replace(":XENDCG", ":XENDCG(seed=4)"))
    same = [train(fixed, Settings(rounds=3, num_leaves=7, early_stopping=0, jobs=1, seed=s), tr, va, te) for s in (0, 1)]
    np.testing.assert_array_equal(same[0].test_scores, same[1].test_scores)  # a seed the method fixes is kept
