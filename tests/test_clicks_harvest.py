"""Intervention harvesting (customobj/clicks/harvest.py; issue 33 item 5): propensities from the logs
of two or more rankers recover the simulated PBM curve within 0.05 on MQ2008, match a hand-computed
case, read the same from read_click_log tables with document ids, train Unbiased(propensity=...), and
refuse hostile logs naming the argument."""
import numpy as np
import pandas as pd
import pytest

import customobj
from customobj import adapters  # before lightgbm: OpenMP wait policy

import lightgbm as lgb  # noqa: E402
from customobj.clicks import harvest_propensities, simulate_clicks
from customobj.clicks.reader import ClickData
from customobj.data import load_letor, read_click_log

# MQ2008 features 1 (a term frequency) and 40 (a language-model score) order queries quite differently;
# features 1 and 5 (two term frequencies) barely do: few interventions, a noisier estimate (docs/clicks.md).
RANKERS = (0, 39, 4)


@pytest.fixture(scope="module")
def mq2008(data_dir):
    return load_letor(str(data_dir / "mq2008" / "Fold1" / "train.txt.gz"))


def _logs(data, features, eta, sessions=30):
    return [simulate_clicks(data, ranker=np.asarray(data.X[:, j], dtype=np.float64), eta=eta, sessions=sessions,
                            seed=s) for s, j in enumerate(features)]


@pytest.mark.parametrize("features, eta", [(RANKERS, 0.5), (RANKERS, 1.0), (RANKERS, 2.0), (RANKERS[:2], 1.0)])
def test_harvested_curve_within_005_of_the_true_pbm_curve(mq2008, features, eta):
    p = harvest_propensities(_logs(mq2008, features, eta))
    assert p.shape == (10,) and p[0] == 1.0
    np.testing.assert_allclose(p, (1.0 / np.arange(1, 11)) ** eta, atol=0.05)


def test_top_ratio_estimator_within_005_where_every_position_meets_the_top(mq2008):
    p = harvest_propensities(_logs(mq2008, RANKERS, 1.0), estimator="top_ratio")
    np.testing.assert_allclose(p, 1.0 / np.arange(1, 11), atol=0.05)


def _hand_logs(document_b=("y", "x")):
    """Log A, 2 sessions of query q: x at the top, y second; clicks (x) and (x, y). Log B, 1 session:
    y at the top, x second; both clicked. Weights w(q, d, k) = 1 / n of the log showing d at k."""
    a = ClickData(np.zeros((4, 1)), np.array([1.0, 0.0, 1.0, 1.0]), np.array([2, 2]), np.array([0, 1, 0, 1]),
                  np.array(["q", "q"]), np.array([0, 1]), np.arange(4), np.array(["x", "y", "x", "y"]))
    b = ClickData(np.zeros((2, 1)), np.array([1.0, 1.0]), np.array([2]), np.array([0, 1]), np.array(["q"]),
                  np.array([0]), np.arange(2), np.array(document_b))
    return [a, b]


def test_a_hand_computed_case():
    # c~_1 = 2 clicks of x at 1 / n_A + 1 click of y at 1 / n_B = 2; c~_2 = 1 / n_B + 1 / n_A = 1.5
    for estimator in ("top_ratio", "all_pairs"):  # one set, both positions' click rates fitted exactly
        np.testing.assert_allclose(harvest_propensities(_hand_logs(), estimator=estimator), [1.0, 0.75], rtol=1e-7)


def test_tables_with_document_ids_give_the_simulated_logs_estimate(mq2008):
    logs = _logs(mq2008, RANKERS[:2], 1.0, sessions=5)
    tables = []
    for log in logs:
        session = np.repeat(np.arange(log.group.size), log.group)
        frame = pd.DataFrame({"qid": [f"q{q}" for q in log.qid], "sid": session, "rank": log.position + 1,
                              "doc": [f"d{r}" for r in log.row], "click": log.y.astype(int), "f": 0.0})
        frame = frame.sample(frac=1.0, random_state=0)  # rows in any order
        tables.append(read_click_log(frame, query="qid", session="sid", position="rank", click="click",
                                     features=["f"], document="doc", first_position=1))
    assert tables[0].document.dtype.kind in "UO" and tables[0].document.shape == tables[0].y.shape
    np.testing.assert_allclose(harvest_propensities(tables), harvest_propensities(logs), rtol=1e-6)


def test_harvested_propensities_train_unbiased_through_lightgbm():
    d = customobj.data.synthetic(200, 12, 5, seed=0)
    rng = np.random.default_rng(0)
    logs = [simulate_clicks(d, ranker=d.y + rng.normal(0.0, 2.0, d.y.size), sessions=10, shown=5, seed=s)
            for s in range(3)]
    p = harvest_propensities(logs)
    obj = customobj.Unbiased(customobj.LambdaRank(), propensity=p)
    ds = lgb.Dataset(logs[0].X, logs[0].y, group=logs[0].group, position=logs[0].position)
    f = adapters.lightgbm_objective(obj)
    booster = lgb.train(dict(objective=f, verbose=-1, num_threads=1), ds, 3)
    assert np.all(np.isfinite(booster.predict(d.X)))
    np.testing.assert_array_equal(f.fitted_attributes(ds)["position_bias_"], p)


def _with(log, **fields):
    return log._replace(**fields)


def test_hostile_logs_are_refused_naming_the_argument():
    d = customobj.data.synthetic(40, 8, 4, seed=0)
    a, b = (simulate_clicks(d, ranker=d.X[:, j], sessions=5, seed=j) for j in (0, 1))
    with pytest.raises(ValueError, match=r"logs holds 1 click log"):
        harvest_propensities([a])
    with pytest.raises(TypeError, match="logs must be a list"):
        harvest_propensities(a)
    with pytest.raises(TypeError, match=r"logs\[1\] must be a ClickLog"):
        harvest_propensities([a, (b.y, b.group)])
    same = simulate_clicks(d, ranker=d.X[:, 0], sessions=5, seed=9)  # one ranker: every row at one position
    with pytest.raises(ValueError, match="no query-document is shown at two different positions"):
        harvest_propensities([a, same])
    shifted = _with(b, qid=b.qid + 1)  # rows of another data set: row r under another query
    with pytest.raises(ValueError, match=r"logs\[1\]: a source row appears under two queries"):
        harvest_propensities([a, shifted])
    with pytest.raises(ValueError, match="estimator"):
        harvest_propensities([a, b], estimator="em")
    with pytest.raises(ValueError, match="n_positions"):
        harvest_propensities([a, b], n_positions=1)


def test_hostile_tables_are_refused_naming_the_argument():
    a, b = _hand_logs()
    with pytest.raises(ValueError, match=r"logs\[1\] has no document ids.*document="):
        harvest_propensities([a, b._replace(document=None)])
    with pytest.raises(ValueError, match=r"logs\[1\]: document ids are numbers but those of logs\[0\] are strings"):
        harvest_propensities([a, b._replace(document=np.array([1, 2]))])
    with pytest.raises(ValueError, match=r"logs\[1\]: session 0 shows one document twice"):
        harvest_propensities(_hand_logs(document_b=("x", "x")))
    with pytest.raises(ValueError, match="no query-document is shown at two different positions"):
        harvest_propensities([a, a])
    with pytest.raises(TypeError, match="logs mixes ClickLog"):
        d = customobj.data.synthetic(10, 5, 2, seed=0)
        harvest_propensities([a, simulate_clicks(d, ranker=d.X[:, 0], sessions=1)])
    with pytest.raises(ValueError, match=r"logs\[1\]\.y must be 1-D"):
        harvest_propensities([a, b._replace(y=np.ones((2, 2)))])
    with pytest.raises(ValueError, match=r"logs\[1\]\.y must be clicks"):
        harvest_propensities([a, b._replace(y=np.array([1.0, 2.0]))])
    with pytest.raises(ValueError, match=r"logs\[1\]\.position"):
        harvest_propensities([a, b._replace(position=np.array([0, 0]))])
    with pytest.raises(ValueError, match="no click at position 2"):  # only the top rows clicked
        harvest_propensities([a._replace(y=np.array([1.0, 0.0, 1.0, 0.0])), b._replace(y=np.array([1.0, 0.0]))])


def test_a_position_no_set_links_to_the_top_is_refused():
    # both logs show x, y at positions 1-2 and z, w at 3-4, swapped within each block: 3-4 never meet 1-2
    docs_a, docs_b = np.array(["x", "y", "z", "w"]), np.array(["y", "x", "w", "z"])
    logs = [ClickData(np.zeros((4, 1)), np.ones(4), np.array([4]), np.arange(4), np.array(["q"]), np.array([0]),
                      np.arange(4), docs) for docs in (docs_a, docs_b)]
    with pytest.raises(ValueError, match=r"position 3 \(1 = top\) is linked to the top by no query-document"):
        harvest_propensities(logs)
    np.testing.assert_allclose(harvest_propensities(logs, n_positions=2), [1.0, 1.0], rtol=1e-7)
    # x at 1 and 4, y at 2 and 1, z at 3 and 2, w at 4 and 3: position 3 meets the top in no set
    chain = [logs[0], logs[1]._replace(document=np.array(["y", "z", "w", "x"]))]
    assert harvest_propensities(chain).shape == (4,)  # AllPairs chains 3 to the top through 2 and 4
    with pytest.raises(ValueError, match="top_ratio.*position 3"):
        harvest_propensities(chain, estimator="top_ratio")


def test_the_profiled_objectives_gradient_matches_finite_differences_and_its_q_is_each_sets_optimum():
    from scipy.special import xlogy

    from customobj.clicks.harvest import _profile

    rng = np.random.default_rng(3)
    k = 5
    a, b = np.nonzero(np.triu(np.ones((k, k), bool), 1))
    ra, rb = rng.uniform(1.0, 5.0, a.size), rng.uniform(1.0, 5.0, a.size)
    ca, cb = ra * rng.uniform(0.05, 0.9, a.size), rb * rng.uniform(0.05, 0.9, a.size)
    args = (a, b, ca, ra, cb, rb)
    x = rng.normal(0.0, 0.5, k - 1)
    value, grad = _profile(x, *args)
    eps = 1e-6
    numeric = [(_profile(x + eps * e, *args)[0] - _profile(x - eps * e, *args)[0]) / (2 * eps) for e in np.eye(k - 1)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)
    # the closed-form q of each set beats every q on a fine grid of its feasible range
    p = np.exp(np.concatenate(([0.0], x)))
    u, v = p[a], p[b]
    grid = np.linspace(1e-6, 1.0, 20001)[:, None] / np.maximum(u, v)
    per_q = xlogy(ca, u * grid) + xlogy(ra - ca, 1 - u * grid) + xlogy(cb, v * grid) + xlogy(rb - cb, 1 - v * grid)
    assert -value >= per_q.max(axis=0).sum() - 1e-6
    assert -value <= per_q.max(axis=0).sum() + 1e-3  # the grid's best is as good, up to its spacing
