"""Learning to rank from clicks: Unbiased LambdaMART's pairwise debiasing for any pairwise objective.

Hu, Wang, Peng, Li, "Unbiased LambdaMART: An Unbiased Pairwise Learning-to-Rank Algorithm", WWW 2019,
sec. 4-5, as XGBoost >= 2.0 implements it (``lambdarank_unbiased``, ``lambdarank_bias_norm``;
``src/objective/lambdarank_obj.{h,cc}``). Input checks of positions, clicks and propensities live in
:mod:`customobj.clicks._inputs`; the pair terms of each wrapped loss in :mod:`customobj.clicks._pairs`.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import numpy.typing as npt

from . import _unbiased_kernels as CK
from ._inputs import DEFAULT_POSITIONS, MAX_POSITION, as_position, as_propensity, check_clicks, data_positions
from ._pairs import leaf_parts, pair_terms_of
from .._validation import check_bool, check_choice, check_int, check_nonnegative
from ..objectives.base import DeviceRoute, Objective, Prepared
from . import _unbiased_route

__all__ = ["Unbiased"]

#: ``cost`` option -> whether the estimate sums the swapped pairs' losses (see ``Unbiased``).
_COSTS = {"swapped": True, "loss": False}


class _UnbiasedState:
    """Per-data-set state: positions and the propensities estimated round after round."""

    __slots__ = ("position", "tplus", "tminus", "row_query", "unweighted", "rounds", "pooled")

    def __init__(self, position, n_positions, row_query, unweighted):
        self.position = position
        self.tplus = np.ones(n_positions)
        self.tminus = np.ones(n_positions)
        self.row_query = row_query
        self.unweighted = unweighted
        self.rounds = 0
        self.pooled = False  # tracks the positions of all workers' rows (distributed training, see _pool_positions)


def _pool_positions(collective, state):
    """Track as many positions as the longest query of any worker (each worker's state counted its own):
    the workers' per-position sums must line up, as on one machine."""
    k = state.tplus.size
    k_all = int(collective.max(np.array([k], dtype=np.float64))[0])
    if k_all > k:  # nothing estimated yet: the new positions start at 1, as all do
        state.tplus = np.concatenate([state.tplus, np.ones(k_all - k)])
        state.tminus = np.concatenate([state.tminus, np.ones(k_all - k)])
    state.pooled = True


def add_unchanged(part, scale, scores, prep, out_grad, out_hess) -> float:
    """Add a pointwise part of a wrapped sum as it is (times ``scale``, on the clicks); returns its loss.
    The click estimators (``Unbiased``, ``Affine``) debias pairs only."""
    g, h = np.zeros_like(out_grad), np.zeros_like(out_hess)
    part._grad_hess(scores, prep, prep.state_for(part), g, h)
    out_grad += scale * g
    out_hess += scale * h
    return scale * part._loss(scores, prep, prep.state_for(part))


class Unbiased(Objective):
    """Position-debiased pairwise objective: Unbiased LambdaMART (Hu et al., WWW 2019) around any
    pairwise customobj loss.

    Labels are clicks (0 / 1). Every pair of a query with a clicked row ``i`` and an unclicked row
    ``j`` of the wrapped loss has its lambda and hessian divided by ``t+_{p(i)} t-_{p(j)}``, the
    propensities of the two rows' display positions. Each gradient call (one boosting round) first
    uses the current propensities, then re-estimates them from the round's pair costs ``C_ij``
    (eq. 30-31 of the paper; XGBoost's update), the top position (0) fixed at 1:

    .. math::

        t^+_p = \\left(\\frac{\\sum_{p(i)=p} \\sum_j C_{ij} / t^-_{p(j)}}
                         {\\sum_{p(i)=0} \\sum_j C_{ij} / t^-_{p(j)}}\\right)^{1/(1+\\text{bias\\_norm})},
        \\qquad
        t^-_p = \\left(\\frac{\\sum_{p(j)=p} \\sum_i C_{ij} / t^+_{p(i)}}
                         {\\sum_{p(j)=0} \\sum_i C_{ij} / t^+_{p(i)}}\\right)^{1/(1+\\text{bias\\_norm})}.

    The estimates belong to the data set, not to the objective (which stays immutable in training):
    they live in its prepared state, round after round, and the trainers report them
    (:meth:`fitted_attributes`; where to read them after each trainer: docs/clicks.md). Positions
    are 0-based throughout: 0 is the top of the page.

    Only pairs whose two positions are tracked (below ``n_positions``) are debiased and counted,
    as in XGBoost. Then each query's debiased terms are multiplied by ``log2(1 + S) / S``, ``S``
    the sum of its debiased ``2 lambda`` (``query_norm``; LightGBM's and XGBoost's lambdarank
    normalisation, applied after the debiasing as XGBoost applies it):

    .. math::

        \\lambda'_{ij} = \\frac{\\log_2(1 + S_q)}{S_q} \\frac{\\lambda_{ij}}{t^+_{p(i)} t^-_{p(j)}},
        \\qquad S_q = \\sum_{(i, j) \\in q} \\frac{2 \\lambda_{ij}}{t^+_{p(i)} t^-_{p(j)}}.

    Parameters
    ----------
    objective : Objective
        A pairwise customobj loss: ``LambdaRank`` (any metric, any convention), ``RankNet``,
        ``RankSVM``, ``MPBoost``, ``QBRank(hessian="exact")``, ``PreferencePairs``, or sums and
        scalings of them; pointwise parts of a sum are added unchanged.
    propensity : array of float in [1e-16, 1e20], optional
        Known examination propensities per position (the top, position 0, first; the range is
        ``customobj._validation.MIN_PROPENSITY`` / ``MAX_PROPENSITY``): inverse
        propensity scoring, ``t+ = propensity``, ``t- = 1``, nothing estimated.
    bias_norm : float >= 0
        The ``L_p`` regulariser of the estimate (XGBoost's ``lambdarank_bias_norm``, default 1).
    n_positions : int, optional
        Positions tracked (``len(propensity)`` with ``propensity``; else the longest query, at
        most 32: XGBoost's ``MaxPositionSize`` without truncation).
    position : array of int >= 0, optional
        Display position of each row, 0-based (0 = top; see ``first_position``), rows of each query
        (session) in display order. Default: the data's own positions (``prepare(...,
        position=...)``; ``lightgbm_objective`` passes a Dataset's ``position`` field), else the row
        order within each query (XGBoost's convention). Refused, with how to fix it: no row at the
        top position (a 1-based log), or a session's rows out of display order.
    first_position : int >= 0
        The number the positions give the top row: 0 (default), or 1 for a log numbered from 1
        (subtracted from every position). A LightGBM Dataset's ``position`` field reaches the
        objective as LightGBM's 0-based ids: leave it at 0 there.
    cost : "swapped" or "loss"
        The pair cost ``C_ij`` of the estimate. ``"swapped"`` (default, XGBoost's
        ``LambdaGrad``): the loss of the pair with its rows swapped, for LambdaRank
        ``|dZ| log(1 + exp(sigma (s_i - s_j)))``; ``"loss"``: the pair's own loss, as eq. 30-31
        are written in the paper. Measured on MQ2008 (docs/clicks.md), ``"swapped"`` ranked better.
    query_norm : bool
        Normalise each query's debiased terms as above (default ``True``). Why: a click at a low
        position weighs up to ``1 / (t+ t-)`` times more than one at the top, so a session's
        gradient mass grows with the weights it happens to draw; the logarithm bounds it, as the
        lambdarank normalisation bounds a long list's. Measured (docs/clicks.md, MQ2008, 24 click
        logs): without it ``Unbiased(LambdaRank())`` ranked below the naive ``LambdaRank()``, with
        it above (and so did ``Unbiased(RankNet())``). A wrapped ``LambdaRank(norm=True)`` is
        normalised once. The loss applies the same factors frozen (as ``LambdaRank(norm=True)``
        does), so the gradient is its derivative with the factors held fixed.

    Notes
    -----
    Fitted values (:meth:`fitted_attributes`, per data set; ``TreeBooster`` sets them on the
    fitted model): ``position_bias_``, ``t+`` per tracked position after the latest round (the
    top, position 0, = 1.0), the estimated examination propensity relative to the top, and
    ``position_bias_unclicked_``, ``t-``. While no pair has its clicked row at the top nothing
    is estimated (all 1.0, or ``propensity``); after that, a tracked position whose rows were in
    no pair of the latest round is 0 (as in XGBoost), and its pairs are not debiased in the next
    round.

    Distributed (XGBoost on Dask, ``customobj.adapters.dask.train_xgboost``): each worker sums
    eq. 30-31's numerators and denominators over its own rows, the sums are added over the workers
    (``Prepared.collective``), and every worker derives the same estimate, the one of all rows
    (docs/distributed.md).

    Examples
    --------
    >>> import customobj
    >>> d = customobj.data.synthetic(30, 10, 5, seed=0)
    >>> clicks = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=2, seed=0)
    >>> obj = customobj.Unbiased(customobj.LambdaRank())
    >>> prep = obj.prepare(clicks.y, clicks.group, position=clicks.position)
    >>> for _ in range(3):  # three boosting rounds (scores kept at 0 here)
    ...     g, h = obj.grad_hess_prepared(clicks.X[:, 0] * 0.0, prep)
    >>> bias = obj.fitted_attributes(prep)["position_bias_"]
    >>> float(bias[0]), bool(bias[3] < 1.0)
    (1.0, True)
    """

    pairwise = True
    needs_group = True
    corrects_clicks = True

    def __init__(self, objective: Objective, *, propensity: Optional[npt.ArrayLike] = None,
                 bias_norm: float = 1.0, n_positions: Optional[int] = None,
                 position: Optional[npt.ArrayLike] = None, first_position: int = 0, cost: str = "swapped",
                 query_norm: bool = True) -> None:
        if not isinstance(objective, Objective):
            raise TypeError(f"objective must be a customobj Objective, got {type(objective).__name__}")
        if objective.corrects_clicks:
            raise TypeError(f"objective is already {type(objective).__name__}: debiasing twice divides by the "
                            "propensities twice")
        if not objective.pairwise:
            raise TypeError(f"objective must be a pairwise loss (it debiases pairs), got {objective!r}")
        leaf_parts(objective)  # raises TypeError for losses it cannot debias
        self.objective = objective
        self.integer_labels = objective.integer_labels  # the wrapped loss reads the labels
        self.bias_norm = check_nonnegative(bias_norm, "bias_norm")
        self.propensity = None if propensity is None else as_propensity(propensity)
        n_positions = check_int(n_positions, "n_positions", minimum=1, maximum=MAX_POSITION, allow_none=True)
        if self.propensity is not None:
            if n_positions is not None and n_positions != self.propensity.size:
                raise ValueError(f"n_positions={n_positions} but propensity has {self.propensity.size} "
                                 "entries (one per tracked position); give one of them")
            n_positions = self.propensity.size
        self.n_positions = n_positions
        self.position = None if position is None else as_position(position)
        self.first_position = check_int(first_position, "first_position", minimum=0, maximum=MAX_POSITION - 1)
        self.cost = check_choice(cost, "cost", set(_COSTS))
        self.query_norm = check_bool(query_norm, "query_norm")
        # each round starts from the previous estimate; public calls also keep the data set fitted_attributes() reads
        self.rounds_matter = True
        self.pools_rows = self.propensity is None  # estimates from all rows (distributed: summed over the workers)

    @property
    def position_bias_(self) -> np.ndarray:
        raise AttributeError(
            "Unbiased keeps no fitted state (the estimate belongs to the training data): after TreeBooster.fit read "
            "model.position_bias_; after lightgbm.train / xgboost.train with f = lightgbm_objective(obj) (or "
            "xgboost_objective) read f.fitted_attributes(train_data)['position_bias_']; after grad_hess_prepared calls "
            "read obj.fitted_attributes(prep)['position_bias_'], after grad_hess calls obj.fitted_attributes()"
            "['position_bias_'] (docs/clicks.md)")

    def _params(self):
        return (("bias_norm", self.bias_norm), ("cost", self.cost), ("first_position", self.first_position),
                ("n_positions", self.n_positions), ("objective", self.objective), ("position", self.position),
                ("propensity", self.propensity), ("query_norm", self.query_norm))

    def _convert_labels(self, labels):
        return self.objective._convert_labels(labels)

    def check_prepared(self, prep: Prepared) -> None:
        check_clicks(prep.labels, "labels")
        self.objective.check_prepared(prep)
        for part, _ in leaf_parts(self.objective):
            prep.state_for(part)
        super().check_prepared(prep)

    def _state(self, prep):
        return self._new_state(prep, data_positions(self.position, prep, self.first_position, "Unbiased"))

    def _fitted_attributes(self, prep, state):
        return {"position_bias_": state.tplus.copy(), "position_bias_unclicked_": state.tminus.copy()}

    def _new_state(self, prep, position):
        k = self.n_positions
        if k is None:
            k = int(min(position.max(initial=-1) + 1, DEFAULT_POSITIONS)) or 1
        sizes = prep.groups.sizes
        row_query = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
        state = _UnbiasedState(position, k, row_query, Prepared(prep.labels, prep.groups, None))
        if self.propensity is not None:
            state.tplus[:] = self.propensity
        return state

    # --- the pass ---------------------------------------------------------------------------------
    def _run(self, scores, prep, state, out_grad, out_hess, estimate):
        """Add the debiased gradients into the outputs; returns ``(loss, (i, j, c))``."""
        estimate = estimate and self._start_estimate(prep, state)
        k = state.tplus.size
        li, lj = np.zeros(k), np.zeros(k)
        props = CK.Propensities(state.position, state.tplus, state.tminus)
        loss = 0.0
        pieces = []
        for part, scale in leaf_parts(self.objective):
            if not part.pairwise:
                loss += add_unchanged(part, scale, scores, prep, out_grad, out_hess)
                continue
            t = pair_terms_of(part, scores, prep, state.unweighted, state.row_query, props, out_grad, out_hess, scale,
                              self._swapped)
            c = np.empty(t.rows.i.size)
            loss += t.extra_loss * scale
            loss += CK.debias_pairs(t.rows, t.terms, t.weights, props, prep.groups.n_groups, scale,
                                    t.norm or self.query_norm, estimate, CK.DebiasOutputs(out_grad, out_hess, c, li, lj))
            pieces.append((t.rows.i, t.rows.j, c))
        if estimate:
            self._finish_estimate(prep, state, li, lj)
        pairs = tuple(np.concatenate(a) for a in zip(*pieces))
        return loss, pairs

    @property
    def _swapped(self) -> bool:
        return _COSTS[self.cost]

    def _start_estimate(self, prep, state):
        """Whether this round estimates; one worker's part of a distributed training set first tracks
        the positions of all workers (the CPU's and the GPU's pass, ``_unbiased_route``)."""
        if self.propensity is not None:
            return False
        if prep.collective is not None and not state.pooled:
            _pool_positions(prep.collective, state)
        return True

    def _finish_estimate(self, prep, state, li, lj):
        """Eq. 30-31 from the round's per-position sums ``li`` / ``lj`` (this worker's)."""
        if prep.collective is not None:  # eq. 30-31 are ratios of sums over all rows: sum them over the workers
            k = state.tplus.size
            sums = prep.collective.sum(np.concatenate([li, lj]))
            li, lj = sums[:k].copy(), sums[k:].copy()
        CK.update_propensities(li, lj, 1.0 / (1.0 + self.bias_norm), state.tplus, state.tminus)
        state.rounds += 1

    def device_route(self) -> DeviceRoute:
        """The GPU route (``customobj.clicks._unbiased_route``): the wrapped loss's pairs, their debiasing and
        eq. 30-31's sums on the device; each part's own route for the pointwise parts of a sum.

        Examples
        --------
        >>> import customobj
        >>> customobj.Unbiased(customobj.LambdaRank()).device_route().grad_hess.__module__
        'customobj.clicks._unbiased_route'

        Its ``grad_hess_loss`` (``MultiObjective``'s per-label GPU cost) writes each query's debiased loss, as
        :meth:`_grad_hess_loss` computes it; ``None`` when a pointwise part of the wrapped sum has no GPU cost. Its
        ``grad_hess_couplings`` writes the round's debiased pairs (``TreeBooster(device="cuda", criterion="ole")``).
        """
        with_cost = True
        for part, _ in leaf_parts(self.objective):
            if not part.pairwise:  # NotImplementedError naming a part without a route
                with_cost = with_cost and part.device_route().grad_hess_loss is not None
        return DeviceRoute(_unbiased_route.grad_hess, None,
                           _unbiased_route.grad_hess_loss if with_cost else None,
                           _unbiased_route.grad_hess_couplings)

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        self._run(scores, prep, state, out_grad, out_hess, True)

    def _grad_hess_couplings(self, scores, prep, state, out_grad, out_hess):
        return self._run(scores, prep, state, out_grad, out_hess, True)[1]

    def _grad_hess_couplings_loss(self, scores, prep, state, out_grad, out_hess):
        # the cost of _grad_hess_loss (the propensities the round's gradients take, before its estimate), from
        # the same pass as the pairs: _loss after the round would read the updated propensities
        loss, pairs = self._run(scores, prep, state, out_grad, out_hess, True)
        return pairs, loss

    def _grad_hess_loss(self, scores, prep, state, out_grad, out_hess):
        """The round's gradients and the debiased loss at the propensities they take, from the one pass (the
        estimate is updated after it): the cost whose derivative the round's gradient is, which
        ``MultiObjective`` reads (the GPU's, ``_unbiased_route.grad_hess_loss``, query by query)."""
        return self._run(scores, prep, state, out_grad, out_hess, True)[0]

    def _loss(self, scores, prep, state):
        g = np.zeros(prep.n_rows)
        return self._run(scores, prep, state, g, np.zeros_like(g), False)[0]

    def _pair_couplings(self, scores, prep, state):
        g = np.zeros(prep.n_rows)
        return self._run(scores, prep, state, g, np.zeros_like(g), False)[1]

