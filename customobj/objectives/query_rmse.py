"""CatBoost's ``QueryRMSE``: squared error after removing each query's mean residual."""
from __future__ import annotations

import numpy as np

from ._arrays import kernel_weights, query_sums
from .base import DeviceRoute, Objective
from ._query_arrays import dense_couplings
from . import _listwise_kernels as QK

__all__ = ["QueryRMSE"]


class QueryRMSE(Objective):
    """Query-centred squared error (CatBoost documentation, "Ranking: objectives and metrics";
    ``TQueryRmseError`` in ``catboost/private/libs/algo_helpers/error_functions.h``).

    With the residual ``r_i = y_i - s_i`` and the query's weighted mean residual
    ``mu_q = sum_i w_i r_i / W_q``:

    .. math:: L = \\frac12 \\sum_q \\sum_{i \\in q} w_i (r_i - \\mu_q)^2, \\qquad
              g_i = -w_i (r_i - \\mu_q), \\qquad h_i = w_i \\Big(1 - \\frac{w_i}{W_q}\\Big)

    Only the order within a query matters: adding a constant to a query's scores changes nothing.
    The exact hessian is ``diag(w) - w w^T / W_q``; ``h_i`` is its diagonal and the couplings
    ``h_ij = w_i w_j / W_q`` of every pair make it exact (CatBoost uses ``h_i = w_i`` and no pairs).
    A one-row query has zero gradient and hessian. CatBoost's metric reports
    ``sqrt(2 L / sum w)``; this is the loss its derivatives come from.

    Examples
    --------
    >>> import customobj
    >>> g, h = customobj.QueryRMSE().grad_hess([1.0, 0.0], [0.0, 0.0], group=[2])
    >>> g.tolist(), h.tolist()
    ([0.5, -0.5], [0.5, 0.5])
    """

    pairwise = True
    needs_group = True

    def device_route(self) -> DeviceRoute:
        from . import _listwise_route as LR

        return DeviceRoute(LR.query_rmse, LR.query_rmse_couplings, LR.query_rmse_loss)

    def __init__(self) -> None:
        pass

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        w, use_w = kernel_weights(prep.weight)
        QK.query_rmse_grad_hess(scores, prep.labels, prep.ptr, w, use_w, out_grad, out_hess)

    def _loss(self, scores, prep, state):
        w, use_w = kernel_weights(prep.weight)
        return QK.query_rmse_loss(scores, prep.labels, prep.ptr, w, use_w)

    def _coupling_factors(self, prep):
        """``(f, qscale)`` of the couplings ``qscale_q f_i f_j`` (label-only): ``f = w``, ``qscale = 1 / W``."""
        sizes = prep.groups.sizes
        if prep.weight is None:
            factor = np.ones(prep.n_rows)
            total = sizes.astype(np.float64)
        else:
            factor = prep.weight
            total = query_sums(sizes, factor)
        return factor, np.divide(1.0, total, out=np.zeros(sizes.size), where=total > 0)

    def _pair_couplings(self, scores, prep, state):
        return dense_couplings(prep.ptr, *self._coupling_factors(prep), "QueryRMSE couplings")
