"""One fitted tree as two record arrays: its internal nodes and its leaves (as scikit-learn's
``PREDICTOR_RECORD_DTYPE``), in LightGBM's layout.

A tree with ``L`` leaves has ``L - 1`` internal nodes, node 0 the root; ``left_child`` /
``right_child`` hold an internal node ``c >= 1`` or a leaf ``~c`` (LightGBM's encoding). The field
names are those of the model file (:mod:`customobj.ole.tree_schema`), so a :class:`Tree` also reads
as a mapping ``tree["threshold"]`` of those names; model files convert at save and load only.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Iterator, Sequence

import numpy as np

__all__ = ["NODE_DTYPE", "LEAF_DTYPE", "Tree", "feature_importances"]

#: One internal node: the split (feature, threshold bin and raw threshold, the side of NaN), the
#: children, and LightGBM's node statistics (gain, value ``-G / (D + lambda)`` times the learning
#: rate, hessian sum, row count).
NODE_DTYPE = np.dtype([("split_feature", np.int64), ("threshold_bin", np.int64), ("threshold", np.float64),
                       ("default_left", np.bool_), ("left_child", np.int64), ("right_child", np.int64),
                       ("split_gain", np.float64), ("internal_value", np.float64),
                       ("internal_weight", np.float64), ("internal_count", np.int64)])
#: One leaf: its value (times the learning rate), hessian sum and row count.
LEAF_DTYPE = np.dtype([("leaf_value", np.float64), ("leaf_weight", np.float64), ("leaf_count", np.int64)])
#: The field names (a structured dtype's ``names`` is typed optional; these two always have fields).
_NODE_FIELDS: tuple[str, ...] = NODE_DTYPE.names or ()
_LEAF_FIELDS: tuple[str, ...] = LEAF_DTYPE.names or ()
_FIELDS = ("num_leaves",) + _NODE_FIELDS + _LEAF_FIELDS


class Tree(Mapping):
    """A tree: ``nodes`` (``NODE_DTYPE``, one per internal node) and ``leaves`` (``LEAF_DTYPE``).

    ``tree[name]`` is ``num_leaves`` or the field ``name`` of ``nodes`` / ``leaves`` (a view:
    writing into it edits the tree). Nothing is checked here: the predictor and the model-file
    writer check every tree before use.

    Examples
    --------
    >>> t = Tree.from_fields({"split_feature": [0], "threshold_bin": [3], "threshold": [0.5],
    ...     "default_left": [False], "left_child": [-1], "right_child": [-2], "split_gain": [1.0],
    ...     "internal_value": [0.0], "internal_weight": [4.0], "internal_count": [8],
    ...     "leaf_value": [-0.1, 0.1], "leaf_weight": [2.0, 2.0], "leaf_count": [4, 4]})
    >>> t["num_leaves"], t["threshold"].tolist(), t.leaves["leaf_value"].tolist()
    (2, [0.5], [-0.1, 0.1])
    """
    __slots__ = ("nodes", "leaves")

    def __init__(self, nodes: np.ndarray, leaves: np.ndarray) -> None:
        self.nodes = nodes
        self.leaves = leaves

    @classmethod
    def from_fields(cls, fields: Mapping) -> "Tree":
        """A tree from a mapping of every node and leaf field to a sequence (e.g. a checked model-file record)."""
        nodes = np.zeros(len(fields["split_feature"]), dtype=NODE_DTYPE)
        for name in _NODE_FIELDS:
            nodes[name] = fields[name]
        leaves = np.zeros(len(fields["leaf_value"]), dtype=LEAF_DTYPE)
        for name in _LEAF_FIELDS:
            leaves[name] = fields[name]
        return cls(nodes, leaves)

    @property
    def num_leaves(self) -> int:
        return int(self.leaves.shape[0])

    def __getitem__(self, name: str):
        if name == "num_leaves":
            return self.num_leaves
        if name in _NODE_FIELDS:
            return self.nodes[name]
        if name in _LEAF_FIELDS:
            return self.leaves[name]
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(_FIELDS)

    def __len__(self) -> int:
        return len(_FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return np.array_equal(self.nodes, other.nodes) and np.array_equal(self.leaves, other.leaves)

    __hash__ = None  # type: ignore[assignment]  # mutable, so unhashable (object.__hash__ is typed a method)

    def __repr__(self) -> str:
        return f"Tree(num_leaves={self.num_leaves})"


def feature_importances(trees: Sequence, n_features: int, importance_type: str) -> np.ndarray:
    """Per feature over ``trees``: its number of splits (``importance_type="split"``, int64) or its
    total split gain (``"gain"``); ``ValueError`` for another type."""
    if importance_type not in ("split", "gain"):
        raise ValueError(f"importance_type must be 'split' or 'gain', got {importance_type!r}")
    split = importance_type == "split"
    imp = np.zeros(n_features)
    for t in trees:
        f = np.asarray(t["split_feature"], dtype=np.int64)
        w = np.ones(f.size) if split else np.asarray(t["split_gain"], dtype=np.float64)
        np.add.at(imp, f, w)
    return imp.astype(np.int64) if split else imp
