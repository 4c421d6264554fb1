"""Checks of the tree arrays of a ``TreeBooster`` model: field types, lengths, ranges and shape.

A tree with ``L`` leaves has ``L - 1`` internal nodes, node 0 the root. ``left_child[i]`` /
``right_child[i]`` is an internal node ``c`` (``1 <= c < L - 1``) or a leaf ``~c``
(``-L <= c <= -1``, leaf ``-c - 1``), LightGBM's encoding. A valid tree reaches every node and
every leaf from the root exactly once, so a traversal ends after at most ``L - 1`` steps: that is
what makes prediction on a loaded file safe (an out-of-range index would read or write outside
the arrays; a child pointing back up would loop forever).

Every check raises ``ValueError`` whose message starts with ``"{where}{field}"``, e.g.
``"model.json: trees[3].left_child[5] = 1000000 is out of range ..."``.
"""
from __future__ import annotations

import math
from typing import Callable, NoReturn, TypeGuard
from collections.abc import Mapping

import numpy as np

from .._validation import SCORE_LIMIT

__all__ = ["INFINITE", "MAGNITUDE_LIMITS", "is_number", "is_finite_number", "NODE_FIELDS", "LEAF_FIELDS",
           "TREE_FIELDS", "check_tree", "check_structure", "tree_to_record"]

#: Per internal node: field -> kind ("int", "count" = int >= 0, "float" = finite float, "bool",
#: "threshold" = finite float or an infinite one written as a string: a feature holding -inf gives
#: the split ``x <= -inf``, which no finite threshold expresses).
NODE_FIELDS = {"split_feature": "int", "threshold_bin": "count", "threshold": "threshold", "default_left": "bool",
               "left_child": "int", "right_child": "int", "split_gain": "float", "internal_value": "float",
               "internal_weight": "float", "internal_count": "count"}
#: Per leaf.
LEAF_FIELDS = {"leaf_value": "float", "leaf_weight": "float", "leaf_count": "count"}
TREE_FIELDS = ("num_leaves",) + tuple(NODE_FIELDS) + tuple(LEAF_FIELDS)

INFINITE = {"Infinity": math.inf, "-Infinity": -math.inf}


def _threshold_to_json(v):
    v = float(v)
    return ("Infinity" if v > 0 else "-Infinity") if math.isinf(v) else v


#: Largest magnitude per float field: leaf values (Newton steps; the objectives refuse scores beyond
#: SCORE_LIMIT) so that a prediction, a sum over trees, stays finite; the others so that sums over
#: nodes (feature importances) do.
MAGNITUDE_LIMITS = {"leaf_value": SCORE_LIMIT, "internal_value": SCORE_LIMIT, "split_gain": 1e300,
                    "internal_weight": 1e300, "leaf_weight": 1e300}

_CONVERT: "dict[str, Callable[[float], object]]" = {"int": int, "count": int, "float": float, "bool": bool,
                                                     "threshold": _threshold_to_json}


def tree_to_record(tree: Mapping) -> dict:
    """A tree (a :class:`~customobj.ole.tree.Tree`, or any mapping of its fields to sequences that may
    hold numpy scalars) as plain JSON values, ``num_leaves`` first."""
    out: dict[str, object] = {"num_leaves": int(tree["num_leaves"])}
    for key, kind in {**NODE_FIELDS, **LEAF_FIELDS}.items():
        conv = _CONVERT[kind]
        out[key] = [conv(v) for v in tree[key]]
    return out


def _fail(where: str, field: str, message: str) -> NoReturn:
    raise ValueError(f"{where}{field} {message}")


def _first_index(values, ok):
    return next(i for i, v in enumerate(values) if not ok(v))


def _is_int(v):
    return type(v) is int  # bool is an int subclass: a JSON true is not a node index


def is_number(v: object) -> TypeGuard[float]:
    """A float, or an int that converts to one (10**400 would overflow); NaN and +-inf included."""
    return type(v) is float or (type(v) is int and abs(v) < 2**1023)


def is_finite_number(v: object) -> bool:
    """A finite :func:`is_number`."""
    return is_number(v) and math.isfinite(v)


def _is_bool(v):
    return type(v) is bool


def _check_list(values, kind, length, where, field, what_length):
    """Type, length and finiteness of one field; returns it as a numpy array.

    The common all-valid case runs at C speed (``map(type, ...)``, ``min``/``max``, numpy); the
    per-element predicates only locate the first bad entry for the message.
    """
    if type(values) is not list:
        _fail(where, field, f"must be a list, got {type(values).__name__}")
    if len(values) != length:
        _fail(where, field, f"has {len(values)} entries but must have {length} ({what_length})")
    types = set(map(type, values))
    if kind in ("int", "count"):
        if not types <= {int}:
            i = _first_index(values, _is_int)
            _fail(where, f"{field}[{i}]", f"= {values[i]!r} must be an integer")
        lo = 0 if kind == "count" else -2**62
        if values and (min(values) < lo or max(values) >= 2**62):
            i = _first_index(values, lambda v: lo <= v < 2**62)
            want = "a non-negative integer" if kind == "count" else "an integer of magnitude < 2**62"
            _fail(where, f"{field}[{i}]", f"= {values[i]!r} must be {want}")
        return np.asarray(values, dtype=np.int64)
    if kind == "bool":
        if not types <= {bool}:
            i = _first_index(values, _is_bool)
            _fail(where, f"{field}[{i}]", f"= {values[i]!r} must be true or false")
        return np.asarray(values, dtype=np.bool_)
    if kind == "threshold":
        if str in types:
            values = [INFINITE.get(v, v) if type(v) is str else v for v in values]
            types = set(map(type, values))
        ok, want = (lambda v: is_number(v) and not math.isnan(v)), "a number, 'Infinity' or '-Infinity'"
    else:
        ok, want = is_finite_number, "a finite number"
    arr = None
    if types <= {float, int} and (int not in types or all(map(is_number, values))):
        arr = np.asarray(values, dtype=np.float64)
        good = ~np.isnan(arr) if kind == "threshold" else np.isfinite(arr)
        if not good.all():
            arr = None
    if arr is None:
        i = _first_index(values, ok)
        _fail(where, f"{field}[{i}]", f"= {values[i]!r} must be {want}")
    return arr


def check_structure(left: np.ndarray, right: np.ndarray, n_leaves: int, where: str) -> None:
    """Child indices in range, and every node and leaf reached from the root exactly once.

    Vectorised (no Python loop over nodes): in-degrees by ``bincount``, then reachability by
    pointer jumping over the parent links, ``log2(nodes)`` steps.
    """
    n_nodes = n_leaves - 1
    for field, child in (("left_child", left), ("right_child", right)):
        bad = np.flatnonzero((child == 0) | (child >= n_nodes) | (child < -n_leaves))
        if bad.size:
            i = int(bad[0])
            what = "points back to the root" if child[i] == 0 else "is out of range"
            nodes = f"1..{n_nodes - 1} or " if n_nodes > 1 else ""
            _fail(where, f".{field}[{i}]", f"= {int(child[i])} {what} (tree has {n_nodes} internal nodes and "
                  f"{n_leaves} leaves: children are {nodes}-1..-{n_leaves})")
    if n_nodes == 0:
        return
    children = np.concatenate([left, right])
    parents = np.concatenate([np.arange(n_nodes), np.arange(n_nodes)])
    is_node = children >= 0
    node_refs = np.bincount(children[is_node], minlength=n_nodes)
    leaf_refs = np.bincount(~children[~is_node], minlength=n_leaves)
    for what, refs, first in (("node", node_refs, 1), ("leaf", leaf_refs, 0)):
        bad = np.flatnonzero(refs[first:] != 1)
        if bad.size:
            k = int(bad[0]) + first
            how = "is not the child of any node" if refs[k] == 0 else f"is the child of {int(refs[k])} nodes"
            _fail(where, "", f"has {what} {k} that {how}: every node and leaf must be reached exactly once")
    parent = np.zeros(n_nodes, dtype=np.int64)  # the root is its own parent
    parent[children[is_node]] = parents[is_node]
    for _ in range(max(1, int(n_nodes).bit_length())):
        parent = parent[parent]
    cut_off = np.flatnonzero(parent != 0)
    if cut_off.size:
        _fail(where, "", f"has node {int(cut_off[0])} in a cycle that the root does not reach")


def check_tree(tree: object, where: str, n_features: int) -> dict:
    """Validate one tree record (a dict of JSON values); ``where`` like ``"model.json: trees[3]"``.

    Returns the record with numpy arrays for the node and leaf fields.
    """
    if not isinstance(tree, dict) or type(tree) is not dict:  # isinstance narrows tree for the checker
        _fail(where, "", f"must be an object, got {type(tree).__name__}")
    missing = [k for k in TREE_FIELDS if k not in tree]
    if missing:
        _fail(where, "", f"is missing the field {missing[0]!r}")
    extra = sorted(set(tree) - set(TREE_FIELDS))
    if extra:
        _fail(where, "", f"has an unknown field {extra[0]!r}")
    L = tree["num_leaves"]
    if not _is_int(L) or not 1 <= L < 2**31:
        _fail(where, ".num_leaves", f"= {L!r} must be an integer >= 1")
    out = {"num_leaves": L}
    for key, kind in NODE_FIELDS.items():
        out[key] = _check_list(tree[key], kind, L - 1, where, f".{key}", "num_leaves - 1")
    for key, kind in LEAF_FIELDS.items():
        out[key] = _check_list(tree[key], kind, L, where, f".{key}", "num_leaves")
    for key, limit in MAGNITUDE_LIMITS.items():
        big = np.flatnonzero(np.abs(out[key]) > limit)
        if big.size:
            i = int(big[0])
            _fail(where, f".{key}[{i}]", f"= {float(out[key][i])!r} exceeds {limit:g} in magnitude "
                  "(sums of such values would overflow)")
    feat = out["split_feature"]
    bad = np.flatnonzero((feat < 0) | (feat >= n_features))
    if bad.size:
        i = int(bad[0])
        _fail(where, f".split_feature[{i}]", f"= {int(feat[i])} is out of range (the model has {n_features} "
              f"features: 0..{n_features - 1})")
    check_structure(out["left_child"], out["right_child"], L, where)
    return out
