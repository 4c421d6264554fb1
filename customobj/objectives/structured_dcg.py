"""Structured-output ranking with a DCG@k loss (Chapelle 2007, "Ranking application"): the max over each
query's rankings, an exact assignment per query (kernels in ``_structured_kernels``, GPU route in
``_structured_route``)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._validation import MAX_ROWS, check_exp_gain_labels, check_int, check_positive
from ._arrays import kernel_weights
from .base import DeviceRoute, Objective, Prepared
from . import _lambdarank_kernels as LK
from . import _structured_kernels as SK

__all__ = ["StructuredDCG"]


class _StructuredState(NamedTuple):
    """StructuredDCG's label-only state."""

    row_gain: np.ndarray  # G(y) = 2^y - 1


class StructuredDCG(Objective):
    r"""Structured-output ranking with a DCG@k loss, a max over the rankings of each query.

    Per query, ``A(r) = max(k + 1 - r, 0)`` and ``Delta(pi) = DCG@k(ideal) - DCG@k(pi)``:

    .. math::

        R_q(s) = \max_{\pi} \Bigl[ \Delta(\pi) + \sum_{i \in q} s_i \bigl(A(\pi_i) - A(\pi^*_i)\bigr) \Bigr]

    with ``pi*`` the ideal ranking that makes the loss smallest (label descending, ties by current
    score descending, then row order) and gains ``2^y - 1``. The max is an exact rectangular
    assignment of rows to the ``min(k, n)`` scored positions (shortest augmenting path, O(k^2 n)
    per query). ``grad_i = A(pi_hat_i) - A(pi*_i)`` (a subgradient; ``pi*`` is used whenever it
    attains the max, so queries with zero loss get zero gradient). The true hessian is 0: the
    objective uses the constant surrogate ``hess`` (Friedman's least-squares boosting, as on the
    slide). Loss ``sum_q w_q R_q`` with ``w_q`` the mean row weight of the query.

    Not pairwise: the surrogate hessian is a constant diagonal, so there are no pair couplings.
    Labels up to 700 (``customobj._validation.EXP_GAIN_MAX_LABEL``: the gain ``2**y - 1`` and the
    assignment's sums stay finite); ``k`` up to ``2**40``.

    References
    ----------
    Chapelle (2007), "Large scale support vector machines" (slides), "Structured output learning"
    and "Ranking application" (the DCG loss, ``A``), with Friedman's least-squares boosting.

    Examples
    --------
    >>> from customobj import StructuredDCG
    >>> grad, hess = StructuredDCG(k=2).grad_hess([0.0, 1.0], [1, 0], group=[2])
    >>> grad.tolist(), hess.tolist()  # the swapped ranking attains the max: A(2) - A(1), A(1) - A(2)
    ([-1.0, 1.0], [1.0, 1.0])
    """

    needs_group = True

    def __init__(self, *, k: int = 10, hess: float = 1.0) -> None:
        self.k = check_int(k, "k", minimum=1, maximum=MAX_ROWS)
        self.hess = check_positive(hess, "hess")

    def check_prepared(self, prep: Prepared) -> None:
        check_exp_gain_labels(prep.labels)
        super().check_prepared(prep)

    def _state(self, prep):
        return _StructuredState(row_gain=np.exp2(prep.labels) - 1.0)

    def device_route(self) -> DeviceRoute:
        from . import _structured_route as R

        return DeviceRoute(R.structured, None, R.structured)  # its launch also writes each query's loss

    def _raise_if_failed(self, status):
        # The assignment stops (never spins) on non-finite costs; the input limits make that
        # unreachable, so this is a guard, not a code path.
        if status.any():
            q = int(np.flatnonzero(status)[0])
            raise ValueError(f"StructuredDCG: the assignment of query {q} met non-finite costs (scores or "
                             "labels beyond customobj's input limits)")

    def _args(self, prep, state):
        w, use_w = kernel_weights(prep.weight)
        return prep.ptr, state.row_gain, self.k, w, use_w

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        self._grad_hess_loss(scores, prep, state, out_grad, out_hess)  # the loss comes from the same assignments

    def _grad_hess_loss(self, scores, prep, state, out_grad, out_hess):
        """One pass (``MultiObjective``'s per-label cost): each query's loss from its gradient's assignment, added
        in query order, :meth:`_loss`'s bits (the GPU's route writes the same per-query values)."""
        status, per_query = np.zeros(prep.groups.n_groups, dtype=np.bool_), np.empty(prep.groups.n_groups)
        SK.structured_dcg_grad_hess(scores, *self._args(prep, state), self.hess, out_grad, out_hess, status, per_query)
        self._raise_if_failed(status)
        return float(LK._serial_sum(per_query))

    def _loss(self, scores, prep, state):
        status = np.zeros(prep.groups.n_groups, dtype=np.bool_)
        total = SK.structured_dcg_loss(scores, *self._args(prep, state), status)
        self._raise_if_failed(status)
        return total
