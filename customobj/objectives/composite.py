"""Sums and scalings of objectives: ``a + b`` is a :class:`Sum`, ``c * a`` a :class:`Scaled`.

Both are objectives themselves (``base.Objective.__add__`` / ``__mul__`` build them): gradients,
hessians, losses and pair couplings add or scale, and label conversions apply part by part.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .._validation import PARAM_LIMIT, check_pair_budget, check_real
from .base import DeviceRoute, Objective, Prepared

__all__ = ["Sum", "Scaled", "scaled_leaves"]


def _merge_flags(parts):
    outputs = {p.n_outputs for p in parts}
    if len(outputs) > 1 and None in outputs:
        outputs.discard(None)  # an McRank that has not seen labels yet takes the other parts' K
    if len(outputs) != 1:
        raise ValueError("cannot add objectives with different numbers of outputs (e.g. McRank and a ranker)")
    return outputs.pop()


def _has_pairs(route: DeviceRoute) -> bool:
    """Whether a part's GPU route writes its pair couplings (a ``couplings`` driver, or a fused one)."""
    return route.couplings is not None or route.grad_hess_couplings is not None


def _concat_pairs(pieces):
    """Concatenate the parts' ``(i, j, c)``; the joined list honours the one pair budget too."""
    check_pair_budget(sum(int(p[0].size) for p in pieces), "pair_couplings of a Sum",
                      hint="use fewer pairwise parts, or smaller queries")
    return tuple(np.concatenate(arrs) for arrs in zip(*pieces))


class Sum(Objective):
    r"""``a + b + ...``: a sum of objectives is an objective; gradients, hessians, losses and couplings add.

    .. math::

        L(s) = \sum_k L_k(s), \qquad \nabla L = \sum_k \nabla L_k, \qquad
        \operatorname{diag} \nabla^2 L = \sum_k \operatorname{diag} \nabla^2 L_k

    and the parts' pair couplings are concatenated (a pair in two parts appears twice). Nested sums
    are flattened; labels pass through each part's conversion in turn.

    References
    ----------
    Zheng et al. (2007), "A general boosting method and its application to learning ranking functions
    for web search", section 3: QBRank is a preference term plus squared error; Chapelle (2007),
    "Large scale support vector machines" (slides), "Web spam classification": hinge plus graph term.

    Examples
    --------
    >>> from customobj import RankNet, SquaredError
    >>> obj = SquaredError() + 2.0 * RankNet()
    >>> grad, hess = obj.grad_hess([0.0, 0.0], [1, 0], group=[2])
    >>> grad.tolist(), hess.tolist()  # [-1, 0] + 2 * [-0.5, 0.5], [1, 1] + 2 * [0.25, 0.25]
    ([-2.0, 1.0], [1.5, 1.5])
    """

    parts: "tuple[Objective, ...]"

    def __init__(self, *parts: Objective) -> None:
        flat: list[Objective] = []
        for p in parts:
            if not isinstance(p, Objective):
                raise TypeError(f"Sum parts must be objectives, got {type(p).__name__}")
            flat.extend(p.parts if isinstance(p, Sum) else [p])
        if not flat:
            raise ValueError("Sum needs at least one objective")
        _merge_flags(flat)
        self.parts = tuple(flat)
        self.pairwise = any(p.pairwise for p in flat)
        self.integer_labels = any(p.integer_labels for p in flat)
        self.needs_group = any(p.needs_group for p in flat)
        self.rounds_matter = any(p.rounds_matter for p in flat)
        self.pools_rows = any(p.pools_rows for p in flat)

    @property
    def n_outputs(self) -> Optional[int]:  # type: ignore[override]  # from the parts, on demand
        # Read from the parts on demand: McRank(n_classes=None) learns K only at prepare time.
        return _merge_flags(self.parts)

    def _scale_bound(self):
        return max(p._scale_bound() for p in self.parts)

    def _params(self):
        return (("parts", self.parts),)

    def __repr__(self) -> str:
        return " + ".join(repr(p) for p in self.parts)

    def check_prepared(self, prep: Prepared) -> None:
        for p in self.parts:
            p.check_prepared(prep)  # direct: an equal part may have cached its state on another instance
            prep.state_for(p)

    def _fitted_attributes(self, prep, state):
        fitted: dict = {}
        for p in self.parts:  # what each part learned (an Unbiased part: its position_bias_)
            fitted.update(p.fitted_attributes(prep))
        return fitted

    def _convert_labels(self, labels):
        for p in self.parts:
            labels = p._convert_labels(labels)
        return labels

    def device_route(self) -> DeviceRoute:
        """Each part's route in turn (``NotImplementedError`` from the first part without one). A GPU cost
        (``grad_hess_loss``, each query's the sum of the parts') when every part has one; GPU pair couplings
        (``grad_hess_couplings``: each part's right after its gradients, concatenated in part order) when
        every pairwise part has them."""
        from . import _composite_route as R

        routes = [part.device_route() for part in self.parts]
        costs = all([r.grad_hess_loss is not None for r in routes])
        pairs = all([_has_pairs(r) for part, r in zip(self.parts, routes) if part.pairwise])
        return DeviceRoute(R.sum_parts, None, R.sum_parts_loss if costs else None,
                           R.sum_parts_couplings if pairs else None)

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        for p in self.parts:
            p._grad_hess(scores, prep, prep.state_for(p), out_grad, out_hess)

    def _loss(self, scores, prep, state):
        return sum(p._loss(scores, prep, prep.state_for(p)) for p in self.parts)

    def _grad_hess_loss(self, scores, prep, state, out_grad, out_hess):
        # each part's own gradient-and-loss pass (LambdaRank's one walk; Unbiased's loss before its estimate)
        total = 0.0
        for p in self.parts:
            total += p._grad_hess_loss(scores, prep, prep.state_for(p), out_grad, out_hess)
        return total

    def _pair_couplings(self, scores, prep, state):
        pieces = [p._pair_couplings(scores, prep, prep.state_for(p)) for p in self.parts if p.pairwise]
        return _concat_pairs(pieces)

    def _grad_hess_couplings(self, scores, prep, state, out_grad, out_hess):
        pieces = []
        for p in self.parts:
            if p.pairwise:
                pieces.append(p._grad_hess_couplings(scores, prep, prep.state_for(p), out_grad, out_hess))
            else:
                p._grad_hess(scores, prep, prep.state_for(p), out_grad, out_hess)
        return _concat_pairs(pieces)

    def _grad_hess_couplings_loss(self, scores, prep, state, out_grad, out_hess):
        # each part's cost as read without pairs (_grad_hess_loss's, added in part order): the cost a
        # MultiObjective label reads does not depend on whether the booster asks pairs, nor on the device
        pieces, total = [], 0.0
        for p in self.parts:
            if p.pairwise:
                couplings, loss = p._grad_hess_couplings_loss(scores, prep, prep.state_for(p), out_grad, out_hess)
                pieces.append(couplings)
            else:
                loss = p._grad_hess_loss(scores, prep, prep.state_for(p), out_grad, out_hess)
            total += loss
        return _concat_pairs(pieces), total


class Scaled(Objective):
    r"""``factor * objective``: the loss, gradient, hessian and couplings times ``c = factor``.

    .. math::

        L(s) = c \, L_0(s), \qquad \nabla L = c \nabla L_0, \qquad
        \operatorname{diag} \nabla^2 L = c \operatorname{diag} \nabla^2 L_0, \qquad c \ge 0

    ``c >= 0`` keeps the hessian non-negative; nested factors multiply, and their product along
    any path (through sums too) is bounded by ``customobj._validation.PARAM_LIMIT``.

    References
    ----------
    Zheng et al. (2007), "A general boosting method and its application to learning ranking functions
    for web search", section 3: the weights ``w`` and ``1 - w`` of QBRank's two terms.

    Examples
    --------
    >>> from customobj import SquaredError
    >>> grad, hess = (0.5 * SquaredError()).grad_hess([0.0, 0.0], [1, 0])
    >>> grad.tolist(), hess.tolist()
    ([-0.5, 0.0], [0.5, 0.5])
    """

    objective: Objective
    factor: float

    def __init__(self, objective: Objective, factor: float) -> None:
        if not isinstance(objective, Objective):
            raise TypeError(f"objective must be an Objective, got {type(objective).__name__}")
        factor = check_real(factor, "factor")
        if factor < 0:
            raise ValueError(f"factor must be >= 0 so the hessian stays non-negative, got {factor}")
        if isinstance(objective, Scaled):
            factor, objective = factor * objective.factor, objective.objective
        # Bound the product of every factor on the way down (Sums may nest Scaled objectives),
        # so scaled gradients stay finite: see customobj._validation.PARAM_LIMIT.
        if factor * objective._scale_bound() > PARAM_LIMIT:
            raise ValueError(
                f"factor must keep the total scale of the objective <= {PARAM_LIMIT:g} "
                f"(customobj._validation.PARAM_LIMIT); got {factor:g} times {objective._scale_bound():g}"
            )
        self.objective = objective
        self.factor = float(factor)
        self.pairwise = objective.pairwise
        self.integer_labels = objective.integer_labels
        self.needs_group = objective.needs_group
        self.rounds_matter = objective.rounds_matter
        self.pools_rows = objective.pools_rows

    @property
    def n_outputs(self) -> Optional[int]:  # type: ignore[override]  # the objective's
        return self.objective.n_outputs

    def _params(self):
        return (("factor", self.factor), ("objective", self.objective))

    def __repr__(self) -> str:
        return f"{self.factor!r} * {self.objective!r}"

    def check_prepared(self, prep: Prepared) -> None:
        self.objective.check_prepared(prep)
        prep.state_for(self.objective)

    def _fitted_attributes(self, prep, state):
        return self.objective.fitted_attributes(prep)

    def _scale_bound(self):
        return self.factor * self.objective._scale_bound()

    def _convert_labels(self, labels):
        return self.objective._convert_labels(labels)

    def device_route(self) -> DeviceRoute:
        """The child's route, scaled (``NotImplementedError`` when the child has none); a GPU cost
        (``grad_hess_loss``) and GPU pair couplings (``grad_hess_couplings``: the child's, times ``factor``)
        when the child has them."""
        from . import _composite_route as R

        route = self.objective.device_route()
        return DeviceRoute(R.scaled, None, R.scaled_loss if route.grad_hess_loss is not None else None,
                           R.scaled_couplings if self.pairwise and _has_pairs(route) else None)

    def _scaled_child(self, run, scores, prep, out_grad, out_hess):
        # Children add into the outputs; scale only what this child contributes. ``run``: the child's
        # ``_grad_hess`` or ``_grad_hess_loss``; returns what it returns.
        g = np.zeros_like(out_grad)
        h = np.zeros_like(out_hess)
        got = run(scores, prep, prep.state_for(self.objective), g, h)
        out_grad += self.factor * g
        out_hess += self.factor * h
        return got

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        self._scaled_child(self.objective._grad_hess, scores, prep, out_grad, out_hess)

    def _loss(self, scores, prep, state):
        return self.factor * self.objective._loss(scores, prep, prep.state_for(self.objective))

    def _grad_hess_loss(self, scores, prep, state, out_grad, out_hess):
        return self.factor * self._scaled_child(self.objective._grad_hess_loss, scores, prep, out_grad, out_hess)

    def _pair_couplings(self, scores, prep, state):
        i, j, c = self.objective._pair_couplings(scores, prep, prep.state_for(self.objective))
        return i, j, self.factor * c

    def _grad_hess_couplings(self, scores, prep, state, out_grad, out_hess):
        g = np.zeros_like(out_grad)
        h = np.zeros_like(out_hess)
        i, j, c = self.objective._grad_hess_couplings(scores, prep, prep.state_for(self.objective), g, h)
        out_grad += self.factor * g
        out_hess += self.factor * h
        return i, j, self.factor * c

    def _grad_hess_couplings_loss(self, scores, prep, state, out_grad, out_hess):
        # the child's cost as read without pairs (Sum._grad_hess_couplings_loss says why), times the factor
        g = np.zeros_like(out_grad)
        h = np.zeros_like(out_hess)
        (i, j, c), loss = self.objective._grad_hess_couplings_loss(scores, prep, prep.state_for(self.objective), g, h)
        out_grad += self.factor * g
        out_hess += self.factor * h
        return (i, j, self.factor * c), self.factor * loss


def scaled_leaves(objective: Objective, factor: float = 1.0) -> "list[tuple[Objective, float]]":
    """``[(leaf, product of the Scaled factors above it)]`` of a sum of scalings, in the sum's order:
    the one walk the click estimators (``Unbiased``, ``Affine``) take over what they wrap.

    Examples
    --------
    >>> import customobj
    >>> [(type(o).__name__, f) for o, f in scaled_leaves(2.0 * (customobj.RankNet() + 3.0 * customobj.MPBoost()))]
    [('RankNet', 2.0), ('MPBoost', 6.0)]
    """
    if isinstance(objective, Sum):
        return [leaf for p in objective.parts for leaf in scaled_leaves(p, factor)]
    if isinstance(objective, Scaled):
        return scaled_leaves(objective.objective, factor * objective.factor)
    return [(objective, factor)]
