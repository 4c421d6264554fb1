"""Tree traversal: on raw features (``x <= threshold`` left, NaN -> default side, as LightGBM)
and on bins (training-set score updates). All trees are packed in flat arrays."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["PackedTrees", "predict_raw", "add_tree_bins"]


class PackedTrees:
    """Node and leaf arrays of many trees, concatenated; ``node_ptr``/``leaf_ptr`` delimit trees."""

    def __init__(self, trees):
        self.n_trees = len(trees)
        n_nodes = [len(t["split_feature"]) for t in trees]
        n_leaves = [len(t["leaf_value"]) for t in trees]
        self.node_ptr = np.zeros(len(trees) + 1, np.int64)
        np.cumsum(n_nodes, out=self.node_ptr[1:])
        self.leaf_ptr = np.zeros(len(trees) + 1, np.int64)
        np.cumsum(n_leaves, out=self.leaf_ptr[1:])

        def cat(key, dtype):
            parts = [np.asarray(t[key], dtype=dtype) for t in trees]
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        self.feature = cat("split_feature", np.int64)
        self.threshold = cat("threshold", np.float64)
        self.threshold_bin = cat("threshold_bin", np.int64)
        self.default_left = cat("default_left", np.bool_)
        self.left = cat("left_child", np.int64)
        self.right = cat("right_child", np.int64)
        self.leaf_value = cat("leaf_value", np.float64)


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
            go_left = v <= threshold[n0 + node]
        nxt = left[n0 + node] if go_left else right[n0 + node]
        if nxt < 0:
            return ~nxt
        node = nxt


@njit(cache=True, parallel=True)
def _predict_raw(X, feature, threshold, default_left, left, right, leaf_value, node_ptr, leaf_ptr,
                 tree_col, t0, t1, out):
    for i in prange(X.shape[0]):
        x = X[i]
        for t in range(t0, t1):
            leaf = _leaf_raw(x, feature, threshold, default_left, left, right, node_ptr[t], node_ptr[t + 1])
            out[i, tree_col[t]] += leaf_value[leaf_ptr[t] + leaf]


def predict_raw(X, packed, tree_col, n_cols, t0, t1):
    """Sum of trees ``t0:t1`` on raw float64 features; tree ``t`` adds to column ``tree_col[t]``."""
    out = np.zeros((X.shape[0], n_cols), dtype=np.float64)
    if t1 > t0:
        _predict_raw(X, packed.feature, packed.threshold, packed.default_left, packed.left, packed.right,
                     packed.leaf_value, packed.node_ptr, packed.leaf_ptr, tree_col, t0, t1, out)
    return out


@njit(cache=True, parallel=True)
def _add_tree_bins(bins, n_bins, feature, tbin, default_left, left, right, leaf_value, out):
    for i in prange(bins.shape[0]):
        if feature.shape[0] == 0:
            out[i] += leaf_value[0]
            continue
        node = 0
        while True:
            f = feature[node]
            b = np.int64(bins[i, f])
            if b == n_bins[f]:
                go_left = default_left[node]
            else:
                go_left = b <= tbin[node]
            nxt = left[node] if go_left else right[node]
            if nxt < 0:
                out[i] += leaf_value[~nxt]
                break
            node = nxt


def add_tree_bins(bins, n_bins, tree, out):
    """``out += tree(bins)`` for binned rows (the training set)."""
    _add_tree_bins(bins, n_bins, np.asarray(tree["split_feature"], np.int64),
                   np.asarray(tree["threshold_bin"], np.int64), np.asarray(tree["default_left"], np.bool_),
                   np.asarray(tree["left_child"], np.int64), np.asarray(tree["right_child"], np.int64),
                   np.asarray(tree["leaf_value"], np.float64), out)
