"""Oracles shared by test modules: finite differences (the objective tests), the rows reaching
each node of a tree (the OLE tests) and query ids of contiguous queries (the Dask tests).

Central differences ``(f(s + h e) - f(s - h e)) / 2h`` along each score entry; every helper takes
plain functions of the scores, so a test states its data once:
``fd_grad(lambda z: obj.loss(z, y, group), s)``. Imported as ``from _oracles import fd_grad``
(pytest puts ``tests/`` on the path, as for ``_isolated``).
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def fd_grad(f: Callable[[np.ndarray], float], s: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Gradient of the scalar ``f`` at ``s`` (any shape), entry by entry."""
    g = np.empty_like(s)
    for idx in np.ndindex(s.shape):
        e = np.zeros_like(s)
        e[idx] = h
        g[idx] = (f(s + e) - f(s - e)) / (2 * h)
    return g


def fd_diag(g: Callable[[np.ndarray], np.ndarray], s: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Diagonal of the Jacobian of the vector function ``g`` (the hessian diagonal when ``g`` is a
    gradient): entry ``idx`` is the derivative of ``g(s)[idx]`` along ``s[idx]``."""
    out = np.empty_like(s)
    for idx in np.ndindex(s.shape):
        e = np.zeros_like(s)
        e[idx] = h
        out[idx] = (g(s + e)[idx] - g(s - e)[idx]) / (2 * h)
    return out


def fd_jacobian(g: Callable[[np.ndarray], np.ndarray], s: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Full Jacobian ``J[:, t] = d g / d s_t`` of a vector function of 1-D scores."""
    n = s.size
    jac = np.zeros((n, n))
    for t in range(n):
        e = np.zeros(n)
        e[t] = h
        jac[:, t] = (g(s + e) - g(s - e)) / (2 * h)
    return jac


def node_rows(tree, X):
    """Rows reaching each internal node (traversing with real thresholds and default_left)."""
    out = {}

    def walk(node, rows):
        out[node] = rows
        f, thr, dl = tree["split_feature"][node], tree["threshold"][node], tree["default_left"][node]
        x = X[rows, f]
        left = np.where(np.isnan(x), dl, x <= thr)
        for child, part in ((tree["left_child"][node], rows[left]), (tree["right_child"][node], rows[~left])):
            if child >= 0:
                walk(child, part)
    if tree["num_leaves"] > 1:
        walk(0, np.arange(X.shape[0]))
    return out


def sizes_to_qid(sizes, ids=None) -> np.ndarray:
    """Per-row query ids of contiguous queries of ``sizes`` rows (ids ``0, 1, ...`` unless given)."""
    ids = np.arange(len(sizes)) if ids is None else np.asarray(ids)
    return np.repeat(ids, sizes)
