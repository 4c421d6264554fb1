"""customobj.ole.tree: trees are node and leaf record arrays that read as a mapping of the model file's
fields, round-trip through a model file and predict like a plain mapping of their fields."""
import numpy as np
import pytest

from customobj.ole.predictor import PackedTrees, predict_raw


def test_trees_are_node_and_leaf_record_arrays_that_round_trip_through_a_model_file(tmp_path):
    from customobj import RankNet
    from customobj.ole import TreeBooster
    from customobj.ole.tree import LEAF_DTYPE, NODE_DTYPE, Tree
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    y = rng.integers(0, 3, 120).astype(float)
    model = TreeBooster(RankNet(), num_leaves=5, n_estimators=2, min_data_in_leaf=5, verbose=False).fit(X, y, [20] * 6)
    t = model.trees_[0]
    assert isinstance(t, Tree) and t.nodes.dtype == NODE_DTYPE and t.leaves.dtype == LEAF_DTYPE
    assert t.nodes.shape == (t["num_leaves"] - 1,) and t.leaves.shape == (t["num_leaves"],)
    model.save(tmp_path / "m.json")
    loaded = TreeBooster.load(tmp_path / "m.json")
    assert all(isinstance(a, Tree) and a == b for a, b in zip(loaded.trees_, model.trees_))
    # a tree given as a plain mapping of its fields predicts the same as the record arrays
    packed = PackedTrees([dict(t)])
    np.testing.assert_array_equal(predict_raw(X, packed, np.zeros(1, np.int64), 1, 0, 1),
                                  predict_raw(X, PackedTrees([t]), np.zeros(1, np.int64), 1, 0, 1))


def test_tree_reads_as_a_mapping_of_its_model_file_fields():
    from customobj.ole.tree import LEAF_DTYPE, NODE_DTYPE, Tree
    from customobj.ole.tree_schema import TREE_FIELDS
    fields = {"split_feature": [1, 0], "threshold_bin": [3, 1], "threshold": [0.5, -1.0],
              "default_left": [False, True], "left_child": [1, -1], "right_child": [-3, -2],
              "split_gain": [2.0, 1.0], "internal_value": [0.0, 0.1], "internal_weight": [6.0, 4.0],
              "internal_count": [12, 8], "leaf_value": [-0.1, 0.1, 0.3], "leaf_weight": [2.0, 2.0, 2.0],
              "leaf_count": [4, 4, 4]}
    t = Tree.from_fields(fields)
    assert t.nodes.dtype == NODE_DTYPE and t.leaves.dtype == LEAF_DTYPE
    assert t["num_leaves"] == t.num_leaves == 3 and len(t) == len(TREE_FIELDS)
    assert tuple(t) == TREE_FIELDS
    for name, values in fields.items():
        assert t[name].tolist() == values
    with pytest.raises(KeyError):
        t["gain"]
    t["leaf_value"][2] = 0.5  # a view: writing edits the tree
    assert t.leaves["leaf_value"][2] == 0.5
    other = Tree.from_fields(fields)
    assert t != other and Tree.from_fields(dict(t)) == t
    assert repr(t) == "Tree(num_leaves=3)"


def test_feature_importances_count_splits_or_sum_gains():
    from customobj.ole.tree import feature_importances
    trees = [{"split_feature": [0, 2, 0], "split_gain": [1.5, 2.0, 0.5]}, {"split_feature": [2], "split_gain": [4.0]}]
    split = feature_importances(trees, 4, "split")
    assert split.dtype == np.int64 and split.tolist() == [2, 0, 2, 0]
    assert feature_importances(trees, 4, "gain").tolist() == [2.0, 0.0, 6.0, 0.0]
    with pytest.raises(ValueError, match="importance_type"):
        feature_importances(trees, 4, "cover")
