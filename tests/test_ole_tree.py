"""customobj.ole.tree: trees are node and leaf record arrays that round-trip through a model file and
predict like a plain mapping of their fields."""
import numpy as np

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
