"""Model persistence: versioned JSON, and LightGBM's text model format.

LightGBM numerical splits send ``x <= threshold`` left; ``decision_type`` bit 1 is
``default_left`` and bits 2-3 the missing type (2 = NaN: NaN follows ``default_left``). Every
split is exported with missing type NaN and the side the builder chose for NaN, so LightGBM
predicts exactly as ``TreeBooster.predict``.
"""
from __future__ import annotations

import json


__all__ = ["FORMAT", "FORMAT_VERSION", "to_json_string", "save_json", "load_json", "lightgbm_model_string"]

FORMAT = "customobj.ole.TreeBooster"
FORMAT_VERSION = 1
_PARAMS = ("criterion", "num_leaves", "learning_rate", "n_estimators", "max_bin", "min_data_in_leaf",
           "min_sum_hessian_in_leaf", "lambda_l2", "max_depth", "growth", "feature_fraction", "bagging_fraction",
           "random_state", "leaf_solver", "line_search", "importance_type", "verbose")
_TREE_KEYS = {"split_feature": int, "threshold_bin": int, "threshold": float, "default_left": bool,
              "left_child": int, "right_child": int, "split_gain": float, "internal_value": float,
              "internal_weight": float, "internal_count": int, "leaf_value": float, "leaf_weight": float,
              "leaf_count": int}
_SCALARS = (bool, int, float, str, type(None))


def _objective_spec(obj):
    if obj is None:
        return None
    params = dict(obj._params())
    simple = all(isinstance(v, _SCALARS) for v in params.values())
    return {"class": type(obj).__name__, "repr": repr(obj), "params": params if simple else None}


def _objective_from_spec(spec):
    """Rebuild a customobj objective from its class name and scalar options; None if not possible."""
    if not spec or spec.get("params") is None:
        return None
    from .. import objectives
    cls = getattr(objectives, spec["class"], None)
    if cls is None:
        return None
    try:
        return cls(**spec["params"])
    except (TypeError, ValueError):
        return None


def _tree_to_dict(t):
    out = {"num_leaves": int(t["num_leaves"])}
    for k, conv in _TREE_KEYS.items():
        out[k] = [conv(v) for v in t[k]]
    return out


def to_dict(model):
    model._check_fitted()
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "params": {k: getattr(model, k) for k in _PARAMS},
        "objective": _objective_spec(model.objective),
        "n_features": int(model.n_features_),
        "n_outputs": int(model.n_outputs_),
        "feature_infos": list(model.feature_infos_),
        "best_iteration": model.best_iteration_,
        "evals_result": model.evals_result_,
        "tree_class": [int(k) for k in model.tree_class_],
        "trees": [_tree_to_dict(t) for t in model.trees_],
    }


def to_json_string(model):
    return json.dumps(to_dict(model), sort_keys=True, allow_nan=False)


def save_json(model, path):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(to_json_string(model))


def from_dict(cls, d):
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} model file")
    if d.get("version") != FORMAT_VERSION:
        raise ValueError(f"unsupported model version {d.get('version')!r}; this customobj reads version {FORMAT_VERSION}")
    model = cls(_objective_from_spec(d["objective"]), **d["params"])
    model.n_features_ = d["n_features"]
    model.n_outputs_ = d["n_outputs"]
    model.feature_infos_ = d["feature_infos"]
    model.best_iteration_ = d["best_iteration"]
    model.evals_result_ = d["evals_result"]
    model.tree_class_ = d["tree_class"]
    model.trees_ = [dict(t) for t in d["trees"]]
    model._packed = None
    return model


def load_json(cls, path):
    with open(path, encoding="utf-8") as fh:
        return from_dict(cls, json.load(fh))


def _fmt(values):
    return " ".join(repr(float(v)) for v in values)


def _ints(values):
    return " ".join(str(int(v)) for v in values)


def _tree_block(index, t, shrinkage):
    lines = [f"Tree={index}", f"num_leaves={t['num_leaves']}", "num_cat=0"]
    if t["num_leaves"] > 1:
        decision = [2 * int(bool(d)) + (2 << 2) for d in t["default_left"]]  # missing type NaN
        lines += [
            f"split_feature={_ints(t['split_feature'])}",
            f"split_gain={_fmt(t['split_gain'])}",
            f"threshold={_fmt(t['threshold'])}",
            f"decision_type={_ints(decision)}",
            f"left_child={_ints(t['left_child'])}",
            f"right_child={_ints(t['right_child'])}",
            f"leaf_value={_fmt(t['leaf_value'])}",
            f"leaf_weight={_fmt(t['leaf_weight'])}",
            f"leaf_count={_ints(t['leaf_count'])}",
            f"internal_value={_fmt(t['internal_value'])}",
            f"internal_weight={_fmt(t['internal_weight'])}",
            f"internal_count={_ints(t['internal_count'])}",
        ]
    else:
        lines.append(f"leaf_value={_fmt(t['leaf_value'])}")
    lines += ["is_linear=0", f"shrinkage={shrinkage!r}", "", ""]
    return "\n".join(lines)


def lightgbm_model_string(model):
    """LightGBM text model (``lightgbm.Booster(model_str=...)``) of the fitted trees, raw scores."""
    model._check_fitted()
    K = model.n_outputs_
    F = model.n_features_
    blocks = [_tree_block(k, t, model.learning_rate) for k, t in enumerate(model.trees_)]
    header = [
        "tree",
        "version=v4",
        f"num_class={K}",
        f"num_tree_per_iteration={K}",
        "label_index=0",
        f"max_feature_idx={F - 1}",
        "feature_names=" + " ".join(f"Column_{j}" for j in range(F)),
        "feature_infos=" + " ".join(model.feature_infos_),
        "tree_sizes=" + " ".join(str(len(b.encode())) for b in blocks),
        "",
        "",
    ]
    return "\n".join(header) + "".join(blocks) + "end of trees\n\nparameters:\nend of parameters\n\npandas_categorical:null\n"
