"""The joint Newton step for all leaf values of one tree (Xia, Zhai, Wang, "Analysis of regression tree
fitting algorithms in learning to rank", section 3.1: the second-order loss expansion with pair couplings).

Shared by :class:`customobj.ole.TreeBooster` (``leaf_solver="joint"``) and
:class:`customobj.adapters.callbacks.ExactLeaves`: given which leaf every row falls in, the
gradient, the diagonal hessian and the pair couplings ``c_ij`` (the loss hessian is
``diag(h) - sum_pairs c_ij (e_i e_j' + e_j e_i')``), the second-order model of the loss in the leaf
values ``v`` is ``q(v) = G'v + v'Av / 2`` with

.. math::

    A_{aa} = \\sum_{i \\in a} h_i - 2 \\sum_{(i,j) \\subset a} c_{ij} + \\lambda, \\qquad
    A_{ab} = -\\sum_{i \\in a, j \\in b \\text{ or } i \\in b, j \\in a} c_{ij},

and the step is the minimum-norm solution of ``A v = -G`` (least squares where ``A`` is singular:
a pairwise loss does not move when every leaf shifts by the same constant).

Pure linear algebra on plain arrays; the callers validate their inputs.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["RCOND", "LeafSystem", "leaf_coupling_matrix", "leaf_system", "joint_newton_step", "rows_leaf_system",
           "joint_leaf_values"]

#: Singular values below ``RCOND`` times the largest are treated as zero (the minimum-norm solve).
RCOND = 1e-10


@njit(cache=True)
def leaf_coupling_matrix(leaf_of_row, pi, pj, pc, n_leaves, out):
    """``out[a, b]`` += pair couplings between leaves ``a`` and ``b`` (each pair counted in both
    orders, so a pair inside leaf ``a`` adds ``2 c`` to ``out[a, a]``); pairs with a row outside
    every leaf (``leaf_of_row < 0``: out of bag) are skipped."""
    for k in range(pi.shape[0]):
        a = leaf_of_row[pi[k]]
        b = leaf_of_row[pj[k]]
        if a < 0 or b < 0 or a >= n_leaves or b >= n_leaves:
            continue
        out[a, b] += pc[k]
        out[b, a] += pc[k]


class LeafSystem(NamedTuple):
    """The quadratic model ``q(v) = G'v + v'Av / 2`` of one tree's leaf values."""

    G: np.ndarray  # per-leaf gradient sums
    A: np.ndarray  # (leaves, leaves): diagonal hessians minus couplings, plus lambda_l2 on the diagonal

    def solve(self) -> np.ndarray:
        """The minimum-norm ``v`` with ``A v = -G`` (least squares where ``A`` is singular)."""
        v, *_ = np.linalg.lstsq(self.A, -self.G, rcond=RCOND)
        return v

    def model(self, v: np.ndarray) -> float:
        """``q(v)``: the second-order change of the L2-penalised loss when leaf ``a`` moves by ``v[a]``."""
        v = np.asarray(v, dtype=np.float64)
        return float(self.G @ v + 0.5 * v @ self.A @ v)


def leaf_system(G: np.ndarray, H: np.ndarray, leaf_of_row: np.ndarray, pairs: tuple | None,
                lambda_l2: float) -> LeafSystem:
    """The :class:`LeafSystem` from per-leaf sums ``G``, ``H`` (float64, one per leaf).

    Parameters
    ----------
    G, H : per-leaf sums of the gradient and of the diagonal hessian.
    leaf_of_row : leaf of each row (``-1``: in no leaf), indexed by the pair rows.
    pairs : ``(i, j, c)`` row pairs and couplings, or None for a pointwise loss.
    lambda_l2 : L2 penalty on the leaf values (LightGBM's ``lambda_l2``).
    """
    G = np.asarray(G, dtype=np.float64)
    L = G.shape[0]
    A = np.diag(np.asarray(H, dtype=np.float64))
    if pairs is not None and len(pairs[0]) > 0:
        M = np.zeros((L, L))
        leaf_coupling_matrix(leaf_of_row, pairs[0], pairs[1], np.asarray(pairs[2], dtype=np.float64), L, M)
        A -= M
    A += lambda_l2 * np.eye(L)
    return LeafSystem(G, A)


def joint_newton_step(G: np.ndarray, H: np.ndarray, leaf_of_row: np.ndarray, pairs: tuple | None,
                      lambda_l2: float) -> np.ndarray:
    """Leaf values ``v`` (float64, one per leaf) solving ``A v = -G`` in the minimum-norm sense
    (arguments as in :func:`leaf_system`).

    Examples
    --------
    >>> import numpy as np
    >>> leaf = np.array([0, 0, 1, 1])
    >>> pairs = (np.array([0, 1]), np.array([2, 3]), np.array([0.25, 0.25]))
    >>> v = joint_newton_step(np.array([-0.5, 0.5]), np.array([0.5, 0.5]), leaf, pairs, 0.0)
    >>> bool(np.allclose(v, [0.5, -0.5]))
    True
    """
    return leaf_system(G, H, leaf_of_row, pairs, lambda_l2).solve()


@njit(cache=True)
def _leaf_sums(leaf_of_row, grad, hess, G, H):
    """``G[a]``, ``H[a]`` += the gradients and hessians of leaf ``a``'s rows, in row order (the bits
    of ``np.bincount``, in one pass for both); rows in no leaf (``-1``) are skipped."""
    n_leaves = G.shape[0]
    for r in range(leaf_of_row.shape[0]):
        a = leaf_of_row[r]
        if 0 <= a < n_leaves:
            G[a] += grad[r]
            H[a] += hess[r]


def rows_leaf_system(leaf_of_row: np.ndarray, grad: np.ndarray, hess: np.ndarray, pairs: tuple | None,
                     lambda_l2: float, n_leaves: int) -> LeafSystem:
    """:func:`leaf_system` from per-row arrays: ``G`` and ``H`` are summed over each leaf's rows.

    ``leaf_of_row`` (int64, ``-1`` for rows in no leaf), ``grad``, ``hess`` (float64) have one entry
    per row; ``pairs`` as in :func:`leaf_system`.
    """
    G, H = np.zeros(n_leaves), np.zeros(n_leaves)
    _leaf_sums(leaf_of_row, grad, hess, G, H)
    return leaf_system(G, H, leaf_of_row, pairs, lambda_l2)


def joint_leaf_values(leaf_of_row: np.ndarray, grad: np.ndarray, hess: np.ndarray, pairs: tuple | None,
                      lambda_l2: float, n_leaves: int) -> np.ndarray:
    """The joint Newton step from per-row arrays (see :func:`rows_leaf_system`).

    Examples
    --------
    >>> import numpy as np
    >>> v = joint_leaf_values(np.array([0, 0, 1]), np.array([1.0, 1.0, -2.0]), np.ones(3), None, 1.0, 2)
    >>> bool(np.allclose(v, [-2 / 3, 1.0]))
    True
    """
    return rows_leaf_system(leaf_of_row, grad, hess, pairs, lambda_l2, n_leaves).solve()
