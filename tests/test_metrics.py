"""customobj.metrics: hand-computed values, degenerate and bad input, metric names, LightGBM and
scikit-learn agreement. The kernels against slow references on random data: test_metric_kernels.py."""
import math

import numpy as np
import pytest

from customobj.groups import Groups
from customobj.metrics import (
    METRIC_NAMES,
    Metric,
    average_precision,
    dcg,
    err,
    get_metric,
    misordered_pairs,
    ndcg,
    ndcg_mpboost,
    precision_at_percent,
    reciprocal_rank,
)

L3 = math.log2(3.0)  # discount of rank 2


# ------------------------------------------------------------------------------------------------
# hand-computed examples
# ------------------------------------------------------------------------------------------------
# query A: scores 3, 2, 1 with labels 0, 1, 2 (ranked worst first)
# query B: scores 1, 1, 0.5 with labels 1, 0, 0 (tie between a relevant and an irrelevant row)
S = np.array([3.0, 2.0, 1.0, 1.0, 1.0, 0.5])
Y = np.array([0.0, 1.0, 2.0, 1.0, 0.0, 0.0])
G = [3, 3]


def test_ndcg_hand_computed():
    # A: DCG = 0/1 + 1/log2(3) + 3/2; IDCG = 3/1 + 1/log2(3). B: relevant row first -> 1.
    dcg_a = 1 / L3 + 3 / 2
    idcg_a = 3 + 1 / L3
    assert dcg(S, Y, G, k=None, per_query=True) == pytest.approx([dcg_a, 1.0], abs=1e-15)
    assert ndcg(S, Y, G, per_query=True) == pytest.approx([dcg_a / idcg_a, 1.0], abs=1e-15)
    assert ndcg(S, Y, G) == pytest.approx((dcg_a / idcg_a + 1) / 2, abs=1e-15)
    # k=1: A puts label 0 first -> 0; B -> 1
    assert ndcg(S, Y, G, k=1, per_query=True) == pytest.approx([0.0, 1.0])
    # k=2: A = (1/log2 3) / (3 + 1/log2 3)
    assert ndcg(S, Y, G, k=2, per_query=True)[0] == pytest.approx((1 / L3) / (3 + 1 / L3), abs=1e-15)
    # pessimistic ties: B's relevant row drops to rank 2 -> 1/log2(3)
    assert ndcg(S, Y, G, ties="pessimistic", per_query=True)[1] == pytest.approx(1 / L3, abs=1e-15)
    # gain table [0, 1, 2] (linear): A DCG = 1/log2 3 + 2/2, IDCG = 2 + 1/log2 3
    assert ndcg(S, Y, G, gain=[0, 1, 2], per_query=True)[0] == pytest.approx((1 / L3 + 1) / (2 + 1 / L3), abs=1e-15)


def test_ndcg_mpboost_hand_computed():
    # MPBoost: discounts 1, 1, 1/log2(3). A: DCG = 0 + 1 + 3/log2(3); IDCG = 3 + 1 + 0
    assert ndcg_mpboost(S, Y, G, per_query=True) == pytest.approx([(1 + 3 / L3) / 4, 1.0], abs=1e-15)
    # k=2: A = 1 / (3 + 1); rank-2 undiscounted distinguishes it from ndcg
    assert ndcg_mpboost(S, Y, G, k=2, per_query=True)[0] == pytest.approx(0.25, abs=1e-15)


def test_err_hand_computed():
    # max_grade = 2 -> R(0) = 0, R(1) = 1/4, R(2) = 3/4
    # A: 0 + (1/2)(1/4) + (1/3)(3/4)(1 - 1/4) = 0.125 + 0.1875;  B: R = 1/4 at rank 1
    assert err(S, Y, G, per_query=True) == pytest.approx([0.3125, 0.25], abs=1e-15)
    assert err(S, Y, G, k=2, per_query=True) == pytest.approx([0.125, 0.25], abs=1e-15)
    # max_grade = 3 -> R = (2^y - 1)/8. A: (1/2)(1/8) + (1/3)(3/8)(7/8)
    assert err(S, Y, G, max_grade=3, per_query=True)[0] == pytest.approx(1 / 16 + 7 / 64, abs=1e-15)


def test_map_mrr_hand_computed():
    # A: relevant at ranks 2 and 3 -> AP = (1/2 + 2/3)/2, RR = 1/2.  B: relevant at rank 1
    assert average_precision(S, Y, G, per_query=True) == pytest.approx([7 / 12, 1.0], abs=1e-15)
    assert reciprocal_rank(S, Y, G, per_query=True) == pytest.approx([0.5, 1.0], abs=1e-15)
    # AP@2 for A: (1/2) / min(2, 2) = 1/4 ; RR@1 for A: first relevant below rank 1 -> 0
    assert average_precision(S, Y, G, k=2, per_query=True)[0] == pytest.approx(0.25)
    assert reciprocal_rank(S, Y, G, k=1, per_query=True)[0] == 0.0
    assert average_precision(S, Y, G) == pytest.approx((7 / 12 + 1) / 2)


def test_pairwise_hand_computed():
    # pairs with different labels: A (0,1) (0,2) (1,2) all wrong; B (0,1) tie -> wrong, (0,2) right
    assert misordered_pairs(S, Y, G) == (4, 0.8)
    counts, frac = misordered_pairs(S, Y, G, per_query=True)
    assert counts.tolist() == [3, 1] and frac.tolist() == [1.0, 0.5]
    assert precision_at_percent(S, Y, G, 100) == pytest.approx(0.2)
    # |diff|: A 1 (wrong), 2 (wrong), 1 (wrong); B 0 (wrong), 0.5 (right).
    # sorted: 2(w), 1(w), 1(w), 0.5(r), 0(w). top 20% = 1 pair -> 0; top 80% = 4 pairs -> 1/4
    assert precision_at_percent(S, Y, G, 20) == 0.0
    assert precision_at_percent(S, Y, G, 80) == 0.25
    # ties in |diff| keep (query, i, j) order: A's (0,1) and (1,2) both have |diff| = 1
    s = np.array([2.0, 1.0, 0.0])
    y = np.array([2.0, 0.0, 1.0])  # (0,1) right with |1|, (0,2) right |2|, (1,2) wrong |1|
    assert precision_at_percent(s, y, [3], 60) == 1.0  # ceil(1.8) = top 2: |2| right, first |1| = (0,1) right
    assert precision_at_percent(s, y, [3], 100) == pytest.approx(2 / 3)


def test_invariant_to_permuting_whole_queries():
    rng = np.random.default_rng(3)
    sizes = rng.integers(0, 12, 25)
    n = sizes.sum()
    s, y = rng.integers(0, 5, n).astype(float), rng.integers(0, 4, n).astype(float)
    g = Groups.from_sizes(sizes)
    perm = rng.permutation(g.n_groups)
    rows, g2 = g.subset(perm)
    for name in ["ndcg@5", "ndcg", "dcg@3", "err@10", "map", "mrr", "ndcg_mpboost@5", "precision@100%", "misordered"]:
        f = get_metric(name).func
        assert f(s[rows], y[rows], g2) == pytest.approx(f(s, y, g), abs=1e-13), name
    assert np.array_equal(ndcg(s[rows], y[rows], g2, per_query=True), ndcg(s, y, g, per_query=True)[perm])


# ------------------------------------------------------------------------------------------------
# degenerate inputs
# ------------------------------------------------------------------------------------------------
def test_empty_groups_are_excluded_from_means():
    with_empty = [0, 3, 0, 3, 0]
    for fn in (ndcg, dcg, err, average_precision, reciprocal_rank, ndcg_mpboost):
        assert fn(S, Y, with_empty) == pytest.approx(fn(S, Y, G), abs=1e-15), fn.__name__
        pq = fn(S, Y, with_empty, per_query=True)
        assert pq.shape == (5,) and np.all(np.isfinite(pq))
    assert misordered_pairs(S, Y, with_empty) == misordered_pairs(S, Y, G)
    assert precision_at_percent(S, Y, with_empty, 50) == precision_at_percent(S, Y, G, 50)


def test_size_one_and_constant_label_queries():
    s = np.array([0.3, 1.0, 2.0, 0.5, 0.1, 0.2])
    y = np.array([2.0, 1.0, 1.0, 0.0, 0.0, 0.0])  # size-1 query, all-equal query, all-zero query
    sizes = [1, 2, 3]
    assert ndcg(s, y, sizes, per_query=True).tolist() == [1.0, 1.0, 1.0]  # all-zero -> empty = 1
    assert ndcg(s, y, sizes, empty=0.0, per_query=True).tolist() == [1.0, 1.0, 0.0]
    assert ndcg(s, y, sizes, empty="exclude") == 1.0
    pq = ndcg(s, y, sizes, empty="exclude", per_query=True)
    assert pq[:2].tolist() == [1.0, 1.0] and np.isnan(pq[2])
    assert err(s, y, sizes, per_query=True)[2] == 0.0
    assert average_precision(s, y, sizes, empty=0.0, per_query=True).tolist() == [1.0, 1.0, 0.0]
    assert reciprocal_rank(s, y, sizes, per_query=True).tolist() == [1.0, 1.0, 1.0]
    assert misordered_pairs(s, y, sizes) == (0, 0.0)
    assert precision_at_percent(s, y, sizes, 10) == 1.0  # no pair at all
    zero = np.zeros(6)
    assert ndcg(s, zero, sizes) == 1.0 and dcg(s, zero, sizes) == 0.0 and err(s, zero, sizes) == 0.0
    with pytest.raises(ValueError, match="no query to average"):
        ndcg(s, zero, sizes, empty="exclude")


def test_no_rows_is_an_error_not_nan():
    with pytest.raises(ValueError, match="no query to average"):
        ndcg(np.zeros(0), np.zeros(0), [0, 0])
    assert ndcg(np.zeros(0), np.zeros(0), [0, 0], per_query=True).tolist() == [1.0, 1.0]
    assert misordered_pairs(np.zeros(0), np.zeros(0), []) == (0, 0.0)


# ------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------
def test_bad_inputs_raise_with_clear_messages():
    with pytest.raises(ValueError, match="labels has 5 rows but data has 6 rows"):
        ndcg(S, Y[:5], G)
    with pytest.raises(ValueError, match="group sizes sum to 5 but data has 6 rows"):
        err(S, Y, [3, 2])
    with pytest.raises(ValueError, match="scores must be finite"):
        ndcg(np.r_[S[:-1], np.nan], Y, G)
    with pytest.raises(ValueError, match="non-negative"):
        ndcg(S, -Y, G)
    with pytest.raises(ValueError, match="k must be >= 1"):
        ndcg(S, Y, G, k=0)
    with pytest.raises(TypeError, match="k must be an integer"):
        dcg(S, Y, G, k=2.5)
    with pytest.raises(ValueError, match="ties must be one of"):
        ndcg(S, Y, G, ties="optimistic")
    with pytest.raises(ValueError, match="empty must be one of"):
        ndcg(S, Y, G, empty="drop")
    with pytest.raises(ValueError, match="gain table has 2 entries"):
        ndcg(S, Y, G, gain=[0, 1])
    with pytest.raises(ValueError, match="integer grades"):
        ndcg(S, Y + 0.5, G, gain=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="max_grade"):
        err(S, Y, G, max_grade=1)
    with pytest.raises(ValueError, match="percent must be in"):
        precision_at_percent(S, Y, G, 0)
    with pytest.raises(TypeError, match="group is required"):
        ndcg(S, Y, None)


# ------------------------------------------------------------------------------------------------
# name resolver
# ------------------------------------------------------------------------------------------------
def test_get_metric_names():
    m = get_metric("NDCG@10")
    assert isinstance(m, Metric) and m.name == "ndcg@10" and m.higher_is_better
    assert m.func(S, Y, G) == ndcg(S, Y, G, k=10)
    assert get_metric("ndcg").func(S, Y, G) == ndcg(S, Y, G, k=None)
    assert get_metric("dcg@5").func(S, Y, G) == dcg(S, Y, G, k=5)
    assert get_metric("err@1").func(S, Y, G) == err(S, Y, G, k=1)
    assert get_metric("err").func(S, Y, G) == err(S, Y, G)
    assert get_metric("map").func(S, Y, G) == average_precision(S, Y, G)
    assert get_metric("mrr").func(S, Y, G) == reciprocal_rank(S, Y, G)
    assert get_metric("ndcg_mpboost@2").func(S, Y, G) == ndcg_mpboost(S, Y, G, k=2)
    p = get_metric("precision@80%")
    assert p.name == "precision@80%" and p.func(S, Y, G) == 0.25
    assert get_metric("precision@12.5%").func(S, Y, G) == precision_at_percent(S, Y, G, 12.5)
    mis = get_metric("misordered")
    assert not mis.higher_is_better and mis.func(S, Y, G) == 0.8
    for bad in ["ndgc@10", "ndcg@0", "precision@0%", "precision@150%", "ndcg@-1", ""]:
        with pytest.raises(ValueError, match="metric"):
            get_metric(bad)
    with pytest.raises(ValueError, match=r"ndcg@K"):
        get_metric("auc")
    assert "precision@P%" in METRIC_NAMES


# ------------------------------------------------------------------------------------------------
# agreement with scikit-learn and LightGBM
# ------------------------------------------------------------------------------------------------
def test_matches_sklearn_ndcg_score_with_linear_gain():
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(0)
    for _ in range(15):
        n = int(rng.integers(2, 30))
        y = rng.integers(0, 5, n).astype(float)
        if y.max() == 0:
            y[0] = 1
        s = rng.permutation(n).astype(float) + rng.normal(0, 0.1, n)  # distinct scores
        for k in (1, 3, 10, None):
            want = ndcg_score(y[None], s[None], k=k, ignore_ties=True)
            assert ndcg(s, y, [n], k=k, gain=np.arange(5.0)) == pytest.approx(want, abs=1e-12)


def _read_svmlight_with_query(path, n_features=None):
    """rank.train.gz + rank.train.query.gz (the project's loader is not used here on purpose)."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path), n_features=n_features)
    sizes = np.loadtxt(str(path).replace(".gz", ".query.gz"), dtype=np.int64)
    return X, y, sizes


def _lightgbm_eval(X, y, sizes, Xv, yv, sv, rounds, params):
    import lightgbm as lgb
    train = lgb.Dataset(X, y, group=sizes)
    valid = lgb.Dataset(Xv, yv, group=sv, reference=train)
    record = {}
    booster = lgb.train(
        {"objective": "lambdarank", "metric": ["ndcg", "map"], "eval_at": [1, 3, 5, 10], "verbosity": -1,
         "num_threads": 1, "deterministic": True, **params},
        train, num_boost_round=rounds, valid_sets=[valid], valid_names=["valid"],
        callbacks=[lgb.record_evaluation(record)],
    )
    return booster, record["valid"]


def _check_against_lightgbm(booster, rec, Xv, yv, sv, rounds):
    n_ties = 0
    for it in range(1, rounds + 1):
        pred = booster.predict(Xv, num_iteration=it)
        n_ties += pred.size - np.unique(pred).size
        for k in (1, 3, 5, 10):
            assert ndcg(pred, yv, sv, k=k) == pytest.approx(rec[f"ndcg@{k}"][it - 1], abs=1e-9), (it, k)
            assert average_precision(pred, yv, sv, k=k) == pytest.approx(rec[f"map@{k}"][it - 1], abs=1e-9), (it, k)
    return n_ties


def test_ndcg_matches_lightgbm_on_example_data(data_dir):
    d = data_dir / "lightgbm-example"
    X, y, sizes = _read_svmlight_with_query(d / "rank.train.gz")
    Xv, yv, sv = _read_svmlight_with_query(d / "rank.test.gz", n_features=X.shape[1])
    rounds = 4
    booster, rec = _lightgbm_eval(X, y, sizes, Xv, yv, sv, rounds, {"num_leaves": 7, "learning_rate": 0.3})
    _check_against_lightgbm(booster, rec, Xv, yv, sv, rounds)


def test_ndcg_matches_lightgbm_with_ties_and_all_zero_queries():
    # coarse integer features -> many tied predictions; several queries with all-zero labels
    rng = np.random.default_rng(1)
    sizes = rng.integers(1, 25, 60)
    n = int(sizes.sum())
    X = rng.integers(0, 3, (n, 4)).astype(float)
    y = np.clip(X[:, 0] + rng.integers(-1, 2, n), 0, 3)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    for q in range(0, 60, 7):
        y[starts[q]:starts[q] + sizes[q]] = 0
    cut = int(sizes[:40].sum())
    rounds = 3
    booster, rec = _lightgbm_eval(X[:cut], y[:cut], sizes[:40], X[cut:], y[cut:], sizes[40:], rounds,
                                  {"num_leaves": 4, "min_data_in_leaf": 5})
    n_ties = _check_against_lightgbm(booster, rec, X[cut:], y[cut:], sizes[40:], rounds)
    assert n_ties > 0  # the comparison really exercised tied scores
    assert any(y[cut:][a:b].max() == 0 for a, b in zip(np.r_[0, np.cumsum(sizes[40:])[:-1]], np.cumsum(sizes[40:])))
