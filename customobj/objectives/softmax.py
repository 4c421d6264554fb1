"""Listwise softmax cross-entropy: ListNet (Cao et al. 2007; rax's ``softmax_loss``) and CatBoost's
``QuerySoftMax``; the shared machinery XENDCG (``xendcg.py``) builds on.

Each query's scores become a distribution ``p = softmax(beta s)`` and the loss is the cross-entropy
``-sum_i m_i log p_i`` against target masses ``m`` (kernels: ``_listwise_kernels.py``). The exact
hessian ``beta^2 M (diag(p) - p p^T)`` is a sum of pair terms, so these objectives are pairwise:
:meth:`pair_couplings` lists every pair of a contributing query with ``h_ij = beta^2 M p_i p_j``
(``n (n - 1) / 2`` pairs per query, within the pair budget ``MAX_PAIRS``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._validation import check_positive
from ._arrays import kernel_weights, query_sums
from ._query_arrays import dense_couplings, query_weights
from .base import DeviceRoute, Objective, Prepared
from . import _listwise_kernels as QK

__all__ = ["ListNet", "QuerySoftMax"]


class _Targets(NamedTuple):
    """What one round's softmax cross-entropy needs: masses ``m``, softmax weights ``v``, ``beta``."""

    mass: np.ndarray
    vw: np.ndarray
    use_vw: bool
    beta: float


class SoftmaxCrossEntropy(Objective):
    """Base of the softmax losses: subclasses give the round's :class:`_Targets` (``_targets``)."""

    pairwise = True
    needs_group = True

    def device_route(self) -> DeviceRoute:
        from . import _listwise_route as LR

        return DeviceRoute(LR.softmax, LR.softmax_couplings, LR.softmax_loss)

    def _targets(self, scores, prep, state, new_round):  # pragma: no cover - abstract
        raise NotImplementedError

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        m = self._targets(scores, prep, state, True)
        QK.softmax_ce_grad_hess(scores, prep.ptr, m.mass, m.vw, m.use_vw, m.beta, out_grad, out_hess)

    def _loss(self, scores, prep, state):
        m = self._targets(scores, prep, state, False)
        return QK.softmax_ce_loss(scores, prep.ptr, m.mass, m.vw, m.use_vw, m.beta)

    def _pair_couplings(self, scores, prep, state):
        m = self._targets(scores, prep, state, False)
        p = np.zeros(scores.shape[0])
        qscale = np.zeros(prep.groups.n_groups)
        QK.softmax_probs(scores, prep.ptr, m.mass, m.vw, m.use_vw, m.beta, p, qscale)
        return dense_couplings(prep.ptr, p, qscale, f"{type(self).__name__} couplings")


class ListNet(SoftmaxCrossEntropy):
    """ListNet's top-one cross-entropy (Cao et al. 2007, sec. 4), as rax's ``softmax_loss``.

    Per query with ``sum_i y_i > 0``, target ``t_i = y_i / sum_j y_j`` and ``p = softmax(s)``:

    .. math:: L = \\sum_q w_q \\Big(-\\sum_i t_i \\log p_i\\Big), \\qquad
              g_i = w_q (p_i - t_i), \\qquad h_i = w_q p_i (1 - p_i)

    with ``w_q`` the query's mean row weight; couplings ``h_ij = w_q p_i p_j`` (the exact hessian
    ``w_q (diag(p) - p p^T)``). On an unweighted query with a positive label the value is rax's
    ``softmax_loss`` of that list. Queries whose labels are all 0 have no target distribution and
    contribute nothing, nor do one-row queries.

    Examples
    --------
    >>> import customobj
    >>> g, h = customobj.ListNet().grad_hess([0.0, 0.0], [1.0, 0.0], group=[2])
    >>> g.tolist(), h.tolist()
    ([-0.5, 0.5], [0.25, 0.25])
    """

    def __init__(self) -> None:
        pass

    def _state(self, prep):
        y = prep.labels
        sizes = prep.groups.sizes
        totals = query_sums(sizes, y)
        scale = np.divide(query_weights(prep), totals, out=np.zeros(sizes.size), where=totals > 0)
        mass = np.ascontiguousarray(y * np.repeat(scale, sizes), dtype=np.float64)
        return _Targets(mass=mass, vw=np.zeros(0), use_vw=False, beta=1.0)

    def _targets(self, scores, prep, state, new_round):
        return state


class QuerySoftMax(SoftmaxCrossEntropy):
    """CatBoost's ``QuerySoftMax`` (CatBoost documentation, "Ranking: objectives and metrics";
    ``TQuerySoftMaxError`` in ``catboost/private/libs/algo_helpers/error_functions.h``).

    .. math:: L = -\\sum_q \\sum_{i \\in q,\\, y_i > 0} w_i y_i
              \\log \\frac{w_i e^{\\beta s_i}}{\\sum_{j \\in q} w_j e^{\\beta s_j}}

    so ``g_i = beta (S p_i - w_i y_i [y_i > 0])`` with ``S = sum_{j: y_j > 0} w_j y_j`` and ``p`` the
    weighted softmax; ``h_i = beta^2 S p_i (1 - p_i)``, couplings ``beta^2 S p_i p_j``. Unlike
    ListNet the targets are not normalised per query, so queries with more relevance weigh more.
    Rows of weight 0 leave the softmax. CatBoost's ``lambda`` (a regulariser of its leaf
    estimation) is a booster setting, not part of the loss, and is not reproduced.

    Examples
    --------
    >>> import customobj
    >>> customobj.QuerySoftMax(beta=2.0).grad_hess([0.0, 0.0], [1.0, 0.0], group=[2])[0].tolist()
    [-1.0, 1.0]
    """

    def __init__(self, *, beta: float = 1.0) -> None:
        self.beta = check_positive(beta, "beta")

    def _state(self, prep):
        w, use_w = kernel_weights(prep.weight)
        y = prep.labels
        mass = np.where(y > 0, y, 0.0) * (prep.weight if use_w else 1.0)
        return _Targets(mass=np.ascontiguousarray(mass, dtype=np.float64), vw=w, use_vw=use_w, beta=self.beta)

    def _targets(self, scores, prep, state, new_round):
        return state
