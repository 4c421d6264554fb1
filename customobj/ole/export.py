"""Export a ``TreeBooster`` as a LightGBM text model that predicts exactly what ``predict()`` does.

LightGBM numerical splits send ``x <= threshold`` left; ``decision_type`` bit 1 is ``default_left``
and bits 2-3 the missing type (2 = NaN: NaN follows ``default_left``). Every split is exported with
missing type NaN and the side the builder chose for NaN. Two more things make the export exact:

* the trees exported are the ones ``predict()`` uses by default: the first ``best_iteration_``
  rounds after early stopping, or ``num_iteration=`` rounds when given;
* LightGBM's dense prediction reads ``|x| <= kZeroThreshold`` (``1e-35f``) as 0 before any split
  (``RowFunctionFromDenseMatric`` in its C API); ``customobj.ole.predictor`` does the same
  (:data:`~customobj.ole.predictor.ZERO_THRESHOLD`), and LightGBM's parser reads the shortest
  round-trip ``repr`` of every threshold back to the same double, tiny ones included.

Feature names are ``feature_names_in_`` (DataFrame columns) with whitespace replaced by ``_``, as
LightGBM does itself (its model text separates names by spaces), else ``Column_0 ...``.
"""
from __future__ import annotations

import re

from .model_file import to_dict
from .tree_schema import INFINITE

__all__ = ["lightgbm_model_string", "lightgbm_feature_names"]

_MISSING_NAN = 2 << 2  # decision_type bits 2-3: missing type NaN
_DEFAULT_LEFT = 2  # decision_type bit 1
#: Characters LightGBM refuses in feature names ("Do not support special JSON characters").
_JSON_SPECIAL = re.compile(r'[",:\[\]{}]')


def lightgbm_feature_names(names: list[str] | None, n_features: int) -> list[str]:
    """LightGBM's names for the features: ``names`` with whitespace as ``_``, or ``Column_j``."""
    if names is None:
        return [f"Column_{j}" for j in range(n_features)]
    out = [re.sub(r"\s", "_", s) for s in names]
    for j, s in enumerate(out):
        if _JSON_SPECIAL.search(s):
            raise ValueError(f"feature name {names[j]!r} (feature {j}) contains one of the characters "
                             f"\", , : [ ] {{ }} that LightGBM does not allow in feature names; rename it")
    return out


def _fmt(values):
    return " ".join(repr(float(v)) for v in values)


def _ints(values):
    return " ".join(str(int(v)) for v in values)


def _tree_block(index, t, shrinkage):
    lines = [f"Tree={index}", f"num_leaves={t['num_leaves']}", "num_cat=0"]
    if t["num_leaves"] > 1:
        decision = [_DEFAULT_LEFT * int(d) + _MISSING_NAN for d in t["default_left"]]
        thresholds = [INFINITE[v] if type(v) is str else v for v in t["threshold"]]  # LightGBM reads "-inf"
        lines += [
            f"split_feature={_ints(t['split_feature'])}",
            f"split_gain={_fmt(t['split_gain'])}",
            f"threshold={_fmt(thresholds)}",
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


def lightgbm_model_string(model, num_iteration: int | None = None) -> str:
    """LightGBM text model (``lightgbm.Booster(model_str=...)``) of the trees ``predict()`` uses, raw scores.

    ``num_iteration``: as for ``TreeBooster.predict`` (None: ``best_iteration_`` if early stopping
    set it, else every round; ``<= 0``: every round).
    """
    d = to_dict(model)  # the validated record: the same checks as a saved file
    n_trees = model._n_trees(num_iteration)  # what predict() uses: one definition of "default"
    if n_trees == 0:
        raise ValueError("the model has no trees to export (n_estimators=0 or num_iteration selects none)")
    K, F = d["n_outputs"], d["n_features"]
    shrinkage = float(d["params"]["learning_rate"])
    blocks = [_tree_block(k, t, shrinkage) for k, t in enumerate(d["trees"][:n_trees])]
    header = [
        "tree",
        "version=v4",
        f"num_class={K}",
        f"num_tree_per_iteration={K}",
        "label_index=0",
        f"max_feature_idx={F - 1}",
        "feature_names=" + " ".join(lightgbm_feature_names(d.get("feature_names"), F)),
        "feature_infos=" + " ".join(d["feature_infos"]),
        "tree_sizes=" + " ".join(str(len(b.encode())) for b in blocks),
        "",
        "",
    ]
    tail = "end of trees\n\nparameters:\nend of parameters\n\npandas_categorical:null\n"
    return "\n".join(header) + "".join(blocks) + tail
