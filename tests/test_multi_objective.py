"""customobj/multi/objective.py (its kernels, customobj/multi/_combine_kernels.py, and its GPU route,
customobj/multi/_weighted_route.py, under the CUDA simulator): MultiObjective's combined
gradient and hessian, its losses against finite differences, the label checks (customobj/multi/_labels.py:
numpy columns, Dask columns kept lazy), the record of the rounds, and its plumbing into lightgbm.train,
LGBMRanker, xgboost.train and TreeBooster."""
import warnings

import numpy as np
import pytest

from customobj import adapters  # before lightgbm / xgboost: sets the OpenMP wait policy

import customobj
from customobj import LambdaRank, ListNet, RankNet, Unbiased
from customobj.multi import MultiObjective
from _cuda_cases import assert_gpu_equals_cpu, to_device


def data(seed=0, n_queries=6):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 9, n_queries)
    n = int(sizes.sum())
    return rng.normal(size=n), rng.integers(0, 4, n).astype(float), rng.integers(0, 3, n).astype(float), sizes


def parts(obj, s, y, y2, sizes):
    """Each per-label gradient and hessian, from the objectives' own public calls."""
    cols = [y if c is None else c for c in obj.labels]
    return [o.grad_hess(s, c, sizes) for o, c in zip(obj.objectives, cols)]


def fd_check(obj, s, y, sizes, grad, h=1e-6):
    fd = np.empty_like(s)
    for i in range(s.size):
        e = np.zeros_like(s)
        e[i] = h
        fd[i] = (obj.loss(s + e, y, sizes) - obj.loss(s - e, y, sizes)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_linear_combines_the_parts_and_is_the_gradient_of_its_loss():
    s, y, y2, sizes = data()
    obj = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="linear", preference=[1, 3])
    grad, hess = obj.grad_hess(s, y, sizes)
    (g1, h1), (g2, h2) = parts(obj, s, y, y2, sizes)
    np.testing.assert_allclose(grad, 0.25 * g1 + 0.75 * g2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(hess, 0.25 * h1 + 0.75 * h2, rtol=1e-12, atol=1e-14)
    assert obj.loss(s, y, sizes) == pytest.approx(0.25 * RankNet().loss(s, y, sizes) + 0.75 * ListNet().loss(s, y2, sizes))
    fd_check(obj, s, y, sizes, grad)


def test_chebyshev_takes_the_gradient_of_the_largest_weighted_cost():
    s, y, y2, sizes = data(1)
    obj = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="chebyshev", preference=[1, 1])
    costs = np.array([RankNet().loss(s, y, sizes), ListNet().loss(s, y2, sizes)]) / sizes.size
    grad, _ = obj.grad_hess(s, y, sizes)
    k = int(np.argmax(costs))
    np.testing.assert_allclose(grad, parts(obj, s, y, y2, sizes)[k][0], rtol=1e-12)
    np.testing.assert_allclose(obj.fitted_attributes()["label_costs_"][0], costs, rtol=1e-12)
    fd_check(obj, s, y, sizes, grad)


def test_epsilon_constraint_gradient_is_that_of_its_augmented_lagrangian():
    s, y, y2, sizes = data(2)
    bound = 0.5 * ListNet().loss(s, y2, sizes) / sizes.size  # violated: the multiplier is active
    obj = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="epsilon_constraint", bounds=[bound],
                         penalty=2.0)
    obj.grad_hess(s + 0.1, y, sizes)  # one round: a dual variable > 0 now
    assert obj.fitted_attributes()["label_duals_"][0, 0] > 0
    expected_loss = obj.loss(s, y, sizes)
    grad, _ = obj.grad_hess(s, y, sizes)
    fitted = obj.fitted_attributes()
    (g1, _), (g2, _) = parts(obj, s, y, y2, sizes)
    w = fitted["label_weights_"][-1]
    assert w[0] == 1.0 and w[1] == pytest.approx(fitted["label_duals_"][-1, 0] / bound)
    np.testing.assert_allclose(grad, g1 + w[1] * g2, rtol=1e-10)
    # the loss at the round's duals (read before the round advanced them): its gradient is the round's
    obj2 = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="epsilon_constraint", bounds=[bound],
                          penalty=2.0)
    obj2.grad_hess(s + 0.1, y, sizes)
    assert obj2.loss(s, y, sizes) == pytest.approx(expected_loss)
    fd_check(obj2, s, y, sizes, grad)


def test_stochastic_gives_each_query_one_drawn_label():
    s, y, y2, sizes = data(3, n_queries=40)
    obj = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="stochastic", preference=[0.3, 0.7],
                         random_state=4)
    grad, hess = obj.grad_hess(s, y, sizes)
    (g1, h1), (g2, h2) = parts(obj, s, y, y2, sizes)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    picked = []
    for q in range(sizes.size):
        rows = slice(ptr[q], ptr[q + 1])
        one, two = np.allclose(grad[rows], g1[rows]) and np.allclose(hess[rows], h1[rows]), \
            np.allclose(grad[rows], g2[rows]) and np.allclose(hess[rows], h2[rows])
        assert one or two
        picked.append(0 if one and not two else 1)
    w = obj.fitted_attributes()["label_weights_"][0]
    assert w.sum() == pytest.approx(1) and w[1] == pytest.approx(np.mean(picked), abs=1 / sizes.size)
    # a different seed draws differently; the same seed the same
    again = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="stochastic", preference=[0.3, 0.7],
                           random_state=4)
    np.testing.assert_array_equal(again.grad_hess(s, y, sizes)[0], grad)
    assert obj.loss(s, y, sizes) == pytest.approx(0.3 * RankNet().loss(s, y, sizes) + 0.7 * ListNet().loss(s, y2, sizes))


@pytest.mark.parametrize("m", [2, 3, 7])
def test_the_blocked_combination_is_each_rows_sum_bit_for_bit(m):
    """add_weighted sums blocks of rows label by label: each row's sum is weighted_row's (from 0.0, in label
    order; the GPU's), bit for bit, across block edges, with signed zeros and subnormals, C and Fortran order."""
    from customobj.multi._combine_kernels import WEIGHTED_BLOCK, add_weighted, weighted_row

    rng = np.random.default_rng(m)
    for n in (0, 1, WEIGHTED_BLOCK - 1, WEIGHTED_BLOCK, 3 * WEIGHTED_BLOCK + 5):
        parts = rng.normal(size=(m, n))
        parts[:, ::7] = -0.0
        parts[:, 3::11] *= 1e-310
        weights = rng.normal(size=m)
        weights[-1] = -0.0
        start = rng.normal(size=n)
        start[::5] = -0.0
        want = start + np.array([weighted_row(parts, weights, i) for i in range(n)])
        for layout in (parts, np.asfortranarray(parts)):
            got = start.copy()
            add_weighted(layout, weights, got)
            np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def test_the_two_label_gram_is_the_product_in_row_order():
    from customobj.multi._combine_kernels import gram_two

    g = np.random.default_rng(2).normal(size=(2, 1001)) * [[1.0], [1e3]]
    got = gram_two(g)
    np.testing.assert_allclose(got, g @ g.T, rtol=1e-12)
    assert got[0, 1] == got[1, 0] == float(sum(a * b for a, b in zip(g[0], g[1])))  # each entry in row order
    assert gram_two(np.zeros((2, 0))).tolist() == [[0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("method, kw", [("epo", {"preference": [1, 2]}), ("wc_mgda", {}),
                                        ("ec_mgda", {"bounds": [0.1]}), ("chebyshev", {"smoothing": 0.5}),
                                        ("wc_mgda", {"mgda_u": "auto"}), ("ec_mgda", {"bounds": [0.1], "mgda_u": "auto"})])
def test_every_method_records_its_rounds_and_combines_with_its_weights(method, kw):
    s, y, y2, sizes = data(4)
    obj = MultiObjective([LambdaRank(), RankNet()], labels=[None, y2], method=method, **kw)
    for r in range(4):
        grad, hess = obj.grad_hess(s, y, sizes)  # the same data: the rounds go on
        (g1, h1), (g2, h2) = parts(obj, s, y, y2, sizes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = obj.fitted_attributes()
        w = fitted["label_weights_"][-1]
        np.testing.assert_allclose(grad, w[0] * g1 + w[1] * g2, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(hess, w[0] * h1 + w[1] * h2, rtol=1e-10, atol=1e-14)
        s = s - 0.3 * grad / np.maximum(hess, 1e-6)
    assert fitted["label_weights_"].shape == (4, 2) and fitted["label_costs_"].shape == (4, 2)
    assert np.all(fitted["label_weights_"] >= 0)
    if method in ("wc_mgda", "ec_mgda"):  # each round's u: fixed at 0.1, or the fork's tuning (first two at 0.1)
        u = fitted["label_u_"]
        assert u.shape == (4,) and u[0] == u[1] == 0.1
        top = 10 if method == "wc_mgda" else 0.3
        assert np.all(u == 0.1) if "mgda_u" not in kw else np.all((u >= 0.1) & (u <= top))
        assert dict(obj._params())["mgda_u"] == kw.get("mgda_u", 0.1)  # the option as given: its identity


@pytest.mark.parametrize("method, kw", [("linear", {}), ("epsilon_constraint", {"bounds": [0.5, 0.5]}),
                                        ("epo", {})])
def test_lambdarank_labels_share_one_sort_with_the_bits_of_separate_calls(method, kw):
    """All labels LambdaRank: one driver sorts each query once for every label; the combined gradients,
    hessians, weights and costs equal those of the per-label calls (a LambdaRank subclass takes those)."""
    class OwnCalls(LambdaRank):
        pass

    s, y, y2, sizes = data(4)
    y3 = y2[::-1].copy()
    shared = MultiObjective([LambdaRank(), LambdaRank(metric="err"), LambdaRank(norm=True)], labels=[None, y2, y3],
                            method=method, **kw)
    own = MultiObjective([OwnCalls(), OwnCalls(metric="err"), OwnCalls(norm=True)], labels=[None, y2, y3],
                         method=method, **kw)
    for t in range(3):  # rounds: the methods' memories move alike
        for a, b in zip(shared.grad_hess(s + 0.1 * t, y, sizes), own.grad_hess(s + 0.1 * t, y, sizes)):
            np.testing.assert_array_equal(a, b)


def test_the_loss_advances_nothing():
    s, y, y2, sizes = data(10)
    obj = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="epo", preference=[1, 3])
    l1, l2 = RankNet().loss(s, y, sizes), ListNet().loss(s, y2, sizes)
    assert obj.loss(s, y, sizes) == pytest.approx(0.25 * l1 + 0.75 * l2)  # before a round: the preference
    obj.grad_hess(s, y, sizes)
    w = obj.fitted_attributes()["label_weights_"]
    assert obj.loss(s, y, sizes) == pytest.approx(w[-1] @ [l1, l2])  # then the last round's weights
    obj.loss(s + 1, y, sizes)
    assert obj.fitted_attributes()["label_weights_"].shape == (1, 2)  # no round was added


def test_label_columns_are_checked_like_positions():
    s, y, y2, sizes = data(5)
    with pytest.raises(ValueError, match=r"labels\[1\] has 5 entries but the data has \d+ rows"):
        MultiObjective([RankNet(), ListNet()], labels=[None, y2[:5]]).grad_hess(s, y, sizes)
    bad = y2.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match=r"labels\[1\].*(finite|NaN|nan)"):
        MultiObjective([RankNet(), ListNet()], labels=[None, bad])
    with pytest.raises(ValueError, match=r"labels\[1\] must be non-negative"):
        MultiObjective([RankNet(), ListNet()], labels=[None, -y2 - 1]).grad_hess(s, y, sizes)
    with pytest.raises(ValueError, match=r"labels must have one entry per objective \(2\), got 1"):
        MultiObjective([RankNet(), ListNet()], labels=[y2])
    with pytest.raises(TypeError, match=r"labels must be a list of 2 label columns"):
        MultiObjective([RankNet(), ListNet()], labels=y2)


def test_with_labels_is_the_same_objective_on_other_columns():
    s, y, y2, sizes = data(6)
    obj = MultiObjective([RankNet(), ListNet()], labels=[None, np.zeros(3)], method="epo", preference=[1, 3],
                         smoothing=0.5)
    moved = obj.with_labels([None, y2])
    direct = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="epo", preference=[1, 3], smoothing=0.5)
    assert moved == direct and obj.labels[1].size == 3  # the original keeps its columns
    for a, b in zip(moved.grad_hess(s, y, sizes), direct.grad_hess(s, y, sizes)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"labels\[0\] must stay None"):
        obj.with_labels([y2, y2])
    with pytest.raises(ValueError, match=r"labels\[1\] must stay a column"):
        obj.with_labels([None, None])
    with pytest.raises(ValueError, match=r"labels\[1\].*finite"):
        obj.with_labels([None, np.full(3, np.inf)])


def test_a_dask_column_stays_lazy_and_trains_only_through_dask():
    da = pytest.importorskip("dask.array")
    s, y, y2, sizes = data(7)
    column = da.from_array(y2, chunks=5)
    obj = MultiObjective([RankNet(), ListNet()], labels=[None, column])
    assert obj.labels[1] is column and "<Dask column>" in repr(obj)  # never computed at construction
    assert obj == MultiObjective([RankNet(), ListNet()], labels=[None, column])
    assert obj != MultiObjective([RankNet(), ListNet()], labels=[None, da.from_array(y2 + 1, chunks=5)])
    with pytest.raises(TypeError, match=r"labels\[1\] is a Dask collection: train through customobj.adapters.dask"):
        obj.grad_hess(s, y, sizes)


def test_objectives_are_checked():
    with pytest.raises(ValueError, match=r"objectives needs at least 2 objectives \(got 1\)"):
        MultiObjective([RankNet()])
    with pytest.raises(TypeError, match=r"objectives\[1\] must be an Objective, got str"):
        MultiObjective([RankNet(), "ndcg"])
    with pytest.raises(TypeError, match=r"objectives must be a list of objectives"):
        MultiObjective(RankNet())
    with pytest.raises(ValueError, match=r"objectives\[1\] \(McRank\) has 3 outputs"):
        MultiObjective([RankNet(), customobj.McRank(n_classes=3)])


def test_a_loss_that_cannot_take_its_label_is_named():
    s, y, y2, sizes = data(6)
    # graded labels into a click loss: Unbiased needs 0/1 clicks
    with pytest.raises(ValueError, match=r"labels\[1\] cannot train objectives\[1\] \(Unbiased\): .*clicks, 0 or 1"):
        MultiObjective([LambdaRank(), Unbiased(LambdaRank())], labels=[None, y2 + 1]).grad_hess(s, y, sizes)
    clicks = (y2 > 0).astype(float)
    g, _ = MultiObjective([LambdaRank(), Unbiased(LambdaRank())], labels=[None, clicks]).grad_hess(s, y, sizes)
    assert np.all(np.isfinite(g))


def test_a_bound_no_model_meets_is_reported_with_its_achieved_cost():
    s, y, y2, sizes = data(7)
    obj = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="epsilon_constraint", bounds=[1e-9])
    obj.grad_hess(s, y, sizes)
    cost = ListNet().loss(s, y2, sizes) / sizes.size
    with pytest.warns(UserWarning, match=rf"bounds\[0\] = 1e-09 was not met: objective 2's cost .* is {cost:.6g}") as said:
        obj.fitted_attributes()
    assert said[0].filename == __file__  # said where the attributes were read
    met = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="epsilon_constraint", bounds=[1e9])
    met.grad_hess(s, y, sizes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        met.fitted_attributes()


def test_pair_couplings_are_the_parts_times_their_weights():
    s, y, y2, sizes = data(8)
    obj = MultiObjective([RankNet(), customobj.SquaredError()], labels=[None, y2], method="linear",
                         preference=[1, 3])
    prep = obj.prepare(y, sizes)
    g, h, (i, j, c) = obj.grad_hess_couplings_prepared(s, prep)
    i0, j0, c0 = RankNet().pair_couplings(s, y, sizes)
    np.testing.assert_array_equal(i, i0)
    np.testing.assert_allclose(c, 0.25 * c0)
    i1, j1, c1 = obj.pair_couplings(s, y, sizes)
    np.testing.assert_allclose(c1, 0.25 * c0)


def test_a_round_with_pairs_reads_the_costs_of_a_round_without():
    """The costs a cost-reading method reads with pairs (``TreeBooster(criterion="ole")``: each label's
    ``_grad_hess_couplings_loss``) are those it reads without them, bit for bit: LambdaRank's from its
    gradients' pass (the tabled softplus, which its GPU route writes too), not its exact ``loss``; the
    gradients and the pairs are those of LambdaRank's own fused pass."""
    s, y, y2, sizes = data(12)
    make = lambda: MultiObjective([LambdaRank(), LambdaRank()], labels=[None, y2], method="chebyshev")  # noqa: E731
    with_pairs, without = make(), make()
    pw, po = with_pairs.prepare(y, sizes), without.prepare(y, sizes)
    g, h, (i, j, c) = with_pairs.grad_hess_couplings_prepared(s, pw)
    g0, h0 = without.grad_hess_prepared(s, po)
    got, want = with_pairs.fitted_attributes(pw), without.fitted_attributes(po)
    np.testing.assert_array_equal(got["label_costs_"], want["label_costs_"])
    exact = [LambdaRank().loss(s, lab, sizes) / sizes.size for lab in (y, y2)]
    assert not np.array_equal(got["label_costs_"][0], exact)  # the tabled cost, within its bound of the exact
    np.testing.assert_allclose(got["label_costs_"][0], exact, rtol=1e-4)
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(h, h0)
    w = got["label_weights_"][0]
    pairs = [LambdaRank().grad_hess_couplings_prepared(s, LambdaRank().prepare(lab, sizes))[2] for lab in (y, y2)]
    np.testing.assert_array_equal(i, np.concatenate([p[0] for p in pairs]))
    np.testing.assert_array_equal(j, np.concatenate([p[1] for p in pairs]))
    np.testing.assert_array_equal(c, np.concatenate([wk * p[2] for wk, p in zip(w, pairs)]))


def test_stochastic_couplings_are_the_drawn_labels_pairs():
    s, y, y2, sizes = data(11, n_queries=12)
    obj = MultiObjective([RankNet(), RankNet()], labels=[None, y2], method="stochastic", random_state=1)
    g, h, (i, j, c) = obj.grad_hess_couplings_prepared(s, obj.prepare(y, sizes))
    (g1, _), (g2, _) = parts(obj, s, y, y2, sizes)
    pairs = [RankNet().pair_couplings(s, lab, sizes) for lab in (y, y2)]
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    for q in range(sizes.size):
        rows = slice(ptr[q], ptr[q + 1])
        k = 0 if np.allclose(g[rows], g1[rows]) and not np.allclose(g[rows], g2[rows]) else 1
        mine = (i >= ptr[q]) & (i < ptr[q + 1])
        theirs = (pairs[k][0] >= ptr[q]) & (pairs[k][0] < ptr[q + 1])
        np.testing.assert_array_equal(i[mine], pairs[k][0][theirs])
        np.testing.assert_allclose(c[mine], pairs[k][2][theirs])


def test_identity_repr_and_a_loss_without_a_gpu_cost():
    y2 = np.arange(5.0)
    a = MultiObjective([RankNet(), ListNet()], labels=[None, y2], method="epo", preference=[1, 2])
    b = MultiObjective([RankNet(), ListNet()], labels=[None, y2.copy()], method="epo", preference=[2, 4])
    assert a == b and hash(a) == hash(b)
    assert a != MultiObjective([RankNet(), ListNet()], labels=[None, y2 + 1], method="epo", preference=[1, 2])
    assert "method='epo'" in repr(a) and "<5 values>" in repr(a)
    # EPO reads each label's cost, which this loss's GPU route does not compute (tests/test_multi_round_route.py)
    class NoCostListNet(ListNet):
        def device_route(self):
            return super().device_route()._replace(grad_hess_loss=None)

    c = MultiObjective([RankNet(), NoCostListNet()], labels=[None, y2], method="epo", preference=[1, 2])
    with pytest.raises(NotImplementedError, match=r"MultiObjective\(method='epo'\).*objectives\[1\] \(NoCostListNet\)"):
        c.device_route()
    with pytest.raises(NotImplementedError, match=r"MultiObjective\(method='epo'\)"):
        c.grad_hess(to_device(np.zeros(5)), np.zeros(5), [5])


def test_linear_on_the_gpu_equals_the_cpu():
    """Under the CUDA simulator (tests/conftest.py): customobj/multi/_weighted_route.py."""
    s, y, y2, sizes = data(9)
    obj = MultiObjective([LambdaRank(), RankNet()], labels=[None, y2], method="linear", preference=[2, 1])
    g, h = assert_gpu_equals_cpu(obj, s, y, sizes)
    assert np.abs(g).max() > 0
    assert obj.fitted_attributes()["label_weights_"][-1] == pytest.approx([2 / 3, 1 / 3])


# --- plumbing --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_labels():
    d = customobj.synthetic(n_queries=30, docs_per_query=12, n_features=6, seed=1)
    second = np.clip(np.round(d.X[:, 0] - d.X[:, 0].min()), 0, 3).astype(float)  # a feature, graded
    return d.X, d.y, second, d.group


def test_lightgbm_train_and_ranker(two_labels):
    import lightgbm as lgb

    X, y, second, sizes = two_labels
    obj = MultiObjective([LambdaRank(), LambdaRank()], labels=[None, second], method="epo", preference=[1, 1])
    f = adapters.lightgbm_objective(obj)
    ds = lgb.Dataset(X, y, group=sizes)
    P = dict(num_leaves=7, learning_rate=0.2, min_data_in_leaf=5, verbose=-1, num_threads=2, objective=f)
    lgb.train(P, ds, 5)
    w = f.fitted_attributes(ds)["label_weights_"]
    assert w.shape == (5, 2) and np.allclose(w.sum(axis=1), 1)
    ranker = lgb.LGBMRanker(objective=adapters.lightgbm_sklearn_objective(obj), n_estimators=3, num_leaves=7,
                            min_child_samples=5, verbose=-1, n_jobs=2).fit(X, y, group=sizes)
    assert np.all(np.isfinite(ranker.predict(X)))


def test_xgboost_train(two_labels):
    import xgboost as xgb

    X, y, second, sizes = two_labels
    obj = MultiObjective([LambdaRank(), RankNet()], labels=[None, second], method="wc_mgda")
    f = adapters.xgboost_objective(obj)
    d = xgb.DMatrix(X, y, group=sizes)
    xgb.train(adapters.xgboost_params(obj, {"max_depth": 3, "nthread": 2}), d, 4, obj=f)
    assert f.fitted_attributes(d)["label_weights_"].shape == (4, 2)


@pytest.mark.parametrize("criterion", ["se", "wse", "ole"])
def test_tree_booster_keeps_the_rounds_as_fitted_attributes(two_labels, criterion, tmp_path):
    X, y, second, sizes = two_labels
    obj = MultiObjective([RankNet(), RankNet()], labels=[None, second], method="chebyshev", smoothing=0.5)
    model = customobj.TreeBooster(obj, criterion=criterion, n_estimators=3, num_leaves=4, max_bin=16,
                                  n_jobs=1).fit(X, y, group=sizes)
    assert model.label_weights_.shape == (3, 2) and model.label_costs_.shape == (3, 2)
    assert np.all(np.isfinite(model.predict(X)))
    import pickle

    back = pickle.loads(pickle.dumps(model))  # a saved (pickled) model keeps the rounds' weights
    np.testing.assert_array_equal(back.label_weights_, model.label_weights_)
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    path = tmp_path / "model.json"
    model.save(path)  # and so does the model file: every round's weights and costs, read back after load
    loaded = customobj.TreeBooster.load(path)
    for name in ("label_weights_", "label_costs_", "label_fallbacks_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(model, name))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
