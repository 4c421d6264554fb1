"""Worker targets: the adapters' objective / metric callables on tiny LightGBM / XGBoost data.

Besides finite output, the callables must agree with the objective called directly on what the
Dataset / DMatrix holds *now*: after ``set_label`` / ``set_group`` / ``set_weight`` a cached
preparation of the old data is silent wrong training (issue 13, class 5).
"""
from __future__ import annotations

import numpy as np

from ._targets import BadOutput, finite_array, finite_float, target
from ._targets_core import build_objective


def _expected(obj, preds, labels, ptr, weight):
    from customobj import Groups

    groups = Groups.from_ptr(np.asarray(ptr, dtype=np.int64)) if ptr is not None and len(ptr) > 1 else None
    return obj.grad_hess(preds, np.asarray(labels, dtype=np.float64), groups, weight)


def _agree(got, want, what):
    for name, g, w in zip(("grad", "hess"), got, want):
        finite_array(np.asarray(g), f"{what} {name}", np.shape(w))
        if not np.allclose(np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float32), rtol=1e-5, atol=1e-6):
            raise BadOutput(f"{what}: {name} differs from the objective on the data the library holds now "
                            f"(max diff {np.abs(np.asarray(g, float) - w).max():g}): a stale cache")


def _warm_adapters():
    y, g = np.array([2.0, 0.0, 1.0, 1.0, 0.0, 1.0]), [4, 2]
    X = np.arange(12, dtype=float).reshape(6, 2)
    for lib in ("lightgbm", "xgboost"):
        for cls, params in (("RankNet", {}), ("LambdaRank", {}), ("SquaredError", {})):
            adapter(lib, cls, params, X, y, g, None, np.linspace(-1, 1, 6), None, None, None, None)


def _lightgbm_data(X, labels, group, weight):
    import lightgbm as lgb

    return lgb.Dataset(X, label=labels, group=group, weight=weight, free_raw_data=False,
                       params={"verbose": -1, "min_data_in_bin": 1}).construct()


def _xgboost_data(X, labels, group, weight):
    import xgboost as xgb

    dm = xgb.DMatrix(X, label=labels, weight=weight)
    if group is not None:
        dm.set_group(group)
    return dm


@target("adapters.train_callables", warm=_warm_adapters)
def adapter(lib, cls, params, X, labels, group, weight, preds, mutation, new_labels, new_group, new_weight):
    """``lightgbm_objective`` / ``xgboost_objective`` and the metric callables, before and after a change."""
    from customobj import adapters, metrics

    obj = build_objective(cls, params)
    try:
        data = (_lightgbm_data if lib == "lightgbm" else _xgboost_data)(X, labels, group, weight)
    except Exception as exc:  # noqa: BLE001 - the library's own checks, not customobj code
        return f"{lib} rejected the data: {type(exc).__name__}"
    if lib == "lightgbm":
        f, m = adapters.lightgbm_objective(obj), adapters.lightgbm_metric("ndcg@3")
        ptr_of, label_of, weight_of = (lambda d: d.get_field("group")), (lambda d: d.get_label()), (lambda d: d.get_weight())
    else:
        f, m = adapters.xgboost_objective(obj), adapters.xgboost_metric("ndcg@3")
        ptr_of, label_of = (lambda d: d.get_uint_info("group_ptr")), (lambda d: d.get_label())
        weight_of = (lambda d: (d.get_weight() if len(d.get_weight()) == d.num_row() else None))
    rounds = [None] if mutation is None else [None, mutation]
    for change in rounds:
        if change == "set_label":
            data.set_label(new_labels)
        elif change == "set_group":
            data.set_group(new_group)
        elif change == "set_weight":
            data.set_weight(new_weight)
        got = f(preds, data)
        want = _expected(obj, preds, label_of(data), ptr_of(data), weight_of(data))
        _agree(got, want, f"{lib} objective after {change or 'construction'}")
        if ptr_of(data) is not None and len(ptr_of(data)) > 1:
            value = finite_float(m(preds, data)[0][1], f"{lib} metric after {change or 'construction'}")
            direct = metrics.ndcg(preds, np.asarray(label_of(data), float), _groups(ptr_of(data)), 3)
            if not np.isclose(value, direct):
                raise BadOutput(f"{lib} metric after {change or 'construction'} = {value}, ndcg on the current "
                                f"labels/groups = {direct}: a stale cache")
    return "agree"


def _groups(ptr):
    from customobj import Groups

    return Groups.from_ptr(np.asarray(ptr, dtype=np.int64))


@target("adapters.sklearn_callables", warm=_warm_adapters)
def sklearn_callable(lib, cls, params, y_true, y_pred, weight, group, inplace_labels=None):
    """The scikit-learn style callables with hostile arrays; optionally relabelled in place."""
    from customobj import adapters

    obj = build_objective(cls, params)
    if lib == "lightgbm":
        f = adapters.lightgbm_sklearn_objective(obj)
        call = (lambda: f(y_true, y_pred, weight, group))
    else:
        f = adapters.xgboost_sklearn_objective(obj)
        call = (lambda: f(y_true, y_pred, weight))
    got = call()
    n = np.asarray(y_true).shape[0]
    k = obj.n_outputs
    for name, a in zip(("grad", "hess"), got):
        finite_array(np.asarray(a), name, (n,) if k == 1 else (n, k))
    if lib == "lightgbm" and obj.needs_group:
        metric = adapters.lightgbm_sklearn_metric("ndcg@3", "map")
        for name, value, _ in metric(y_true, y_pred, weight, group):
            finite_float(value, f"lightgbm_sklearn_metric {name}")
    if inplace_labels is not None and isinstance(y_true, np.ndarray):
        y_true[...] = inplace_labels
        again = call()
        want = obj.grad_hess(y_pred, y_true, group if lib == "lightgbm" else None, weight)
        _agree(again, want, f"{lib} sklearn objective after relabelling in place")
    return "ok"


def _warm_line_search():
    X = np.arange(16, dtype=float).reshape(8, 2)
    line_search("same-callable", X, np.array([2.0, 0, 1, 1, 0, 1, 2, 0]), [4, 4])


@target("adapters.line_search", warm=_warm_line_search)
def line_search(native, X, y, group):
    """LineSearch must refuse to rescale the trees of an objective it does not compute."""
    import lightgbm as lgb

    from customobj import adapters

    obj = build_objective("RankNet", {})
    objective = adapters.lightgbm_objective(obj) if native == "same-callable" else native
    ds = lgb.Dataset(X, y, group=group, free_raw_data=False, params={"verbose": -1, "min_data_in_bin": 1})
    lgb.train({"objective": objective, "verbose": -1, "num_leaves": 3, "min_data_in_leaf": 1, "metric": "None"},
              ds, 2, callbacks=[adapters.LineSearch(obj, X, y, group)])
    if native != "same-callable":
        raise BadOutput(f"LineSearch(RankNet) rescaled the trees of LightGBM's native objective {native!r}")
    return "trained"
