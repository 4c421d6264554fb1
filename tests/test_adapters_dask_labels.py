"""adapters/_dask_labels.py and adapters/_dask_collective.py: MultiObjective's label columns split with
the Dask partitions (numpy, Dask arrays of other chunks, DataFrame columns) give the one-machine weights and
model on a 2-worker LocalCluster, on XGBoost and on LightGBM (the round's sums through Dask Variables, in rank
order, with a timeout); hostile columns are refused before training; a worker finds its rows' labels in any
row order. (Moved out of tests/test_adapters_dask.py, which keeps distributed training and the click models.)"""
import os  # noqa: F401

import numpy as np
import pytest

from customobj import adapters  # noqa: F401  (thread environment before lightgbm / xgboost load)

da = pytest.importorskip("dask.array")
pytest.importorskip("dask.dataframe")  # xgboost.dask needs it (and pyarrow)
distributed = pytest.importorskip("distributed")

import lightgbm as lgb  # noqa: E402
import xgboost as xgb  # noqa: E402

import customobj  # noqa: E402
from customobj.adapters import dask as ad  # noqa: E402
from _dask_cluster import FITTED_PARAMS, _xgboost_on_one_machine  # noqa: E402


# ------------------------------------------------------------------------------------------------
# MultiObjective's label columns (issue 41): split with the partitions, the one-machine model
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_labels():
    """MQ-like rows (features on a grid of 8 levels: the one-machine bins on every worker) with a second,
    graded label that conflicts with the first: feature 1 graded 0..3."""
    d = customobj.data.synthetic(40, 10, 5, seed=0)
    X = np.round(d.X * 7) / 7
    return X, d.y, np.asarray(d.group), np.clip(np.round(X[:, 1]), 0, 3)


def _frame_cuts(g, n_rows):
    """Row offsets cutting the data into three partitions of whole queries."""
    ptr = np.concatenate([[0], np.cumsum(g)])
    return [int(ptr[np.searchsorted(ptr, n * n_rows // 3)]) for n in (1, 2)]


def _mo_data(X, g, second, how):
    """``(X, second label)``: numpy twice; numpy X with a Dask array of other chunks than the partitions;
    or the features and the label as columns of one Dask DataFrame whose three partitions hold whole
    queries (kept as the training partitions: one worker holds two, so its DMatrix sorts its rows)."""
    if how == "numpy":
        return X, second
    if how == "array":
        return X, da.from_array(second, chunks=77)
    import dask.dataframe as dd
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(second=second)
    cuts = _frame_cuts(g, X.shape[0])
    ddf = dd.from_pandas(frame, npartitions=1).repartition(divisions=[0, *cuts, X.shape[0] - 1])
    return ddf.drop(columns="second"), ddf["second"]


def _assert_the_one_machine_attributes(got, want, method, rounds):
    """A Dask run's fitted attributes are one machine's: the same names (costs but for ``linear``, duals for
    ``epsilon_constraint``), one row a round, equal to 1e-12 (the round's sums over two workers differ from one
    machine's in their last bits: summation order), no fallback."""
    names = {"label_weights_", "label_fallbacks_"} | ({"label_costs_"} if method != "linear" else set()) | (
        {"label_duals_"} if method == "epsilon_constraint" else set())
    assert got.keys() == want.keys() == names
    for name in names - {"label_fallbacks_"}:
        assert got[name].shape[0] == rounds
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-12 * np.abs(want[name]).max())
    assert int(got["label_fallbacks_"]) == int(want["label_fallbacks_"]) == 0


MO_CASES = [pytest.param("linear", {"preference": [1, 3]}, "numpy", id="linear-numpy"),
            pytest.param("epo", {"preference": [1, 2]}, "array", id="epo-dask_array"),
            pytest.param("epsilon_constraint", {"bounds": [1.5], "dual_interval": 1}, "frame",
                         id="epsilon_constraint-dask_frame")]


@pytest.mark.parametrize("method, options, how", MO_CASES)
def test_multi_objective_label_columns_two_workers_give_the_one_machine_model(client, two_labels, method, options,
                                                                              how):
    import warnings

    from customobj.multi import MultiObjective

    X, y, g, second = two_labels
    losses = [customobj.LambdaRank(), customobj.RankNet()]
    with warnings.catch_warnings():  # an unmet bound is said when the attributes are read: not the question here
        warnings.simplefilter("ignore", UserWarning)
        local, want = _xgboost_on_one_machine(MultiObjective(losses, labels=[None, second], method=method,
                                                             **options), X, y, g, 4)
        main_only, main_attrs = _xgboost_on_one_machine(MultiObjective(losses, method=method, **options), X, y, g, 4)
    data, column = _mo_data(X, g, second, how)
    if how == "frame":
        assert data.npartitions == column.npartitions == 3
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        out = ad.train_xgboost(client, FITTED_PARAMS, data, y, g,
                               MultiObjective(losses, labels=[None, column], method=method, **options),
                               num_boost_round=4)
    got = out["fitted_attributes"]
    assert not [n for n in client.list_datasets() if str(n).startswith("customobj-labels-")]  # the blocks let go
    unmet = [str(w.message) for w in said if "was not met" in str(w.message)]
    if method == "epsilon_constraint":  # the bound is not met in 4 rounds: said on the client, with the cost reached
        assert want["label_costs_"][-1, 1] > options["bounds"][0]
        assert len(unmet) == 1 and f"is {want['label_costs_'][-1, 1]:.6g} after 4 rounds" in unmet[0]
        assert [w.filename for w in said if "was not met" in str(w.message)] == [__file__]
    else:
        assert not unmet
    _assert_the_one_machine_attributes(got, want, method, rounds=4)
    dx = xgb.DMatrix(X)
    np.testing.assert_allclose(out["booster"].predict(dx), local.predict(dx), rtol=0, atol=1e-9)
    # the second label was read: trained on the data's label twice, the model is another one
    assert np.abs(local.predict(dx) - main_only.predict(dx)).max() > 1e-3
    if method != "linear":
        assert np.abs(want["label_costs_"][:, 1] - main_attrs["label_costs_"][:, 1]).max() > 1e-3


@pytest.mark.parametrize("how, weighted", [("numpy", False), ("frame", True)], ids=["numpy", "dask_frame-weighted"])
def test_multi_objective_label_columns_on_lightgbm_linear_give_the_one_machine_model(client, two_labels, how, weighted):
    """lightgbm.dask, method="linear" (nothing summed over the workers): the rows' partitions ride in LightGBM's
    weights, the user's weights with the label columns. One binary feature: every tree has its one possible
    split, so the two workers' model is the one-machine model whatever LightGBM's rank order (its histogram
    sums then differ in the last bits only)."""
    from customobj.multi import MultiObjective

    X, y, g, second = two_labels
    binary = (X[:, [1]] > 0.5).astype(np.float64)
    w = np.round(np.random.default_rng(3).uniform(0.5, 2.0, y.shape[0]) * 8) / 8 if weighted else None
    params = dict(num_leaves=2, learning_rate=0.3, min_data_in_leaf=1, min_data_in_bin=1, verbose=-1)
    losses = [customobj.LambdaRank(), customobj.RankNet()]

    def one_machine(labels):
        obj = MultiObjective(losses, labels=labels, preference=[1, 3])
        return lgb.LGBMRanker(objective=adapters.lightgbm_sklearn_objective(obj), n_estimators=3, n_jobs=1,
                              **params).fit(binary, y, group=g, sample_weight=w).predict(binary)

    data, column = _mo_data(binary, g, second, how)
    model = ad.train_lightgbm(client, params, data, y, g, MultiObjective(losses, labels=[None, column], preference=[1, 3]),
                              num_boost_round=3, weight=w)
    want = one_machine([None, second])
    assert not [n for n in client.list_datasets() if str(n).startswith("customobj-labels-")]  # the blocks let go
    np.testing.assert_allclose(model.to_local().predict(binary), want, rtol=0, atol=1e-9)
    assert np.abs(want - one_machine(None)).max() > 1e-3  # the second label (and the weights) were read


def _variables_become(client, prefix, names, wait_s=20.0):
    """Whether the scheduler's Variables named ``prefix...`` become ``names`` within ``wait_s`` (Variable.delete
    is a message the scheduler handles when it comes: polled, not read once)."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        found = sorted(n for n in client.run_on_scheduler(
            lambda dask_scheduler: list(dask_scheduler.extensions["variables"].variables)) if str(n).startswith(prefix))
        if found == sorted(names) or time.monotonic() > deadline:
            return found == sorted(names)
        time.sleep(0.05)


LGB_SUMMED = [pytest.param("epo", {"preference": [1, 2]}, id="epo"),
              pytest.param("epsilon_constraint", {"bounds": [1.5], "dual_interval": 1}, id="epsilon_constraint")]


@pytest.mark.parametrize("method, options", LGB_SUMMED)
def test_lightgbm_sums_the_costs_and_gram_over_the_workers(client, two_labels, method, options):
    """lightgbm.dask with a method that reads the round's costs (and Gram matrix): summed over the two workers
    through Dask Variables (adapters/_dask_collective.py), the one-machine weights, costs, duals and model. One
    binary feature: every tree has its one possible split, whatever LightGBM's rank order."""
    import warnings

    from customobj.multi import MultiObjective

    X, y, g, second = two_labels
    binary = (X[:, [1]] > 0.5).astype(np.float64)
    params = dict(num_leaves=2, learning_rate=0.3, min_data_in_leaf=1, min_data_in_bin=1, verbose=-1)
    losses = [customobj.LambdaRank(), customobj.RankNet()]

    def one_machine(labels):
        f = adapters.lightgbm_objective(MultiObjective(losses, labels=labels, method=method, **options))
        ds = lgb.Dataset(binary, y, group=g, params={"min_data_in_bin": 1, "verbose": -1})
        with warnings.catch_warnings():  # an unmet bound is said when the attributes are read: not the question
            warnings.simplefilter("ignore", UserWarning)
            booster = lgb.train(dict(params, objective=f, num_threads=1), ds, 3)
            return booster.predict(binary), f.fitted_attributes(ds)

    want_pred, want = one_machine([None, second])
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        model = ad.train_lightgbm(client, params, binary, y, g,
                                  MultiObjective(losses, labels=[None, second], method=method, **options),
                                  num_boost_round=3)
    got = model.fitted_attributes_
    assert _variables_become(client, "customobj-sum-", [])  # every round's Variables deleted
    unmet = [w for w in said if "was not met" in str(w.message)]
    if method == "epsilon_constraint":  # not met in 3 rounds: said on the client, with the cost reached
        assert want["label_costs_"][-1, 1] > options["bounds"][0]
        assert len(unmet) == 1 and f"is {want['label_costs_'][-1, 1]:.6g} after 3 rounds" in str(unmet[0].message)
        assert unmet[0].filename == __file__
    else:
        assert not unmet
    _assert_the_one_machine_attributes(got, want, method, rounds=3)
    np.testing.assert_allclose(model.to_local().predict(binary), want_pred, rtol=0, atol=1e-9)
    # the weights moved, and the second label was read: its costs are not the data label's
    assert np.ptp(got["label_weights_"][:, 1]) > 1e-3
    assert np.abs(want["label_costs_"][:, 1] - one_machine(None)[1]["label_costs_"][:, 1]).max() > 1e-3


def test_the_variable_collective_sums_in_rank_order_and_times_out(client):
    """Two workers' collectives (here two threads of the client): the same bits for both, each a sum in rank
    order, and the partitions' and previous calls' Variables deleted; a missing worker is a TimeoutError
    naming the timeout, never a hang; bad partitions are refused."""
    from concurrent.futures import ThreadPoolExecutor

    from customobj.adapters._dask_collective import VariableCollective, drop_variables

    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(2, 3)) * 10.0 ** rng.integers(-8, 8, size=(2, 3)) for _ in range(2)]
    pair = [VariableCollective("customobj-sum-test", 3, held, timeout=30, client=client) for held in ([2, 0], [1])]

    def rounds(k):
        return [pair[k].sum(parts[k]), pair[k].max(parts[k] * (k + 1)), pair[k].sum(parts[k] + 1.0)]

    with ThreadPoolExecutor(2) as pool:
        mine, theirs = pool.map(rounds, [0, 1])
    for a, b in zip(mine, theirs):
        assert a.tobytes() == b.tobytes()  # every worker the same bits
    assert mine[0].tobytes() == (parts[0] + parts[1]).tobytes()  # rank 0 (partition 0) first
    assert mine[1].tobytes() == np.maximum(parts[0], 2 * parts[1]).tobytes()
    assert [c.rank for c in pair] == [0, 1] and pair[0].n_ranks == 2 and pair[0].calls == 3
    assert _variables_become(client, "customobj-sum-test", ["customobj-sum-test-2-0", "customobj-sum-test-2-1"])
    drop_variables(client, "customobj-sum-test", 3, 3, 2)
    assert _variables_become(client, "customobj-sum-test", [])
    alone = VariableCollective("customobj-sum-alone", 2, [0], timeout=0.5, client=client)
    with pytest.raises(TimeoutError, match=r"partition 1 did not arrive within timeout=0.5 s"):
        alone.sum(np.ones(3))
    drop_variables(client, "customobj-sum-alone", 2, 0, 0)
    for held in ([], [2], [-1]):
        with pytest.raises(ValueError, match="held must name partitions"):
            VariableCollective("x", 2, held)


@pytest.mark.parametrize("method, options", LGB_SUMMED)
def test_lightgbm_sums_over_the_workers_without_label_columns(client, two_labels, method, options):
    """A MultiObjective without label columns whose method reads costs (and the Gram matrix): it was refused
    (its rows carried no partition to find the workers by); now the data's label is made its columns (the
    same objective: float32, as LightGBM hands the label) and the sums go over the two workers: the
    one-machine weights, costs and model."""
    import warnings

    from customobj.multi import MultiObjective

    X, y, g, _ = two_labels
    binary = (X[:, [1]] > 0.5).astype(np.float64)
    params = dict(num_leaves=2, learning_rate=0.3, min_data_in_leaf=1, min_data_in_bin=1, verbose=-1)
    make = lambda: MultiObjective([customobj.LambdaRank(), customobj.RankNet()], method=method,  # noqa: E731
                                  **options)
    f = adapters.lightgbm_objective(make())
    ds = lgb.Dataset(binary, y, group=g, params={"min_data_in_bin": 1, "verbose": -1})
    with warnings.catch_warnings():  # an unmet bound: said elsewhere, not the question here
        warnings.simplefilter("ignore", UserWarning)
        want_pred = lgb.train(dict(params, objective=f, num_threads=1), ds, 3).predict(binary)
        want = f.fitted_attributes(ds)
        model = ad.train_lightgbm(client, params, binary, y, g, make(), num_boost_round=3)
    got = model.fitted_attributes_
    assert _variables_become(client, "customobj-sum-", [])  # every round's Variables deleted
    assert got.keys() == want.keys() and "label_costs_" in got
    for name in got.keys() - {"label_fallbacks_"}:
        assert got[name].shape[0] == 3
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-12 * np.abs(want[name]).max())
    np.testing.assert_allclose(model.to_local().predict(binary), want_pred, rtol=0, atol=1e-9)
    # the costs are sums over all rows (one worker's own would be about half): equal above; the duals move
    if method == "epsilon_constraint":
        assert np.ptp(got["label_weights_"][:, 1]) > 1e-3


def test_a_label_converting_loss_without_label_columns_is_still_refused_by_lightgbm(two_labels):
    """Logistic converts {-1, +1} labels, and the data's label passes through every loss's conversion: made
    into columns it would be another objective, so it is refused, saying why and naming the alternatives."""
    from customobj.multi import MultiObjective

    X, y, g, _ = two_labels
    obj = MultiObjective([customobj.LambdaRank(), customobj.Logistic()], method="epo")
    with pytest.raises(NotImplementedError, match=r"converts its labels.*train_xgboost.*'linear'.*labels="):
        ad.train_lightgbm(None, {}, X, (y > 0).astype(np.float64), g, obj)  # before anything touches a cluster


def test_an_estimating_unbiased_is_refused_by_lightgbm_with_or_without_label_columns(two_labels):
    """An estimating Unbiased (alone, or a label of a MultiObjective) pools rows that no Dask Variable sums on
    lightgbm.dask: refused before anything touches a cluster, naming train_xgboost and propensity=."""
    from customobj.multi import MultiObjective

    X, y, g, second = two_labels
    clicks = (y > 0).astype(np.float64)
    for labels in ([None, second], None):
        inner = MultiObjective([customobj.Unbiased(customobj.LambdaRank()), customobj.RankNet()], labels=labels,
                               method="epo")
        with pytest.raises(NotImplementedError, match=r"Unbiased without propensity=.*train_xgboost"):
            ad.train_lightgbm(None, {}, X, clicks, g, inner)


def _bad_column(second, kind):
    if kind == "short":
        return second[:-1], ValueError, r"labels\[1\] has 438 entries but the training data has 439 rows"
    if kind == "short_dask":
        return da.from_array(second[:-5], chunks=100), ValueError, r"labels\[1\] has 434 entries"
    if kind == "nan":
        bad = second.copy()
        bad[300] = np.nan
        return da.from_array(bad, chunks=50), ValueError, r"partition 1 \(rows \d+\.\.438 .*\): labels\[1\] must be finite"
    if kind == "negative":
        bad = second.copy()
        bad[5] = -1.0
        return bad, ValueError, r"partition 0 \(rows 0\.\.\d+ .*\): labels\[1\]"
    if kind == "two_columns":
        return da.from_array(np.column_stack([second, second]), chunks=(100, 2)), ValueError, \
            r"labels\[1\] must be one-dimensional"
    raise AssertionError(kind)


@pytest.mark.parametrize("train", [ad.train_xgboost, ad.train_lightgbm], ids=["xgboost", "lightgbm"])
@pytest.mark.parametrize("kind", ["short", "short_dask", "nan", "negative", "two_columns"])
def test_hostile_label_columns_are_refused_before_training(client, two_labels, train, kind):
    from customobj.multi import MultiObjective

    X, y, g, second = two_labels
    column, error, message = _bad_column(second, kind)
    obj = MultiObjective([customobj.LambdaRank(), customobj.LambdaRank()], labels=[None, column])
    with pytest.raises(error, match=message):
        train(client, {}, X, y, g, obj, num_boost_round=2)


def test_a_multi_objective_with_label_columns_inside_another_objective_is_refused(two_labels):
    from customobj.multi import MultiObjective

    X, y, g, second = two_labels
    inner = MultiObjective([customobj.LambdaRank(), customobj.RankNet()], labels=[None, second])
    for train in (ad.train_xgboost, ad.train_lightgbm):
        with pytest.raises(ValueError, match=r"inside another objective.*pass the MultiObjective itself"):
            train(None, {}, X, y, g, customobj.RankNet() + 0.5 * inner)


def _fake_blocks(monkeypatch, blocks):
    from customobj.adapters import _dask_labels

    monkeypatch.setattr(_dask_labels, "_fetch", lambda where, which: [blocks[where.keys[i]] for i in which])


def test_a_worker_finds_its_rows_labels_in_any_row_order(monkeypatch):
    """``local_objective`` in this process (the blocks handed over as a worker's memory would): rows of three
    partitions, two of them held here, scrambled as XGBoost's unstable qid sort may leave them."""
    from customobj.adapters._dask_labels import LabelBlocks, local_objective
    from customobj.multi import MultiObjective

    rng = np.random.default_rng(0)
    sizes = (4, 5, 3)
    cols = [rng.random((n, 2)) for n in sizes]  # per partition: its rows x (column 1, column 2)
    _fake_blocks(monkeypatch, {f"k{i}": c for i, c in enumerate(cols)})
    losses = [customobj.RankNet(), customobj.RankNet(), customobj.RankNet()]
    template = MultiObjective(losses, labels=[None, np.zeros(0), np.zeros(0)])
    partition = np.array([2, 2, 2, 0, 0, 0, 0], dtype=np.float32)
    offset = np.array([0, 1, 2, 0, 1, 2, 3], dtype=np.float32)
    order = rng.permutation(7)
    where = LabelBlocks("test", ("k0", "k1", "k2"))
    local, weight = local_objective(template, where, partition[order], offset[order])
    assert weight is None and local.labels[0] is None
    want = np.concatenate([cols[2], cols[0]])[order]
    np.testing.assert_array_equal(local.labels[1], want[:, 0])
    np.testing.assert_array_equal(local.labels[2], want[:, 1])
    with pytest.raises(RuntimeError, match="do not match the label blocks"):
        local_objective(template, where, partition, offset + 3)  # an offset past its partition
    empty, _ = local_objective(template, where, np.zeros(0), np.zeros(0))
    assert empty is template  # a worker without rows


def test_lightgbm_workers_find_their_rows_from_the_partition_runs(monkeypatch):
    """LightGBM concatenates a worker's parts whole, in any order: the weights carry the partition index
    (+2), the runs give the offsets, the user's weights come back from the blocks' last column."""
    from customobj.adapters._dask_labels import (PARTITION_WEIGHT_BASE, LabelBlocks, LabelledLightGBMObjective,
                                                 local_objective)
    from customobj.multi import MultiObjective

    blocks = {"a": np.array([[1.0, 0.5], [2.0, 1.5]]), "b": np.array([[0.0, 2.0], [3.0, 1.0], [1.0, 1.0]])}
    _fake_blocks(monkeypatch, blocks)
    template = MultiObjective([customobj.LambdaRank(), customobj.LambdaRank()], labels=[None, np.zeros(0)])
    where = LabelBlocks("test", ("a", "b"))
    local, weight = local_objective(template, where, np.array([1, 1, 1, 0, 0]), None)
    np.testing.assert_array_equal(local.labels[1], [0.0, 3.0, 1.0, 1.0, 2.0])
    np.testing.assert_array_equal(weight, [2.0, 1.0, 1.0, 0.5, 1.5])
    with pytest.raises(RuntimeError, match="one whole run"):
        local_objective(template, where, np.array([1, 0, 1, 1, 0]), None)
    # the callable LightGBM calls: its gradients are the one-machine objective's on these rows
    f = LabelledLightGBMObjective(template, label_blocks=where)
    y = np.array([1.0, 0.0, 2.0, 1.0, 0.0], dtype=np.float32)
    preds = np.linspace(-1.0, 1.0, 5)
    got = f(y, preds, np.array([1, 1, 1, 0, 0], dtype=np.float32) + PARTITION_WEIGHT_BASE, np.array([3, 2]))
    plain = MultiObjective([customobj.LambdaRank(), customobj.LambdaRank()], labels=[None, [0.0, 3.0, 1.0, 1.0, 2.0]])
    want = adapters.lightgbm_sklearn_objective(plain)(y, preds, np.array([2.0, 1.0, 1.0, 0.5, 1.5]), np.array([3, 2]))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    import pickle

    again = pickle.loads(pickle.dumps(LabelledLightGBMObjective(template, label_blocks=where)))
    assert again.label_blocks == where and again.objective == template


def test_a_worker_fetches_a_block_another_worker_holds(client):
    """A label block normally sits where its partition is; one the scheduler put elsewhere comes from the
    published futures, through the worker's client."""
    from customobj.adapters import _dask_labels

    here, there = sorted(client.scheduler_info(n_workers=-1)["workers"])
    far = client.scatter(np.arange(6.0).reshape(3, 2), workers=[there])
    near = client.scatter(np.ones((2, 2)), workers=[here])
    client.publish_dataset([far, near], name="customobj-labels-test")
    try:
        where = _dask_labels.LabelBlocks("customobj-labels-test", (far.key, near.key))
        got = client.submit(_dask_labels._fetch, where, [0, 1], workers=[here], pure=False).result(timeout=60)
    finally:
        client.unpublish_dataset("customobj-labels-test")
    np.testing.assert_array_equal(got[0], np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(got[1], np.ones((2, 2)))
