"""customobj.ole.evaluation: eval sets checked before the first tree, metrics resolved by name or
callable, McRank's ranking score, per-round metric records and early stopping."""
import numpy as np
import pytest

from customobj.groups import Groups
from customobj.metrics import ndcg
from customobj.ole.evaluation import (EarlyStopping, EvalSet, prepare_evals, ranking_score, resolve_metrics,
                                      score_queries, update_evals)
from customobj.ole.tree import LEAF_DTYPE, NODE_DTYPE, Tree


def data(seed=0, n=40, n_features=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n_features)), rng.integers(0, 3, n).astype(float)


def test_resolve_metrics_by_name_and_callable():
    def mine(scores, labels, group):
        return 0.5

    named, custom = resolve_metrics(["NDCG@5", mine])
    assert (named.name, named.higher_is_better) == ("ndcg@5", True)
    assert (custom.name, custom.func, custom.higher_is_better) == ("mine", mine, True)
    assert [m.name for m in resolve_metrics("misordered")] == ["misordered"]
    with pytest.raises(TypeError, match="eval_metric entries must be metric names or callables, got int"):
        resolve_metrics([3])


def test_prepare_evals_builds_named_sets_with_zero_raw_scores():
    X, y = data()
    evals = prepare_evals((X, y), [[20, 20]], None, "ndcg@10", n_features=3, n_outputs=2)
    (ev,) = evals
    assert isinstance(ev, EvalSet) and ev.name == "valid_0"
    np.testing.assert_array_equal(ev.groups.sizes, [20, 20])
    assert ev.raw.shape == (40, 2) and not ev.raw.any()
    # no queries given: one query of every row; by query ids
    assert prepare_evals([(X, y)], None, None, "ndcg", 3, 1)[0].groups.sizes.tolist() == [40]
    by_qid = prepare_evals([(X, y)], None, [np.repeat([4, 9], 20)], "ndcg", 3, 1)[0]
    assert by_qid.groups.sizes.tolist() == [20, 20]
    assert prepare_evals(None, None, None, "ndcg", 3, 1) == []


@pytest.mark.parametrize("args, exc, message", [
    (("nope", None, None), TypeError, "eval_set must be a list of (X, y) pairs, got str"),
    (([(1, 2, 3)], None, None), TypeError, "eval_set[0] must be an (X, y) pair"),
    (([("X", "y")], [[1], [2]], None), ValueError, "eval_group must be a list with one entry per eval_set entry (1)"),
    (([("X", "y")], None, "q"), ValueError, "eval_qid must be a list with one entry per eval_set entry (1)"),
])
def test_prepare_evals_refuses_malformed_sets(args, exc, message):
    with pytest.raises(exc) as info:
        prepare_evals(*args, "ndcg", 3, 1)
    assert message in str(info.value)


def test_prepare_evals_checks_widths_and_lengths_against_training():
    X, y = data()
    with pytest.raises(ValueError, match=r"eval_set\[0\] X has 3 features but X has 4"):
        prepare_evals([(X, y)], None, None, "ndcg", 4, 1)
    with pytest.raises(ValueError, match=r"eval_set\[1\] X has 40 rows but y has 39"):
        prepare_evals([(X, y), (X, y[:-1])], None, None, "ndcg", 3, 1)
    with pytest.raises(ValueError, match=r"eval_group\[0\]"):
        prepare_evals([(X, y)], [[30]], None, "ndcg", 3, 1)


def test_ranking_score_is_the_raw_score_or_mcranks_expected_grade():
    raw = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 50.0], [50.0, 0.0, 0.0]])
    np.testing.assert_allclose(ranking_score(raw), [1.0, 2.0, 0.0], atol=1e-12)
    np.testing.assert_array_equal(ranking_score(np.array([[0.5], [2.0]])), [0.5, 2.0])
    np.testing.assert_array_equal(ranking_score(np.array([0.5, 2.0])), [0.5, 2.0])


def stump(feature, threshold, left, right):
    nodes = np.zeros(1, NODE_DTYPE)
    nodes["split_feature"], nodes["threshold"], nodes["left_child"], nodes["right_child"] = feature, threshold, -1, -2
    leaves = np.zeros(2, LEAF_DTYPE)
    leaves["leaf_value"] = left, right
    return Tree(nodes, leaves)


def test_update_evals_adds_the_rounds_trees_and_records_each_metric():
    X, y = data(1)
    (ev,) = prepare_evals([(X, y)], [[20, 20]], None, ["ndcg@10", "misordered"], 3, 1)
    result = {"valid_0": {"ndcg@10": [], "misordered": []}}
    tree = stump(0, 0.0, -1.0, 1.0)
    update_evals([ev], [tree], result)
    update_evals([ev], [tree], result)
    want = np.where(X[:, 0] <= 0.0, -2.0, 2.0)
    np.testing.assert_array_equal(ev.raw[:, 0], want)
    assert result["valid_0"]["ndcg@10"] == [pytest.approx(ndcg(want, y, [20, 20], k=10))] * 2
    assert len(result["valid_0"]["misordered"]) == 2


def test_early_stopping_tracks_the_first_metric_of_the_first_set():
    X, y = data()
    evals = prepare_evals([(X, y)], None, None, ["ndcg@10", "ndcg@3"], 3, 1)
    stop = EarlyStopping(evals, rounds=2)
    result = {"valid_0": {"ndcg@10": [], "ndcg@3": []}}
    for it, (v10, v3) in enumerate([(0.5, 0.9), (0.7, 0.1), (0.6, 0.95), (0.7, 0.99)], start=1):
        result["valid_0"]["ndcg@10"].append(v10)
        result["valid_0"]["ndcg@3"].append(v3)
        stop.update(it, result)
        assert stop.should_stop == (it == 4)  # 0.7 again is no improvement
    assert (stop.best_iteration, stop.best_value) == (2, 0.7)
    assert stop.describe() == "best iteration 2, valid_0 ndcg@10 = 0.7"


def test_early_stopping_lower_is_better_and_without_eval_sets():
    X, y = data()
    stop = EarlyStopping(prepare_evals([(X, y)], None, None, "misordered", 3, 1), rounds=1)
    result = {"valid_0": {"misordered": []}}
    for it, v in enumerate([0.4, 0.3, 0.35], start=1):
        result["valid_0"]["misordered"].append(v)
        stop.update(it, result)
    assert (stop.best_iteration, stop.should_stop) == (2, True)
    idle = EarlyStopping([], rounds=1)
    idle.update(1, {})
    assert (idle.should_stop, idle.describe()) == (False, "")
    tracking = EarlyStopping(prepare_evals([(X, y)], None, None, "ndcg", 3, 1), rounds=None)
    for it in range(1, 4):
        tracking.update(it, {"valid_0": {"ndcg": [0.5]}})
    assert (tracking.best_iteration, tracking.should_stop) == (1, False)


def test_score_queries_is_the_mean_metric_and_refuses_lower_is_better():
    X, y = data(2)
    groups = Groups.from_sizes([20, 20])
    assert score_queries(X[:, 0], y, groups, "ndcg@10") == pytest.approx(ndcg(X[:, 0], y, [20, 20], k=10))
    with pytest.raises(ValueError, match="metric 'misordered' is lower-is-better"):
        score_queries(X[:, 0], y, groups, "misordered")
    with pytest.raises(TypeError, match="metric must be a metric name"):
        score_queries(X[:, 0], y, groups, 10)
