"""Checks shared by the tests of the peers' losses (ListNet, QuerySoftMax, XENDCG, QueryRMSE,
LambdaLoss, YetiRank: tests/test_objectives_{softmax,xendcg,query_rmse,lambdaloss,yetirank}.py).

``check_derivatives``: the gradient against finite differences of ``loss``, the hessian diagonal
and the full finite-difference Jacobian of the gradient against the hessian the couplings
assemble (``sum_ij c_ij (e_i - e_j)(e_i - e_j)^T``). Public calls prepare the data afresh, so a
stochastic objective is compared within its round 0 throughout. ``rounds_per_thread_count``: a stochastic objective's rounds with 1 and 2 numba threads.
``training_improves``: a short
LightGBM and XGBoost run through the adapters lifts NDCG@10 on held-out synthetic queries above
the untrained (all-tied) ranking, and so does customobj's own ``TreeBooster``. Imported as ``from _peer_cases import ...``.
"""
from __future__ import annotations

import numba
import numpy as np

import customobj
from customobj.metrics import ndcg

from _oracles import fd_grad, fd_jacobian

#: Query sizes of the derivative checks: a one-row query, a pair, and larger queries.
SIZES = np.array([4, 1, 2, 5, 3])
#: Their labels: every grade, a query with all labels equal (3 rows of 1) and one of zeros (the pair).
LABELS = np.array([2, 0, 1, 3,   1,   0, 0,   1, 0, 2, 0, 1,   1, 1, 1], dtype=float)


def scores(seed=0):
    """Distinct, well-separated scores (no ties: positions are stable under finite differences)."""
    rng = np.random.default_rng(seed)
    return rng.permutation(LABELS.size) * 0.31 - 2.0 + rng.uniform(-0.02, 0.02, LABELS.size)


def rounds_per_thread_count(round_fn, obj, rounds=3):
    """``[[round_fn(prep) for each round] with 1 thread, ... with 2 threads]``, each on a fresh prepare."""
    runs = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        try:
            prep = obj.prepare(LABELS, SIZES)
            runs.append([round_fn(prep) for _ in range(rounds)])
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return runs


def couplings_matrix(n, i, j, c):
    """The hessian ``sum_k c_k (e_i - e_j)(e_i - e_j)^T`` of a coupling list."""
    hess = np.zeros((n, n))
    np.add.at(hess, (i, i), c)
    np.add.at(hess, (j, j), c)
    np.add.at(hess, (i, j), -c)
    np.add.at(hess, (j, i), -c)
    return hess


def check_derivatives(obj, s, y=LABELS, sizes=SIZES, weight=None, atol=1e-6):
    """``grad = d loss``; ``hess`` = diagonal of the coupled hessian = finite-difference Jacobian."""
    g, h = obj.grad_hess(s, y, sizes, weight)
    fd = fd_grad(lambda z: obj.loss(z, y, sizes, weight), s)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=atol)
    i, j, c = obj.pair_couplings(s, y, sizes) if weight is None else _weighted_couplings(obj, s, y, sizes, weight)
    assert np.all(c >= 0)
    coupled = couplings_matrix(s.size, i, j, c)
    np.testing.assert_allclose(h, np.diag(coupled), rtol=1e-9, atol=1e-12)
    # each evaluation at the round of g (0): public calls on the same data would be the next rounds
    jac = fd_jacobian(lambda z: obj.grad_hess_prepared(z, obj.prepare(y, sizes, weight))[0], s)
    np.testing.assert_allclose(jac, coupled, rtol=1e-5, atol=10 * atol)
    return g, h


def _weighted_couplings(obj, s, y, sizes, weight):
    return obj.pair_couplings_prepared(s, obj.prepare(y, sizes, weight))


def _ndcg_gain(library, obj, rounds=15):
    train = customobj.synthetic(100, 20, 8, seed=1, noise=0.2)
    test = customobj.synthetic(60, 20, 8, seed=2, noise=0.2)
    from customobj import adapters

    if library == "lightgbm":
        import lightgbm as lgb

        params = dict(objective=adapters.lightgbm_objective(obj), num_leaves=7, learning_rate=0.2, verbose=-1,
                      num_threads=1, min_data_in_leaf=5)
        model = lgb.train(params, lgb.Dataset(train.X, train.y, group=train.group), rounds)
        pred = model.predict(test.X, raw_score=True)
    elif library == "ole":
        model = customobj.TreeBooster(objective=obj, n_estimators=rounds, learning_rate=0.2, max_depth=3)
        pred = model.fit(train.X, train.y, group=train.group).predict(test.X)
    else:
        import xgboost as xgb

        params = adapters.xgboost_params(obj, dict(tree_method="hist", max_depth=3, eta=0.2, nthread=1))
        model = xgb.train(params, xgb.DMatrix(train.X, train.y, group=train.group), rounds,
                          obj=adapters.xgboost_objective(obj))
        pred = model.predict(xgb.DMatrix(test.X), output_margin=True)
    from customobj.adapters._data import ranking_scores

    tied = ndcg(np.zeros(test.y.size), test.y, test.group, 10)
    return ndcg(ranking_scores(pred), test.y, test.group, 10), tied


def training_improves(obj, library, margin=0.05):
    trained, tied = _ndcg_gain(library, obj)
    assert trained > tied + margin, (repr(obj), library, trained, tied)


def check_degenerate_queries(obj):
    """One row, all labels equal, all labels zero: no gradient, hessian, loss or pair; extreme
    scores stay finite with a non-negative hessian."""
    for s, y, sizes in (([1.0], [2.0], [1]), ([1.0, 0.0, 2.0], [1.0, 1.0, 1.0], [3]), ([1.0, 0.0], [0.0, 0.0], [2])):
        g, h = obj.grad_hess(s, y, sizes)
        assert not g.any() and not h.any() and obj.loss(s, y, sizes) == 0.0
        assert obj.pair_couplings(s, y, sizes)[0].size == 0
    g, h = obj.grad_hess([1e100, -1e100, 0.0], [0.0, 3.0, 1.0], [3])
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
