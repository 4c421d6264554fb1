"""LambdaLoss (Wang, Li, Golbandi, Bendersky, Najork 2018): RankNet's pair loss with NDCG weights
that depend on the current ranking (kernels: ``_sampled_pairs_kernels.py``)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._kernel_status import check_status, checked_value
from .._validation import check_choice, check_exp_gain_labels, check_nonnegative, check_positive
from ._arrays import kernel_weights
from .base import DeviceRoute, Objective, Prepared
from ._pair_sets import LabelPairs
from . import _sampled_pairs_kernels as LLK
from . import _pairwise_kernels as PK

#: Logistic pair loss of the pair-list kernels (each pair's theta is its sigma).
_LOGISTIC = PK.pair_spec(PK.PairKind.LOGISTIC, PK.Theta.CONST, 0.0, 1.0)

__all__ = ["LambdaLoss"]



class _LambdaLossState(NamedTuple):
    pairs: LabelPairs
    row_gain: np.ndarray  # 2^y - 1
    inv_idcg: np.ndarray  # per row: 1 / IDCG of its query (0: the query contributes nothing)


class LambdaLoss(Objective):
    """LambdaLoss's NDCG-Loss1, NDCG-Loss2 and NDCG-Loss2++ (Wang et al. 2018, sec. 4.2-5.1; rax's
    ``pairwise_logistic_loss`` with ``dcg_lambdaweight``-style ``lambdaweights``).

    Over the label pairs ``y_i > y_j`` of each query, with pair weights ``W_ij`` computed from the
    ranking by the current scores and frozen there (``_sampled_pairs_kernels``):

    .. math:: L = \\sum_q \\sum_{y_i > y_j} \\frac{w_i + w_j}{2} W_{ij}
              \\log\\big(1 + e^{-\\sigma (s_i - s_j)}\\big)

    ``weighting``: ``"ndcg1"`` (``W = G_i D(r_i) / IDCG``), ``"ndcg2"``
    (``W = |G_i - G_j| delta_ij / IDCG``, the bound the paper proves tight for NDCG) or ``"ndcg2++"``
    (``W = |G_i - G_j| (|D(r_i) - D(r_j)| + mu delta_ij) / IDCG``: LambdaRank's weight plus ``mu``
    times NDCG-Loss2's), ``G = 2^y - 1``, ``D(r) = 1/log2(2 + r)`` for 0-based positions ``r``,
    ``delta_ij = D(|r_i - r_j| - 1) - D(|r_i - r_j|)``. The paper writes ``log2``; the natural log
    used here scales the loss by ``ln 2``. Gradient and coupling are RankNet's times ``W``:
    ``g_i = -sigma W rho``, ``h_ij = sigma^2 W rho (1 - rho)``, ``rho = 1/(1 + e^{sigma (s_i - s_j)})``.
    The positions change only where scores cross, so ``grad`` is the derivative of :meth:`loss`
    wherever the scores are distinct. Every path (gradients too) lists the label pairs, within the
    pair budget ``MAX_PAIRS``. Labels up to 700.

    Examples
    --------
    >>> import customobj
    >>> g, h = customobj.LambdaLoss().grad_hess([0.0, 1.0], [1.0, 0.0], group=[2])
    >>> bool(g[0] < 0 < g[1])
    True
    """

    pairwise = True
    needs_group = True

    def device_route(self) -> DeviceRoute:
        from . import _listwise_route as LR

        return DeviceRoute(LR.lambdaloss, LR.lambdaloss_couplings, LR.lambdaloss)

    def __init__(self, *, weighting: str = "ndcg2++", mu: float = 1.0, sigma: float = 1.0) -> None:
        self.weighting = check_choice(weighting, "weighting", set(LLK.WEIGHTINGS))
        self.mu = check_nonnegative(mu, "mu")
        self.sigma = check_positive(sigma, "sigma")

    def check_prepared(self, prep: Prepared) -> None:
        check_exp_gain_labels(prep.labels)
        super().check_prepared(prep)

    def _state(self, prep):
        gain = np.exp2(prep.labels) - 1.0
        return _LambdaLossState(pairs=LabelPairs(prep.labels, prep.ptr), row_gain=gain,
                                inv_idcg=LLK.inverse_ideal_dcg(gain, prep.ptr))

    def _args(self, scores, prep, state):
        pi, pj, theta = state.pairs.pair_list(
            prep.labels, prep.ptr, PK.Theta.CONST, self.sigma, what="LambdaLoss",
            hint="its gradients, losses and couplings all weigh every label pair by both rows' ranks, so they "
                 "need the pair list; split very large queries or subsample rows per query")
        pos = np.empty(scores.shape[0], dtype=np.int64)
        LLK.score_positions(scores, prep.ptr, pos)
        pw = np.empty(pi.size)
        LLK.lambdaloss_pair_weights(pi, pj, pos, state.row_gain, state.inv_idcg, LLK.WEIGHTINGS[self.weighting],
                                    self.mu, pw)
        w, use_w = kernel_weights(prep.weight)
        return pi, pj, theta, pw, True, w, use_w

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        args = self._args(scores, prep, state)
        check_status(PK.pair_list_grad_hess(scores, *args, _LOGISTIC, out_grad, out_hess), "LambdaLoss")

    def _loss(self, scores, prep, state):
        return checked_value(PK.pair_list_loss(scores, *self._args(scores, prep, state), _LOGISTIC), "LambdaLoss")

    def _pair_couplings(self, scores, prep, state):
        args = self._args(scores, prep, state)
        c = np.empty(args[0].size)
        check_status(PK.pair_list_couplings(scores, *args, _LOGISTIC, c), "LambdaLoss")
        return args[0], args[1], c
