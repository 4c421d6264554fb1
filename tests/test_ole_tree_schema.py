"""customobj.ole.tree_schema: a tree record is written as plain JSON values and every malformed record
is refused with a ValueError naming where and which field (the model-file level: test_ole_model_file)."""
import copy
import json
import math

import numpy as np
import pytest

from customobj.ole.tree import Tree
from customobj.ole.tree_schema import check_structure, check_tree, tree_to_record

#: Root splits feature 1; its left child (node 1) splits feature 0 into leaves 0 and 1; leaf 2 on the right.
RECORD = {"num_leaves": 3, "split_feature": [1, 0], "threshold_bin": [3, 1], "threshold": [0.5, "-Infinity"],
          "default_left": [False, True], "left_child": [1, -1], "right_child": [-3, -2], "split_gain": [2.0, 1.0],
          "internal_value": [0.0, 0.1], "internal_weight": [6.0, 4.0], "internal_count": [12, 8],
          "leaf_value": [-0.1, 0.1, 0.3], "leaf_weight": [2.0, 2.0, 2.0], "leaf_count": [4, 4, 4]}


def test_a_valid_record_is_checked_into_arrays_and_written_back_the_same():
    out = check_tree(copy.deepcopy(RECORD), "m.json: trees[0]", n_features=2)
    assert out["threshold"][1] == -math.inf and out["left_child"].tolist() == [1, -1]
    tree = Tree.from_fields(out)
    record = tree_to_record(tree)
    assert record == RECORD and list(record)[0] == "num_leaves"
    assert json.loads(json.dumps(record)) == RECORD  # plain JSON values, numpy scalars converted
    assert all(type(v) is int for v in record["internal_count"])


def test_a_single_leaf_tree_is_valid():
    leaf = {k: [] for k in RECORD if k != "num_leaves"} | {"num_leaves": 1, "leaf_value": [0.0],
                                                           "leaf_weight": [0.0], "leaf_count": [5]}
    assert check_tree(leaf, "t", n_features=1)["num_leaves"] == 1


def changed(**fields):
    record = copy.deepcopy(RECORD)
    for key, value in fields.items():
        if value is None:
            del record[key]
        else:
            record[key] = value
    return record


@pytest.mark.parametrize("record, message", [
    ([RECORD], "t must be an object, got list"),
    (changed(leaf_count=None), "t is missing the field 'leaf_count'"),
    (changed(gain=[1.0]), "t has an unknown field 'gain'"),
    (changed(num_leaves=0), "t.num_leaves = 0 must be an integer >= 1"),
    (changed(num_leaves=True), "t.num_leaves = True must be an integer >= 1"),
    (changed(split_feature=[1, 2]), "t.split_feature[1] = 2 is out of range (the model has 2 features: 0..1)"),
    (changed(leaf_value=[0.0, 1e301, 0.0]), "t.leaf_value[1] = 1e+301 exceeds"),
    (changed(left_child=[5, -1]), "t.left_child[0] = 5 is out of range"),
    (changed(right_child=[-3, 0]), "t.right_child[1] = 0 points back to the root"),
    (changed(right_child=[-1, -2]), "t has leaf 0 that is the child of 2 nodes"),
    (changed(left_child=[-1, -2], right_child=[-3, -2]), "t has node 1 that is not the child of any node"),
    (changed(left_child=[-2, -1], right_child=[-3, 1]), "t has node 1 in a cycle that the root does not reach"),
])
def test_malformed_records_are_refused_naming_where_and_what(record, message):
    with pytest.raises(ValueError) as info:
        check_tree(record, "t", n_features=2)
    assert str(info.value).startswith(message.split(" ")[0]) and message in str(info.value)


def test_a_cycle_the_root_does_not_reach_is_refused():
    # nodes 1 and 2 are each other's child: every node and leaf has one parent, but the root reaches neither
    left = np.array([-1, 2, -3])
    right = np.array([-2, -4, 1])
    with pytest.raises(ValueError, match="in a cycle that the root does not reach"):
        check_structure(left, right, 4, "t")
    check_structure(np.array([1, -1, -3]), np.array([2, -2, -4]), 4, "t")  # the same shape, reached
