"""customobj.ole.joint_leaves: the joint Newton step for a tree's leaf values (dense reference), and
TreeBooster(leaf_solver="joint") setting a grown tree's leaves to it."""
import numpy as np
import pytest

from customobj.ole import TreeBooster
from customobj.ole.joint_leaves import joint_leaf_values, joint_newton_step, leaf_system, rows_leaf_system

from _ole_cases import QUIET, leaf_rows, ranknet_setup, tree_dicts


def dense(leaf, grad, hess, pairs, lam, L):
    """q's gradient and matrix from the full n x n hessian, by brute force."""
    H = np.diag(hess)
    if pairs is not None:
        i, j, c = pairs
        np.add.at(H, (i, j), -c)
        np.add.at(H, (j, i), -c)
    inside = leaf >= 0
    T = np.zeros((len(leaf), L))
    T[np.nonzero(inside)[0], leaf[inside]] = 1.0
    return T.T @ grad, T.T @ H @ T + lam * np.eye(L)


@pytest.mark.parametrize("lam", [0.0, 0.7])
def test_system_and_step_match_the_dense_hessian(lam):
    rng = np.random.default_rng(0)
    n, L, m = 60, 5, 200
    leaf = rng.integers(0, L, n)
    leaf[:4] = -1  # out of bag: in no leaf, their pairs skipped
    grad, hess = rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    i = rng.integers(0, n, m)
    j = (i + rng.integers(1, n, m)) % n  # no self-pairs, as objectives produce none
    keep = (leaf[i] >= 0) & (leaf[j] >= 0)
    pairs = (i, j, rng.uniform(0, 0.05, m))
    system = rows_leaf_system(leaf, grad, hess, pairs, lam, L)
    G, A = dense(leaf, grad, hess, (i[keep], j[keep], pairs[2][keep]), lam, L)
    np.testing.assert_allclose(system.G, G, atol=1e-12)
    np.testing.assert_allclose(system.A, A, atol=1e-12)
    v = joint_leaf_values(leaf, grad, hess, pairs, lam, L)
    np.testing.assert_allclose(A @ v, -G, atol=1e-9)
    assert system.model(v) <= system.model(v + 0.01 * rng.normal(size=L))


def test_singular_system_gets_the_minimum_norm_step():
    """A pure pairwise loss: A is a graph Laplacian (constant shifts cost nothing); the step is
    the least-squares solution orthogonal to that null space, not an arbitrary shift of it."""
    leaf = np.array([0, 0, 1, 1, 2])
    pairs = (np.array([0, 1, 2, 3]), np.array([2, 3, 4, 4]), np.array([0.25, 0.25, 0.5, 0.5]))
    hess = np.array([0.25, 0.25, 0.75, 0.75, 1.0])  # each row's couplings: A's rows sum to 0
    grad = np.array([-1.0, -1.0, 0.5, 0.5, 1.0])
    v = joint_leaf_values(leaf, grad, hess, pairs, 0.0, 3)
    system = rows_leaf_system(leaf, grad, hess, pairs, 0.0, 3)
    np.testing.assert_allclose(system.A.sum(axis=1), 0.0, atol=1e-15)
    np.testing.assert_allclose(system.A @ v, -system.G, atol=1e-12)
    assert abs(v.sum()) < 1e-12  # minimum norm: no component along the constant vector
    assert np.all(np.isfinite(v))


def test_sums_form_equals_rows_form_and_pointwise_is_lightgbms():
    leaf = np.array([0, 1, 1, 2, 2, 2])
    grad, hess = np.array([1.0, -2.0, 0.5, 3.0, -1.0, 0.25]), np.ones(6)
    G, H = np.array([1.0, -1.5, 2.25]), np.array([1.0, 2.0, 3.0])
    v = joint_newton_step(G, H, leaf, None, 0.5)
    np.testing.assert_allclose(v, -G / (H + 0.5))  # diagonal: LightGBM's leaves
    np.testing.assert_allclose(joint_leaf_values(leaf, grad, hess, None, 0.5, 3), v)
    assert leaf_system(G, H, leaf, None, 0.5).model(v) == pytest.approx(-0.5 * np.sum(G ** 2 / (H + 0.5)))


def test_joint_solver_is_newton_step_on_leaf_values():
    """joint: the leaf values minimise the second-order model of the exact loss over the tree's leaves."""
    X, y, group, obj, s, g, h, pairs = ranknet_setup(14)
    lam = 0.2
    model = TreeBooster(obj, num_leaves=5, n_estimators=1, learning_rate=1.0, lambda_l2=lam, leaf_solver="joint",
                        min_data_in_leaf=5, **QUIET).fit(X, y, group, init_score=s)
    tree = tree_dicts(model)[0]
    leaf = leaf_rows(tree, X)
    P = np.eye(tree["num_leaves"])[leaf]            # rows x leaves
    Hrow = np.diag(h)
    pi, pj, pc = pairs
    np.add.at(Hrow, (pi, pj), -pc)
    np.add.at(Hrow, (pj, pi), -pc)
    A = P.T @ Hrow @ P + lam * np.eye(P.shape[1])
    v = np.linalg.solve(A, -P.T @ g)
    np.testing.assert_allclose(tree["leaf_value"], v, rtol=1e-8, atol=1e-12)
