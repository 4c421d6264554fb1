"""Strategies for hostile TreeBooster model files: valid saved models, mutated.

The valid models are made by the worker (fitted on tiny data, ``to_json()``), so the mutations
always start from the current format version. Mutations (issue 13, class 3): child indices out of
range or pointing back to the root (cycles), huge / negative ``split_feature``, empty and
mismatched arrays, wrong types, missing keys, wrong ``tree_class`` / ``n_outputs`` / version, NaN
and inf, truncated and non-JSON text.
"""
from __future__ import annotations

import copy
import json
import math

import numpy as np
from hypothesis import strategies as st

from .runner import Example, worker

_BASES = []
FILE_NAMES = ("model.json", "model file", "file")
TREE_KEYS = ("split_feature", "threshold_bin", "threshold", "default_left", "left_child", "right_child",
             "split_gain", "internal_value", "internal_weight", "internal_count", "leaf_value", "leaf_weight",
             "leaf_count", "num_leaves")
TOP_KEYS = ("format", "version", "params", "objective", "n_features", "n_outputs", "feature_infos",
            "best_iteration", "evals_result", "tree_class", "trees")
WRONG_TYPES = ("a", None, {}, [[1]], 1.5, True, -1, 2**63, 2**70, [], float("nan"), float("inf"))


def base_models() -> list:
    """Valid model JSON texts, fitted once in the worker and cached."""
    if not _BASES:
        _BASES.extend(worker().value("booster.base_models", {}))
    return _BASES


def _tree_mutation(draw, d):
    trees = d["trees"]
    t = draw(st.integers(0, len(trees) - 1))
    tree = trees[t]
    key = draw(st.sampled_from(TREE_KEYS))
    n_int = len(tree["left_child"])
    how = draw(st.sampled_from(["child", "cycle", "feature", "value", "empty", "short", "long", "type",
                                "missing", "element-type"]))
    names = (key,)
    if how == "child" and n_int:
        side = draw(st.sampled_from(["left_child", "right_child"]))
        tree[side][draw(st.integers(0, n_int - 1))] = draw(st.sampled_from([10**6, -(10**6), n_int, -n_int - 5,
                                                                            2**63 - 1, -(2**63), 2**64]))
        names = (side, "child")
    elif how == "cycle" and n_int:
        side = draw(st.sampled_from(["left_child", "right_child"]))
        i = draw(st.integers(0, n_int - 1))
        tree[side][i] = draw(st.sampled_from([0, i]))
        names = (side, "child", "cycle", "loop", "reach")
    elif how == "feature" and n_int:
        tree["split_feature"][draw(st.integers(0, n_int - 1))] = draw(st.sampled_from(
            [10**7, -1, d["n_features"], 2**63 - 1, 2**64]))
        names = ("split_feature", "feature")
    elif how == "value":
        k = draw(st.sampled_from(["threshold", "leaf_value", "split_gain", "internal_value"]))
        if tree[k]:
            tree[k][draw(st.integers(0, len(tree[k]) - 1))] = draw(st.sampled_from([math.nan, math.inf, -math.inf,
                                                                                    1e308, 1.7e308]))
        names = (k,)
    elif how == "empty":
        tree[key] = []
    elif how == "short":
        tree[key] = tree[key][:-1] if isinstance(tree[key], list) else tree[key] - 1
    elif how == "long":
        tree[key] = tree[key] + tree[key][:1] + [0] if isinstance(tree[key], list) else tree[key] + 1000
    elif how == "type":
        tree[key] = draw(st.sampled_from(WRONG_TYPES))
    elif how == "element-type" and isinstance(tree[key], list) and tree[key]:
        tree[key][draw(st.integers(0, len(tree[key]) - 1))] = draw(st.sampled_from(WRONG_TYPES))
    else:
        del tree[key]
    return names


def _top_mutation(draw, d):
    key = draw(st.sampled_from(TOP_KEYS))
    how = draw(st.sampled_from(["value", "missing"]))
    if how == "missing":
        del d[key]
        return (key,)
    special = {
        "version": [0, 2, "1", None, 1.0, True, 10**30],
        "format": ["customobj.ole.TreeBooster2", "", None, 1],
        "n_features": [0, -1, 10**9, 2**70, "3", 1.5, d["n_features"] + 1, d["n_features"] - 1],
        "n_outputs": [0, -1, 2, 10**9, d["n_outputs"] + 1, "1"],
        "tree_class": [[5] * len(d["tree_class"]), [-1] * len(d["tree_class"]), [2**63] * len(d["tree_class"]),
                       d["tree_class"][:-1], d["tree_class"] + [0], "0"],
        "trees": [[], {}, [1], [None], d["trees"][:-1], d["trees"] + d["trees"][:1]],
        "params": [{**d["params"], "num_leaves": -5}, {**d["params"], "learning_rate": "x"},
                   {**d["params"], "max_bin": 10**9}, {**d["params"], "not_a_param": 1}, [], None,
                   {k: v for k, v in d["params"].items() if k != "criterion"}],
        "objective": [{"class": "os.system", "repr": "", "params": {}}, {"class": "RankNet", "params": {"sigma": -1}},
                      {"class": "Objective", "params": {}}, "RankNet", 7],
        "best_iteration": [10**30, -1, 0, "a", 1.5, 2**63],
        "evals_result": [{"valid_0": {"ndcg@10": [math.nan]}}, [], "x", {"v": None}],
        "feature_infos": [[], ["[a:b]"] * d["n_features"], None, ["none"] * (d["n_features"] + 3)],
    }[key]
    d[key] = draw(st.sampled_from(special) | st.sampled_from(WRONG_TYPES))
    return (key,)


@st.composite
def model_file_examples(draw):
    """A mutated model file, loaded and used to predict in the worker."""
    bases = base_models()
    text = draw(st.sampled_from(bases))
    d = json.loads(text)
    n_features = d["n_features"]
    X = np.asarray(draw(st.lists(st.sampled_from([0.0, -1.0, 1.5, 3.0, math.nan, -0.0, 1e300]),
                                 min_size=4 * n_features, max_size=4 * n_features))).reshape(4, n_features)
    where = draw(st.sampled_from(["tree", "tree", "tree", "top", "text"]))
    if where == "text":
        how = draw(st.sampled_from(["truncate", "empty", "null", "list", "bytes", "nested", "bom", "nan-token"]))
        if how == "truncate":
            out = text[: draw(st.integers(0, len(text) - 1))]
        elif how == "nested":
            out = "[" * 100000 + "]" * 100000
        else:
            out = {"empty": "", "null": "null", "list": "[]", "bytes": b"\xff\xfe\x00garbage\x80",
                   "bom": "\ufeff" + text, "nan-token": text.replace('"leaf_value": [', '"leaf_value": [NaN, ', 1)}[how]
        return Example("booster.load", {"text": out, "X": X}, (FILE_NAMES,))
    d = copy.deepcopy(d)
    names = _tree_mutation(draw, d) if where == "tree" else _top_mutation(draw, d)
    out = json.dumps(d, allow_nan=True)
    return Example("booster.load", {"text": out, "X": X}, (names, FILE_NAMES))


@st.composite
def save_examples(draw):
    scenario = draw(st.sampled_from(["unfitted", "nan_history", "inf_history", "bad_param", "full_disk"]))
    return Example("booster.save", {"scenario": scenario, "size_limit": draw(st.sampled_from([0, 1, 100, 1000, 4000]))})

