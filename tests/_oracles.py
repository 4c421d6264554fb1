"""Oracles shared by test modules: finite differences (the objective tests), the slow NumPy
reference of the pairwise losses (loss, gradient, hessian and couplings pair by pair), the rows
reaching each node of a tree (the OLE tests) and query ids of contiguous queries (the Dask tests).

Central differences ``(f(s + h e) - f(s - h e)) / 2h`` along each score entry; every helper takes
plain functions of the scores, so a test states its data once:
``fd_grad(lambda z: obj.loss(z, y, group), s)``. Imported as ``from _oracles import fd_grad``
(pytest puts ``tests/`` on the path, as for ``_isolated``).
"""
from __future__ import annotations

from typing import Callable

import math

import numpy as np

from customobj.objectives import MPBoost, PreferencePairs, QBRank, RankNet, RankSVM

from _objective_cases import LABELS, PTR


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


# --- the pairwise losses, pair by pair -------------------------------------------------------------
def ref_label_pairs(labels, ptr):
    out = []
    for q in range(ptr.size - 1):
        for i in range(ptr[q], ptr[q + 1]):
            for j in range(ptr[q], ptr[q + 1]):
                if labels[i] > labels[j]:
                    out.append((i, j))
    return out


def phi_ranknet(d, sigma):
    z = -sigma * d
    val = max(z, 0.0) + math.log1p(math.exp(-abs(z)))
    rho = 1.0 / (1.0 + math.exp(sigma * d)) if sigma * d < 700 else 0.0
    return val, -sigma * rho, sigma * sigma * rho * (1.0 - rho)


def phi_sqhinge(d, tau, scale):
    m = max(0.0, tau - d)
    return scale * m * m, -2.0 * scale * m, 2.0 * scale * (1.0 if d < tau else 0.0)


def phi_exp(d, D):
    e = math.exp(-D * d)
    return e, -D * e, D * D * e


DDF_REF = {
    "binary": lambda diff, o: 1.0,
    "ldd": lambda diff, o: o.alpha * diff,
    "logdd": lambda diff, o: math.log(1.0 + o.lam * abs(diff)),
    "logitdd": lambda diff, o: 1.0 / (1.0 + math.exp(-o.beta * abs(diff))),
}


def ref_terms(obj, pairs_with_theta, scores, weight, n):
    """Slow loss / grad / hess / couplings from an explicit list of (i, j, phi-function)."""
    loss, grad, hess, coup = 0.0, np.zeros(n), np.zeros(n), []
    for i, j, fn in pairs_with_theta:
        v = 1.0 if weight is None else 0.5 * (weight[i] + weight[j])
        val, a, c = fn(scores[i] - scores[j])
        loss += v * val
        grad[i] += v * a
        grad[j] -= v * a
        hess[i] += v * c
        hess[j] += v * c
        coup.append((i, j, v * c))
    return loss, grad, hess, coup


def pairwise_reference(obj, scores, labels=LABELS, ptr=PTR, weight=None):
    """Loss, gradient, hessian diagonal and couplings of a pairwise objective, pair by pair."""
    n = labels.size
    lp = ref_label_pairs(labels, ptr)
    if isinstance(obj, RankNet):
        items = [(i, j, lambda d: phi_ranknet(d, obj.sigma)) for i, j in lp]
    elif isinstance(obj, RankSVM):
        items = [(i, j, lambda d: phi_sqhinge(d, obj.margin, 1.0)) for i, j in lp]
    elif isinstance(obj, MPBoost):
        items = [(i, j, (lambda D: lambda d: phi_exp(d, D))(DDF_REF[obj.ddf](labels[i] - labels[j], obj)))
                 for i, j in lp]
    elif isinstance(obj, PreferencePairs):
        pw = np.ones(len(obj.pairs)) if obj.weight is None else obj.weight
        items = [(i, j, (lambda v: lambda d: tuple(v * t for t in phi_sqhinge(d, obj.margin, 0.5)))(pw[k]))
                 for k, (i, j) in enumerate(obj.pairs)]
    elif isinstance(obj, QBRank):
        items = []
        grade = obj.margin == "grade"
        use_lp = obj.pairs is None if obj.label_pairs is None else obj.label_pairs
        if use_lp:
            for i, j in lp:
                tau = labels[i] - labels[j] if grade else obj.margin
                items.append((i, j, (lambda t: lambda d: phi_sqhinge(d, t, 0.5 * obj.w))(tau)))
        if obj.pairs is not None:
            tau = 1.0 if grade else obj.margin
            items += [(i, j, lambda d: phi_sqhinge(d, tau, 0.5 * obj.w)) for i, j in obj.pairs]
        loss, grad, hess, coup = ref_terms(obj, items, scores, weight, n)
        mask = qbrank_mask(obj, labels, ptr)
        rw = np.ones(n) if weight is None else weight
        for z in np.flatnonzero(mask):
            loss += (1 - obj.w) * rw[z] * 0.5 * (labels[z] - scores[z]) ** 2
            grad[z] += (1 - obj.w) * rw[z] * (scores[z] - labels[z])
            hess[z] += (1 - obj.w) * rw[z]
        return loss, grad, hess, coup
    else:
        raise AssertionError(obj)
    return ref_terms(obj, items, scores, weight, n)


def qbrank_mask(obj, labels, ptr):
    if not isinstance(obj.labeled, str):
        return obj.labeled
    if obj.labeled == "all":
        return np.ones(labels.size, bool)
    if obj.labeled == "none":
        return np.zeros(labels.size, bool)
    mask = np.zeros(labels.size, bool)
    for q in range(ptr.size - 1):
        lab = labels[ptr[q]:ptr[q + 1]]
        if lab.size and np.all(lab == lab[0]):
            mask[ptr[q]:ptr[q + 1]] = True
    return mask


def gradients(kind, m, rng, n=30):
    """``m`` random per-label gradients of ``n`` rows, the second made degenerate by ``kind``: "parallel"
    (2.5 times the first), "opposite", "zero", anything else left random (the multi-objective solvers'
    degenerate Gram matrices)."""
    g = rng.normal(size=(m, n))
    if kind == "parallel":
        g[1] = 2.5 * g[0]
    elif kind == "opposite":
        g[1] = -g[0]
    elif kind == "zero":
        g[1] = 0.0
    return g
