"""Tree traversal: on raw features (``x <= threshold`` left, NaN -> default side, as LightGBM)
and on bins (training-set score updates). All trees are packed in flat arrays.

Raw-feature prediction reads ``|x| <= ZERO_THRESHOLD`` as 0, as LightGBM's dense prediction does,
so that a model exported with ``to_lightgbm()`` predicts the same on every input. The packed
arrays are checked (child indices, acyclic trees, feature indices) before any kernel sees them:
``trees_`` is a public attribute, and a bad index would make the kernel read out of bounds or loop.
"""
from __future__ import annotations

from typing import ContextManager, Iterator, NamedTuple

import numpy as np
from numba import njit, prange

from .tree import Tree
from .tree_schema import check_structure

__all__ = ["ZERO_THRESHOLD", "PackedTrees", "TreeArrays", "predict_raw", "staged_raw", "add_tree_bins", "child_of_bin"]

#: LightGBM's ``kZeroThreshold`` (``1e-35f``, a float32 literal: 1.0000000180025095e-35). Its
#: dense prediction turns every feature value with ``|x| <= kZeroThreshold`` into 0 before the
#: trees see it; this predictor does the same.
ZERO_THRESHOLD = float(np.float32(1e-35))


class TreeArrays(NamedTuple):
    """The packed trees as the prediction kernel takes them (one record: numba reads its fields)."""
    feature: np.ndarray  # split feature per internal node (int64)
    threshold: np.ndarray  # raw threshold per internal node (float64)
    default_left: np.ndarray  # NaN goes left (bool)
    left: np.ndarray  # child of each node: a node id, or ~leaf (int64)
    right: np.ndarray
    leaf_value: np.ndarray  # (float64)
    node_ptr: np.ndarray  # tree t's nodes: node_ptr[t]:node_ptr[t + 1]
    leaf_ptr: np.ndarray  # tree t's leaves: leaf_ptr[t]:leaf_ptr[t + 1]


class PackedTrees:
    """Node and leaf arrays of many trees, concatenated; ``node_ptr``/``leaf_ptr`` delimit trees.

    The trees are :class:`~customobj.ole.tree.Tree` record arrays (as ``trees_`` holds them) or
    any mapping of the same field names to sequences (a tree edited or built by hand).

    Raises ``ValueError`` naming the tree when one is malformed (see
    :func:`customobj.ole.tree_schema.check_structure`).
    """

    def __init__(self, trees: list) -> None:
        self.n_trees = len(trees)
        n_nodes = [len(t["split_feature"]) for t in trees]
        n_leaves = [len(t["leaf_value"]) for t in trees]
        self.node_ptr = np.zeros(len(trees) + 1, np.int64)
        np.cumsum(n_nodes, out=self.node_ptr[1:])
        self.leaf_ptr = np.zeros(len(trees) + 1, np.int64)
        np.cumsum(n_leaves, out=self.leaf_ptr[1:])

        def cat(key, dtype):
            parts = [np.asarray(t[key], dtype=dtype) for t in trees]
            for k, part in enumerate(parts):
                if part.shape != ((n_nodes if key in _NODE_KEYS else n_leaves)[k],):
                    raise ValueError(f"trees_[{k}].{key} has shape {part.shape}: expected one entry per "
                                     f"{'internal node' if key in _NODE_KEYS else 'leaf'}")
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        self.feature = cat("split_feature", np.int64)
        self.threshold = cat("threshold", np.float64)
        self.threshold_bin = cat("threshold_bin", np.int64)
        self.default_left = cat("default_left", np.bool_)
        self.left = cat("left_child", np.int64)
        self.right = cat("right_child", np.int64)
        self.leaf_value = cat("leaf_value", np.float64)
        for k in range(self.n_trees):
            if n_leaves[k] != n_nodes[k] + 1:
                raise ValueError(f"trees_[{k}] has {n_nodes[k]} internal nodes and {n_leaves[k]} leaves: "
                                 "a tree has one leaf more than internal nodes")
            a, b = self.node_ptr[k], self.node_ptr[k + 1]
            check_structure(self.left[a:b], self.right[a:b], n_leaves[k], f"trees_[{k}]")
        if self.feature.size and self.feature.min() < 0:
            raise ValueError(f"trees_ has a negative split_feature {int(self.feature.min())}")
        self.n_features_used = int(self.feature.max()) + 1 if self.feature.size else 0

    def arrays(self) -> TreeArrays:
        """The prediction kernel's record of these arrays."""
        return TreeArrays(self.feature, self.threshold, self.default_left, self.left, self.right, self.leaf_value,
                          self.node_ptr, self.leaf_ptr)


_NODE_KEYS = ("split_feature", "threshold", "threshold_bin", "default_left", "left_child", "right_child")


@njit(cache=True)
def _leaf_raw(x, feature, threshold, default_left, left, right, n0, n1):
    if n1 == n0:
        return 0
    node = 0
    while True:
        v = x[feature[n0 + node]]
        if np.isnan(v):
            go_left = default_left[n0 + node]
        else:
            if abs(v) <= ZERO_THRESHOLD:
                v = 0.0
            go_left = v <= threshold[n0 + node]
        nxt = left[n0 + node] if go_left else right[n0 + node]
        if nxt < 0:
            return ~nxt
        node = nxt


@njit(cache=True, parallel=True)
def _predict_raw(X, trees, tree_col, t0, t1, out):
    """``out[i, tree_col[t]] +=`` tree ``t``'s leaf value of row ``X[i]``, trees ``t0:t1`` of ``trees``
    (:class:`TreeArrays`)."""
    feature, threshold, default_left, left, right, leaf_value, node_ptr, leaf_ptr = trees
    for i in prange(X.shape[0]):
        x = X[i]
        for t in range(t0, t1):
            leaf = _leaf_raw(x, feature, threshold, default_left, left, right, node_ptr[t], node_ptr[t + 1])
            out[i, tree_col[t]] += leaf_value[leaf_ptr[t] + leaf]


def predict_raw(X: np.ndarray, packed: PackedTrees, tree_col: np.ndarray, n_cols: int, t0: int,
                t1: int) -> np.ndarray:
    """Sum of trees ``t0:t1`` on raw float64 features; tree ``t`` adds to column ``tree_col[t]``."""
    if not 0 <= t0 <= t1 <= packed.n_trees:
        raise ValueError(f"tree range {t0}:{t1} is outside the {packed.n_trees} trees")
    if packed.n_features_used > X.shape[1]:
        raise ValueError(f"the trees split on feature {packed.n_features_used - 1} but X has {X.shape[1]} features")
    tree_col = np.asarray(tree_col, dtype=np.int64)
    if tree_col.shape != (packed.n_trees,) or (tree_col.size and not 0 <= tree_col.min() <= tree_col.max() < n_cols):
        raise ValueError(f"tree_col must give each of the {packed.n_trees} trees an output column in 0..{n_cols - 1}")
    out = np.zeros((X.shape[0], n_cols), dtype=np.float64)
    if t1 > t0:
        _predict_raw(X, packed.arrays(), tree_col, t0, t1, out)
    return out


def staged_raw(X: np.ndarray, packed: PackedTrees, tree_col: np.ndarray, n_cols: int, n_rounds: int,
               threads: ContextManager) -> Iterator[np.ndarray]:
    """The raw scores ``(n, n_cols)`` after each of ``n_rounds`` boosting rounds of ``n_cols`` trees
    (one running sum, yielded in place: copy it to keep it), each round predicted inside ``threads``."""
    acc = np.zeros((X.shape[0], n_cols))
    for it in range(n_rounds):
        with threads:
            acc += predict_raw(X, packed, tree_col, n_cols, it * n_cols, (it + 1) * n_cols)
        yield acc


@njit(cache=True)
def child_of_bin(node, b, nan_bin, tbin, default_left, left, right):
    """The child of ``node`` that a row with bin ``b`` of its feature goes to (``nan_bin``: the NaN
    bin, sent to the default side); a leaf ``l`` as ``~l`` (negative). The GPU score update
    (``cuda._scores_kernels``) walks trees with it too."""
    go_left = default_left[node] if b == nan_bin else b <= tbin[node]
    return left[node] if go_left else right[node]


@njit(cache=True, parallel=True)
def _add_tree_bins(bins, n_bins, feature, tbin, default_left, left, right, leaf_value, out):
    for i in prange(bins.shape[0]):
        if feature.shape[0] == 0:
            out[i] += leaf_value[0]
            continue
        node = 0
        while True:
            f = feature[node]
            nxt = child_of_bin(node, np.int64(bins[i, f]), n_bins[f], tbin, default_left, left, right)
            if nxt < 0:
                out[i] += leaf_value[~nxt]
                break
            node = nxt


def add_tree_bins(bins: np.ndarray, n_bins: np.ndarray, tree: Tree, out: np.ndarray) -> None:
    """``out += tree(bins)`` for binned rows (the training set); ``tree`` comes from the grower."""
    nodes = tree.nodes
    _add_tree_bins(bins, n_bins, np.ascontiguousarray(nodes["split_feature"]),
                   np.ascontiguousarray(nodes["threshold_bin"]), np.ascontiguousarray(nodes["default_left"]),
                   np.ascontiguousarray(nodes["left_child"]), np.ascontiguousarray(nodes["right_child"]),
                   np.ascontiguousarray(tree.leaves["leaf_value"]), out)
