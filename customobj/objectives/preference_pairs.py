"""Explicit preference pairs (Zheng et al. 2007 sec. 3; Chapelle 2007): :class:`PreferencePairs`, half
the squared hinge of each listed pair, pairs in any queries. Also importable from ``pairwise``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import numpy.typing as npt

from .._kernel_status import check_status, checked_value
from .._validation import WEIGHT_LIMIT, as_1d_float, check_nonnegative
from ._arrays import kernel_weights
from ._pair_sets import (ExplicitPairs, ListedPairs, check_pairs_option, explicit_pairs_refusal, listed_couplings,
                         pairs_in_range)
from .base import DeviceRoute, Objective, PairSource, Prepared, RelevancePairs, listed_source
from . import _pairwise_kernels as PK

__all__ = ["PreferencePairs", "EXPLICIT_SPEC"]

#: PreferencePairs' loss: half the squared hinge of each pair (theta is each pair's margin).
EXPLICIT_SPEC = PK.pair_spec(PK.PairKind.SQ_HINGE, PK.Theta.CONST, 0.0, 0.5)


class PreferencePairs(Objective):
    r"""Explicit preference pairs: QBRank's preference term, or with ``margin = 0`` a graph regulariser.

    .. math::

        L(s) = \sum_k v_k \tfrac{1}{2} \max\bigl(0, m - (s_{i_k} - s_{j_k})\bigr)^2

    over the pairs ``(i_k, j_k)``, row ``i_k`` preferred to ``j_k`` (any queries), ``m`` the
    ``margin``.

    The factor 1/2 matches QBRank, so ``QBRank(w=w, pairs=P, labeled="none") == w * PreferencePairs(P,
    margin=1.0)``; the slides' ``Omega = sum max(0, s_j - s_i)^2`` is ``2 * PreferencePairs(edges)``.
    ``a = -max(0, margin - d)``, coupling ``[d < margin]`` (0 at the kink). ``v_k`` is ``weight[k]``
    (default 1) times ``(w_i + w_j) / 2`` when row weights are given. Add it to another objective
    (``SquaredHinge() + lam * PreferencePairs(edges)``); it ignores labels and groups.

    References
    ----------
    Zheng, Zha, Zhang, Chapelle, Chen, Sun (2007), "A general boosting method and its application to
    learning ranking functions for web search" (NIPS 2007), section 3 (the preference term);
    Chapelle (2007), "Large scale support vector machines" (slides), "Web spam classification"
    (the graph regulariser).

    Examples
    --------
    >>> from customobj import PreferencePairs
    >>> grad, hess = PreferencePairs([[0, 1]], margin=1.0).grad_hess([0.0, 0.5], [0, 0])
    >>> grad.tolist(), hess.tolist()
    ([-1.5, 1.5], [1.0, 1.0])
    """

    pairwise = True
    needs_group = False

    def __init__(self, pairs: npt.ArrayLike, *, margin: float = 0.0, weight: Optional[npt.ArrayLike] = None) -> None:
        self.pairs = check_pairs_option(pairs)
        self.margin = check_nonnegative(margin, "margin")
        if weight is not None:
            weight = as_1d_float(weight, "weight", n=self.pairs.shape[0])
            if weight.size and weight.min() < 0:
                raise ValueError(f"weight must be non-negative; found {weight.min()} at pair {int(np.argmin(weight))}")
            if weight.size and weight.max() > WEIGHT_LIMIT:
                raise ValueError(f"weight must be <= {WEIGHT_LIMIT:g} (customobj._validation.WEIGHT_LIMIT); "
                                 f"found {weight.max():g} at pair {int(np.argmax(weight))}")
            weight.setflags(write=False)
        self.weight = weight

    def _state(self, prep):
        pairs_in_range(self.pairs, prep.n_rows)
        pi = np.ascontiguousarray(self.pairs[:, 0])
        pj = np.ascontiguousarray(self.pairs[:, 1])
        theta = np.full(pi.size, self.margin)
        return ExplicitPairs(pi, pj, theta)

    def pair_spec(self) -> PK.PairSpec:
        """Half the squared hinge, each pair with its own margin ``theta``."""
        return EXPLICIT_SPEC

    def relevance_pairs(self) -> RelevancePairs:
        """A ``TypeError``: explicit pairs and labelled rows have no per-row relevance the affine correction corrects."""
        raise explicit_pairs_refusal(self)

    def pair_source(self) -> PairSource:
        """Its listed pairs (``LISTED``)."""
        return listed_source(self.pair_spec())

    def listed_pairs(self, prep: Prepared) -> Optional[ListedPairs]:
        """The pairs with their margins and weights."""
        pi, pj, theta = prep.state_for(self)
        pw, use_pw = kernel_weights(self.weight)
        return ListedPairs(pi, pj, theta, pw, use_pw, EXPLICIT_SPEC)

    def device_route(self) -> DeviceRoute:
        from . import _pairwise_route as R

        return DeviceRoute(R.preference_pairs, R.listed_couplings, R.preference_pairs)

    def _args(self, prep, state):
        w, use_w = kernel_weights(prep.weight)
        pw, use_pw = kernel_weights(self.weight)
        pi, pj, theta = state
        return pi, pj, theta, pw, use_pw, w, use_w

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        check_status(PK.pair_list_grad_hess(scores, *self._args(prep, state), EXPLICIT_SPEC, out_grad, out_hess),
                     "PreferencePairs")

    def _loss(self, scores, prep, state):
        return checked_value(PK.pair_list_loss(scores, *self._args(prep, state), EXPLICIT_SPEC), "PreferencePairs")

    def _pair_couplings(self, scores, prep, state):
        i, j, c = listed_couplings(self, scores, prep)
        return i.copy(), j.copy(), c  # the state's own arrays stay the state's
