"""customobj.ole.predictor: LightGBM's zero threshold, and malformed trees refused before the kernel."""
import json
import subprocess
import sys

import numpy as np
import pytest

from customobj.ole.predictor import ZERO_THRESHOLD, PackedTrees, predict_raw


def stump(threshold, default_left=False):
    """x0 <= threshold -> leaf 0 (value 1.0), else leaf 1 (value 2.0)."""
    return {"num_leaves": 2, "split_feature": [0], "threshold": [threshold], "threshold_bin": [0],
            "default_left": [default_left], "left_child": [-1], "right_child": [-2], "leaf_value": [1.0, 2.0]}


def predict(trees, x):
    X = np.asarray(x, dtype=np.float64).reshape(-1, 1)
    packed = PackedTrees(trees)
    return predict_raw(X, packed, np.zeros(len(trees), np.int64), 1, 0, len(trees))[:, 0]


def test_zero_threshold_is_lightgbms_float32_constant():
    assert ZERO_THRESHOLD == float(np.float32(1e-35)) == 1.0000000180025095e-35


def test_values_within_the_zero_threshold_are_read_as_zero():
    above = np.nextafter(ZERO_THRESHOLD, 1.0)
    x = [1e-40, ZERO_THRESHOLD, above, -ZERO_THRESHOLD, -above, 5e-324, np.nan, 0.0]
    # threshold 5e-41 lies between 0 and 1e-40: 1e-40 still goes left, as LightGBM's dense predict sends it
    np.testing.assert_array_equal(predict([stump(5e-41)], x), [1, 1, 2, 1, 1, 1, 2, 1])
    # a threshold just below 0: every tiny value is 0 and goes right, -above is a real negative value
    np.testing.assert_array_equal(predict([stump(-1e-40, default_left=True)], x), [2, 2, 2, 2, 1, 2, 1, 2])


def test_range_arguments_are_checked():
    packed = PackedTrees([stump(0.5)])
    X = np.zeros((2, 1))
    with pytest.raises(ValueError, match="tree range"):
        predict_raw(X, packed, np.zeros(1, np.int64), 1, 0, 2)
    with pytest.raises(ValueError, match="tree_col"):
        predict_raw(X, packed, np.array([3]), 1, 0, 1)
    with pytest.raises(ValueError, match="split on feature 3"):
        predict_raw(X, PackedTrees([{**stump(0.5), "split_feature": [3]}]), np.zeros(1, np.int64), 1, 0, 1)


_CHILD = r"""
import json, sys
import numpy as np
from customobj import RankNet
from customobj.ole import TreeBooster
rng = np.random.default_rng(0)
X = rng.normal(size=(120, 3)); y = rng.integers(0, 3, 120).astype(float)
out = {}
for name, field, index, value in json.loads(sys.argv[1]):
    model = TreeBooster(RankNet(), num_leaves=5, n_estimators=2, min_data_in_leaf=5, verbose=False).fit(X, y, [20] * 6)
    if field == "leaf_value" and value is None:  # the tree replaced by a mapping without leaves
        model.trees_[1] = {**model.trees_[1], "leaf_value": []}
    else:  # an edit in place of the tree's record arrays
        model.trees_[1][field][index] = value
    try:
        model.predict(X)
        out[name] = "predicted"
    except ValueError as exc:
        out[name] = "ValueError: " + str(exc)
print(json.dumps(out))
"""

MUTATIONS = {  # a trees_ edited by hand: the kernel must never see it
    "child_out_of_range": ("left_child", 0, 10**6, "trees_[1].left_child[0] = 1000000 is out of range"),
    "child_to_root": ("right_child", 1, 0, "points back to the root"),
    "split_feature": ("split_feature", 0, 10**7, "split on feature 10000000 but X has 3 features"),
    "negative_feature": ("split_feature", 0, -5, "negative split_feature -5"),
    "empty_leaves": ("leaf_value", 0, None, "internal nodes and 0 leaves"),
}


def test_malformed_trees_raise_instead_of_crashing():
    cases = [[name, field, index, value] for name, (field, index, value, _) in MUTATIONS.items()]
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cases)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"predict crashed (status {proc.returncode}): {proc.stderr[-2000:]}"
    results = json.loads(proc.stdout)
    for name, (_, _, _, message) in MUTATIONS.items():
        assert results[name].startswith("ValueError") and message in results[name], (name, results[name])




def test_staged_raw_is_the_running_sum_of_each_rounds_trees():
    import contextlib

    from customobj import RankNet
    from customobj.ole import TreeBooster
    from customobj.ole.predictor import staged_raw
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 3))
    model = TreeBooster(RankNet(), num_leaves=3, n_estimators=3, min_data_in_leaf=5, verbose=False).fit(
        X, rng.integers(0, 3, 60).astype(float), [10] * 6)
    packed, cols = PackedTrees(model.trees_), np.zeros(3, np.int64)
    stages = [a.copy() for a in staged_raw(X, packed, cols, 1, 3, contextlib.nullcontext())]
    for r, got in enumerate(stages, 1):
        np.testing.assert_array_equal(got, predict_raw(X, packed, cols, 1, 0, r))
