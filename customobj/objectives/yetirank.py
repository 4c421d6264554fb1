"""YetiRank (Gulin, Kuralenok, Pavlov 2011; CatBoost's ``loss_function="YetiRank"``): RankNet's pair
loss on pairs sampled from noisy rankings (kernel: ``_sampled_pairs_kernels.py``)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._kernel_status import check_status, checked_value
from .._validation import check_int, check_pair_budget, check_positive
from .base import DeviceRoute, Objective
from ._noise import RoundCounter
from ._query_arrays import query_weights
from . import _pairwise_kernels as PK
from . import _sampled_pairs_kernels as YK

#: Logistic pair loss of the pair-list kernels (each pair's theta is its sigma).
_LOGISTIC = PK.pair_spec(PK.PairKind.LOGISTIC, PK.Theta.CONST, 0.0, 1.0)

__all__ = ["YetiRank"]

#: Most permutations per query and round (each costs a sort of the query).
MAX_PERMUTATIONS = 10_000


class _YetiRankState(NamedTuple):
    qweight: np.ndarray  # mean row weight per query
    rounds: RoundCounter


class YetiRank(Objective):
    """YetiRank's pairwise loss (Gulin et al. 2011, sec. 3; CatBoost documentation, "Ranking:
    objectives and metrics", ``YetiRank``, mode ``Classic``).

    Each round (one ``grad_hess`` call) samples, per query, ``permutations`` rankings of the scores
    with logistic noise; the neighbours ``(a, b)`` at positions ``(r - 1, r)`` of each with
    ``y_a > y_b`` get the pair weight ``0.15 decay^(r - 1) (y_a - y_b) w_q / permutations``
    (CatBoost's constants; ``w_q`` the query's mean row weight). With those weights ``W_ab`` summed
    over the permutations:

    .. math:: L = \\sum_{(a, b)} W_{ab} \\log\\big(1 + e^{-(s_a - s_b)}\\big), \\qquad
              g_a = -W_{ab} \\rho, \\quad h_{ab} = W_{ab} \\rho (1 - \\rho)

    (``rho = 1/(1 + e^{s_a - s_b})``, CatBoost's ``PairLogit`` derivatives). The noise comes from
    a SplitMix64 stream per ``(seed, round, query)``, so the pairs are the same for a seed and round
    whatever the thread count, and differ from CatBoost's own generator. :meth:`loss` and
    :meth:`pair_couplings` use the pairs of the latest ``grad_hess`` call (round 0 before any; the
    rounds count per prepared data set, and public calls on the same data go on counting:
    :mod:`customobj.objectives.base`), so
    ``grad`` is the derivative of :meth:`loss` wherever the sampled orders do not change; the
    expected weights over the noise are YetiRank's. CatBoost's other ``mode`` values (NDCG, DCG,
    ...) are not implemented.

    Examples
    --------
    >>> import customobj
    >>> g, h = customobj.YetiRank(seed=1).grad_hess([0.0, 0.0], [1.0, 0.0], group=[2])
    >>> [round(v, 12) for v in g.tolist()]  # two rows: the one pair in every permutation, weight 0.15
    [-0.075, 0.075]
    """

    pairwise = True
    needs_group = True
    rounds_matter = True  # each round samples new pairs

    def device_route(self) -> DeviceRoute:
        from . import _listwise_route as LR

        return DeviceRoute(LR.yetirank, LR.yetirank_couplings, LR.yetirank)  # its cost: the round's sampled pairs

    def __init__(self, *, permutations: int = 10, decay: float = 0.85, seed: int = 0) -> None:
        self.permutations = check_int(permutations, "permutations", minimum=1, maximum=MAX_PERMUTATIONS)
        self.decay = check_positive(decay, "decay", maximum=1.0)
        self.seed = check_int(seed, "seed", minimum=0, maximum=2**63 - 1)

    def _state(self, prep):
        return _YetiRankState(qweight=query_weights(prep), rounds=RoundCounter())

    def _pair_offsets(self, prep):
        """Where each query's ``(n - 1) permutations`` sampled pairs start; the pair budget checked."""
        sizes = prep.groups.sizes
        per_query = np.where(sizes >= 2, (sizes - 1) * self.permutations, 0)
        offsets = np.concatenate([[0], np.cumsum(per_query)]).astype(np.int64)
        check_pair_budget(int(offsets[-1]), "YetiRank's sampled pairs",
                          hint="use fewer permutations, or split very large queries")
        return offsets

    def _pairs(self, scores, prep, state, new_round):
        return self._sampled(scores, prep, state, new_round)[0]

    def _sampled(self, scores, prep, state, new_round):
        """``(pair-list kernel arguments, offsets)``: the round's sampled pairs of weight > 0, query ``q``'s
        at ``offsets[q]:offsets[q + 1]``."""
        rnd = state.rounds.advance() if new_round else state.rounds.current
        offsets = self._pair_offsets(prep)
        m = int(offsets[-1])
        pi, pj, pw = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m)
        YK.yetirank_pairs(scores, prep.labels, prep.ptr, state.qweight, self.permutations, self.decay,
                          self.seed, rnd, offsets, pi, pj, pw)
        keep = pw > 0.0
        kept = np.concatenate([[0], np.cumsum(keep)])[offsets].astype(np.int64)
        pi, pj, pw = pi[keep], pj[keep], pw[keep]
        return (pi, pj, np.ones(pi.size), pw, True, pw[:0], False), kept

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        args = self._pairs(scores, prep, state, True)
        check_status(PK.pair_list_grad_hess(scores, *args, _LOGISTIC, out_grad, out_hess), "YetiRank")

    def _grad_hess_loss(self, scores, prep, state, out_grad, out_hess):
        """A round (new permutations) and the loss at its sampled pairs, from one sampling: ``MultiObjective``'s
        per-label cost, the cost whose gradient the round's is. Each query's pairs added in list order, then the
        queries in order (``pair_list_query_losses``): the GPU's per-query costs (``_sampled_pairs_cuda.
        yetirank_query_losses``) summed as its round sums them; :meth:`loss` after the round (one running sum
        over the list) equals it to rounding."""
        args, offsets = self._sampled(scores, prep, state, True)
        check_status(PK.pair_list_grad_hess(scores, *args, _LOGISTIC, out_grad, out_hess), "YetiRank")
        per_query = np.empty(offsets.size - 1)
        return checked_value(PK.pair_list_query_losses(scores, *args, _LOGISTIC, offsets, per_query), "YetiRank")

    def _loss(self, scores, prep, state):
        args = self._pairs(scores, prep, state, False)
        return checked_value(PK.pair_list_loss(scores, *args, _LOGISTIC), "YetiRank")

    def _couplings(self, scores, args):
        c = np.empty(args[0].size)
        check_status(PK.pair_list_couplings(scores, *args, _LOGISTIC, c), "YetiRank")
        return args[0], args[1], c

    def _pair_couplings(self, scores, prep, state):
        return self._couplings(scores, self._pairs(scores, prep, state, False))

    def _grad_hess_couplings(self, scores, prep, state, out_grad, out_hess):
        # One sampling for both: a second would start (or reuse) another round's pairs.
        args = self._pairs(scores, prep, state, True)
        check_status(PK.pair_list_grad_hess(scores, *args, _LOGISTIC, out_grad, out_hess), "YetiRank")
        return self._couplings(scores, args)
