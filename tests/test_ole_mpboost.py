"""OLE + joint leaf solver reproduces MPBoost's GentleBoost stump (Zhu et al. 2009, appendix)."""
import json

import numpy as np
import pytest

from customobj.objectives import MPBoost
from customobj.ole import TreeBooster


def gentleboost_stump(X, y, sizes, F):
    """Brute force of the appendix: every feature k and threshold theta in {x_{i,k}}; r_d(x) = a if x_k > theta.

    BINARY distance: every pair (i, j) of a query with y_i > y_j, D = 1, weight w = exp(-(F_i - F_j)).
    Returns (k, theta, a) minimising J_wse.
    """
    pi, pj = [], []
    start = 0
    for m in sizes:
        for a in range(start, start + m):
            for b in range(start, start + m):
                if y[a] > y[b]:
                    pi.append(a)
                    pj.append(b)
        start += m
    pi, pj = np.array(pi), np.array(pj)
    D = 1.0
    w = np.exp(-D * (F[pi] - F[pj]))
    best = None
    for k in range(X.shape[1]):
        for theta in np.unique(X[:, k]):
            up_i, up_j = X[pi, k] > theta, X[pj, k] > theta
            A1 = up_i & ~up_j
            B2 = ~up_i & up_j
            den = w[A1].sum() + w[B2].sum()
            if den == 0:
                continue
            a = (w[A1].sum() * D - w[B2].sum() * D) / den
            J = (w[A1] * (D - a) ** 2).sum() + (w[~A1 & ~B2] * D**2).sum() + (w[B2] * (D + a) ** 2).sum()
            if best is None or J < best[0] - 1e-12:
                best = (J, k, theta, a)
    return best[1:]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_joint_ole_stump_is_gentleboost_stump(seed):
    rng = np.random.default_rng(seed)
    sizes = [12, 9, 15, 10]
    n = sum(sizes)
    X = np.round(rng.normal(size=(n, 3)), 2)
    y = rng.integers(0, 3, n).astype(float)
    F = rng.normal(scale=0.5, size=n)  # current model: non-uniform pair weights w_ij
    k, theta, a = gentleboost_stump(X, y, sizes, F)

    def stump(solver):
        model = TreeBooster(MPBoost(ddf="binary"), criterion="ole", leaf_solver=solver, num_leaves=2,
                            learning_rate=1.0, n_estimators=1, min_data_in_leaf=1, min_sum_hessian_in_leaf=0.0,
                            verbose=False).fit(X, y, sizes, init_score=F)
        return json.loads(model.to_json())["trees"][0]

    t = stump("joint")
    assert t["split_feature"] == [k]
    # same partition of the data: x <= threshold goes left exactly when x <= theta
    col = X[:, k]
    np.testing.assert_array_equal(col <= t["threshold"][0], col <= theta)
    left, right = t["leaf_value"]
    assert right - left == pytest.approx(a, rel=1e-9)
    # diagonal solver: each leaf takes its own Newton step, the difference doubles
    d = stump("diagonal")
    assert d["split_feature"] == [k] and d["threshold"] == t["threshold"]
    assert d["leaf_value"][1] - d["leaf_value"][0] == pytest.approx(2 * a, rel=1e-9)
