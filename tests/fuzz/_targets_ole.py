"""Worker targets: TreeBooster construction and fit, loading mutated model files, saving over a file."""
from __future__ import annotations

import json
import os
import resource
import signal
import tempfile

import numpy as np

from ._targets import BadOutput, finite_array, resolve_group, rows_of, target
from ._targets_core import build_objective

_QUIET = {"verbose": False}


def _data(n=24, F=3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, F)).astype(dtype)
    y = np.clip(np.round(X[:, 0] + rng.normal(scale=0.5, size=n) + 1), 0, 3)
    return X, y, [n // 3, n // 3, n - 2 * (n // 3)]


def base_models():
    """Valid saved models (JSON text) that the model-file strategies mutate."""
    from customobj import TreeBooster

    X, y, g = _data()
    out = []
    ranker = TreeBooster(build_objective("RankNet", {}), n_estimators=3, num_leaves=4, min_data_in_leaf=3, **_QUIET)
    out.append(ranker.fit(X, y, g).to_json())
    mc = TreeBooster(build_objective("McRank", {"n_classes": 4}), n_estimators=2, num_leaves=3, min_data_in_leaf=3,
                     **_QUIET)
    out.append(mc.fit(X, y, g).to_json())
    es = TreeBooster(build_objective("LambdaRank", {"k": 3}), n_estimators=4, num_leaves=3, min_data_in_leaf=3,
                     **_QUIET)
    out.append(es.fit(X, y, g, eval_set=[(X, y)], eval_group=[g], early_stopping_rounds=2).to_json())
    return out


def _warm_booster():
    from customobj import TreeBooster

    for dtype in (np.float64, np.float32):
        X, y, g = _data(dtype=dtype)
        for cls, params, opts in (("RankNet", {}, {}), ("LambdaRank", {}, {"leaf_solver": "joint"}),
                                  ("McRank", {"n_classes": 4}, {"criterion": "wse"}),
                                  ("SquaredError", {}, {"criterion": "se", "line_search": True}),
                                  ("QBRank", {}, {"bagging_fraction": 0.5, "feature_fraction": 0.5})):
            m = TreeBooster(build_objective(cls, params), n_estimators=2, num_leaves=4, min_data_in_leaf=2,
                            **_QUIET, **opts).fit(X, y, g)
            m.predict(X)
    base_models()
    _roundtrip(m, X)


def _roundtrip(model, X):
    from customobj import TreeBooster

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.json")
        model.save(path)
        again = TreeBooster.load(path)
        if not np.array_equal(again.predict(X), model.predict(X)):
            raise BadOutput("a saved and reloaded model predicts differently")


@target("booster.base_models", warm=None)
def _base_models():
    return base_models()


@target("booster.fit", warm=_warm_booster)
def booster_fit(cls, obj_params, params, X, y, group, fit_options, X_predict=None):
    """Fit on tiny (possibly hostile) data: finite predictions, a saveable model, or an error."""
    from customobj import TreeBooster

    model = TreeBooster(build_objective(cls, obj_params), **{**_QUIET, **params})
    if "eval_group" in fit_options:  # the strategies encode groups as specs: resolve them here too
        fit_options = {**fit_options, "eval_group": [resolve_group(g) for g in fit_options["eval_group"]]}
    model.fit(X, y, resolve_group(group), **fit_options)
    n, shape = rows_of(X), np.shape(X)
    if n == 0 or (len(shape) == 2 and shape[1] == 0):
        raise BadOutput(f"fit accepted X of shape {shape} (nothing to train on)")
    if model.num_leaves < 2:
        raise BadOutput(f"fit accepted num_leaves={model.num_leaves} (a tree needs 2 leaves)")
    Xp = X if X_predict is None else X_predict
    p = model.predict(Xp)
    k = model.n_outputs_
    finite_array(p, "predictions", (rows_of(Xp),) if k == 1 else (rows_of(Xp), k))
    try:
        model.to_json()
    except Exception as exc:  # noqa: BLE001
        raise BadOutput(f"a fitted model cannot be saved: {type(exc).__name__}: {exc}") from None
    _roundtrip(model, np.asarray(Xp))
    return float(np.abs(p).sum())


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _check_tree(t, n_features):
    """Why tree ``t`` (a dict from the file) cannot be evaluated soundly, or None."""
    nl = t.get("num_leaves")
    if not _is_int(nl) or nl < 1:
        return f"num_leaves = {nl!r}"
    leaves = t.get("leaf_value")
    if not isinstance(leaves, list) or len(leaves) != nl:
        return f"leaf_value has {len(leaves) if isinstance(leaves, list) else leaves!r} entries for {nl} leaves"
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in leaves):
        return "leaf_value holds a non-finite or non-number"
    n_int = nl - 1
    arrays = {}
    for key in ("split_feature", "threshold", "default_left", "left_child", "right_child"):
        a = t.get(key)
        if n_int == 0 and a in (None, []):
            continue
        if not isinstance(a, list) or len(a) != n_int:
            return f"{key} has {len(a) if isinstance(a, list) else a!r} entries for {n_int} internal nodes"
        arrays[key] = a
    if n_int == 0:
        return None
    if not all(_is_int(f) and 0 <= f < n_features for f in arrays["split_feature"]):
        return f"split_feature outside 0..{n_features - 1}"
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and not np.isnan(v) for v in arrays["threshold"]):
        return "threshold holds NaN or a non-number"
    if not all(isinstance(v, bool) for v in arrays["default_left"]):
        return "default_left holds a non-boolean"
    seen_nodes, seen_leaves, stack = {0}, set(), [0]
    while stack:
        node = stack.pop()
        for c in (arrays["left_child"][node], arrays["right_child"][node]):
            if not _is_int(c) or not -nl <= c < n_int:
                return f"child index {c!r} outside -{nl}..{n_int - 1}"
            if c < 0:
                if ~c in seen_leaves:
                    return f"leaf {~c} reached twice"
                seen_leaves.add(~c)
            elif c in seen_nodes:
                return f"node {c} reached twice (a cycle or a shared subtree)"
            else:
                seen_nodes.add(c)
                stack.append(c)
    if len(seen_nodes) != n_int or len(seen_leaves) != nl:
        return f"{n_int - len(seen_nodes)} nodes / {nl - len(seen_leaves)} leaves unreachable"
    return None


def _reference(doc, X):
    """``(predictions, None)`` by walking the file's trees in Python, or ``(None, problem)``."""
    try:
        K, F, trees, cls = doc["n_outputs"], doc["n_features"], doc["trees"], doc["tree_class"]
    except (KeyError, TypeError) as exc:
        return None, f"missing {exc}"
    if not (_is_int(K) and K >= 1 and _is_int(F) and F >= 1 and isinstance(trees, list) and isinstance(cls, list)):
        return None, "n_outputs / n_features / trees / tree_class malformed"
    if len(cls) != len(trees) or len(trees) % K or not all(_is_int(c) and 0 <= c < K for c in cls):
        return None, f"tree_class {cls[:8]} does not match {len(trees)} trees of {K} outputs"
    for i, t in enumerate(trees):
        problem = _check_tree(t, F) if isinstance(t, dict) else f"tree {i} is {type(t).__name__}"
        if problem:
            return None, f"tree {i}: {problem}"
    n_iter = len(trees) // K
    best = doc.get("best_iteration")
    if best is not None and not (_is_int(best) and 1 <= best <= n_iter):
        return None, f"best_iteration = {best!r} with {n_iter} iterations"
    out = np.zeros((X.shape[0], K))
    for t, c in zip(trees[: (best or n_iter) * K], cls):
        for r, x in enumerate(X):
            node = 0
            if t["num_leaves"] == 1:
                out[r, c] += t["leaf_value"][0]
                continue
            while node >= 0:
                v = x[t["split_feature"][node]]
                left = t["default_left"][node] if np.isnan(v) else v <= t["threshold"][node]
                node = t["left_child"][node] if left else t["right_child"][node]
            out[r, c] += t["leaf_value"][~node]
    return out, None


def _leaf_bound(text):
    """Sum over trees of max |leaf_value| in the file: no prediction may exceed it."""
    try:
        doc = json.loads(text)
        return sum(max((abs(float(v)) for v in t["leaf_value"]), default=0.0) for t in doc["trees"])
    except Exception:  # noqa: BLE001 - a file the loader accepted but we cannot read: no bound
        return None


@target("booster.load", warm=_warm_booster)
def booster_load(text, X):
    """Load a (mutated) model file and use it: finite predictions within the file's leaf values."""
    from customobj import TreeBooster

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.json")
        with open(path, "wb") as fh:
            fh.write(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        model = TreeBooster.load(path)
    p = model.predict(X)
    k = model.n_outputs_
    finite_array(p, "predictions", (len(X),) if k == 1 else (len(X), k))
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    want, problem = _reference(doc, X) if isinstance(doc, dict) else (None, "not a JSON object")
    if problem:
        raise BadOutput(f"load accepted a model file that cannot be evaluated soundly ({problem}) and predicted")
    if not np.allclose(p.reshape(want.shape), want, rtol=1e-12, atol=0):
        raise BadOutput("predictions differ from walking the file's trees")
    bound = _leaf_bound(text)
    if bound is not None and p.size and np.abs(p).max() > bound * (1 + 1e-9) + 1e-300:
        raise BadOutput(f"prediction {np.abs(p).max():g} exceeds the sum of the file's largest leaf values "
                        f"({bound:g}): the predictor read outside the leaf arrays")
    finite_array(np.asarray(model.feature_importances_, dtype=float), "feature_importances_")
    model.to_lightgbm_string()
    return float(np.abs(p).sum())


@target("booster.save", warm=_warm_booster)
def booster_save(scenario, size_limit=0):
    """Save over a good model file: on any failure the previous file must survive, byte for byte."""
    from customobj import TreeBooster

    X, y, g = _data()
    good = TreeBooster(build_objective("RankNet", {}), n_estimators=2, num_leaves=3, min_data_in_leaf=3,
                       **_QUIET).fit(X, y, g)
    model = TreeBooster(build_objective("RankNet", {}), n_estimators=6, num_leaves=6, min_data_in_leaf=2, **_QUIET)
    if scenario != "unfitted":
        model.fit(X, y, g)
    if scenario in ("nan_history", "inf_history"):
        model.evals_result_ = {"valid_0": {"ndcg@10": [0.5, float("nan") if scenario == "nan_history" else float("inf")]}}
    elif scenario == "bad_param":
        model.learning_rate = object()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.json")
        good.save(path)
        with open(path, "rb") as fh:
            before = fh.read()
        error = None
        old = resource.getrlimit(resource.RLIMIT_FSIZE)
        old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG
        try:
            if scenario == "full_disk":
                resource.setrlimit(resource.RLIMIT_FSIZE, (size_limit, old[1]))
            model.save(path)
        except (ValueError, TypeError, OSError) as exc:
            error = exc
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, old)
            signal.signal(signal.SIGXFSZ, old_handler)
        with open(path, "rb") as fh:
            after = fh.read()
        leftovers = sorted(set(os.listdir(tmp)) - {"model.json"})
        if error is not None and after != before:
            raise BadOutput(f"save failed ({type(error).__name__}: {error}) and the previous file is now "
                            f"{len(after)} bytes instead of {len(before)}")
        if leftovers:
            raise BadOutput(f"save left files behind: {leftovers}")
        if error is None:
            again = TreeBooster.load(path)
            if not np.array_equal(again.predict(X), model.predict(X)):
                raise BadOutput("the saved file does not reproduce the model")
    if isinstance(error, (ValueError, TypeError)):
        raise error
    return "kept" if error is not None else "saved"
