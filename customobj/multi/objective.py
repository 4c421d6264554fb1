r"""``MultiObjective``: one objective trained against several labels at once (multi-label learning to rank).

Each round every per-label objective computes its gradient and hessian at the same scores against its
own label column; a method (:mod:`customobj.multi.methods`) turns the round's per-label costs and
Gram matrix into non-negative weights (:mod:`customobj.multi.solvers`), and the combined gradient and
hessian are the weighted sums (stochastic label aggregation: per query, the drawn label's).

.. math::

    g = \sum_{k=1}^m \alpha_k g_k, \qquad h = \sum_{k=1}^m \alpha_k h_k, \qquad \alpha \ge 0

References
----------
Mahapatra, Dong, Chen, Momma (2023), "Multi-Label Learning to Rank through Multi-Objective
Optimization", KDD, sections 3-4; Carmel et al. (2020), "Multi-Objective Ranking Optimization for
Product Search Using Stochastic Label Aggregation", WWW, section 3; Momma et al. (2020),
"Multi-objective Relevance Ranking via Constrained Optimization", section 3 (augmented Lagrangian).
"""
from __future__ import annotations

import copy
from typing import Any, Optional, Sequence

import numpy as np
import numpy.typing as npt

from .._kernel_status import check_status
from .._validation import as_labels
from ..objectives._arrays import freeze_option
from ..objectives import _lambdarank_kernels as LK
from ..objectives.base import DeviceRoute, Objective, Prepared
from ..objectives.listwise import LambdaRank
from . import _combine_kernels as K
from . import _round_route, _weighted_route
from ._labels import check_labels, frozen_label, is_dask
from .methods import AUTO_U, Method, check_settings, method_spec, warn_unmet_bounds
from .solvers import augmented_lagrangian, first_memory, step

__all__ = ["MultiObjective"]


class _MultiState:
    """Per-data-set state: each label's prepared data, the method's memory and the rounds' record."""

    __slots__ = ("preps", "memory", "weights", "costs", "duals", "us", "fallbacks", "rng", "grads", "hess", "stacked")

    def __init__(self, preps: list, m: int, seed: int) -> None:
        self.preps = preps
        self.memory = first_memory(m)
        self.weights: list = []
        self.costs: list = []
        self.duals: list = []
        self.us: list = []  # wc_mgda / ec_mgda: each round's u
        self.fallbacks = 0
        self.rng = np.random.default_rng(seed)
        self.grads = np.zeros((m, 0))
        self.hess = np.zeros((m, 0))
        self.stacked: "LK.LabelInputs | None" = None  # every label LambdaRank: their kernel inputs, stacked once

    def buffers(self, n: int, zeroed: bool = True) -> "tuple[np.ndarray, np.ndarray]":
        """The per-label gradient and hessian rows (allocated once per data set), zeroed unless the caller
        writes every entry (``zeroed=False``: the LambdaRank labels' driver zeroes each query's rows itself)."""
        if self.grads.shape[1] != n:
            self.grads = np.zeros((self.grads.shape[0], n))
            self.hess = np.zeros_like(self.grads)
        elif zeroed:
            self.grads.fill(0.0)
            self.hess.fill(0.0)
        return self.grads, self.hess


class MultiObjective(Objective):
    r"""Several objectives, each against its own label, combined into one gradient every round.

    Parameters
    ----------
    objectives : sequence of Objective, at least 2
        ``obj_1, ..., obj_m``; ``obj_1`` is the primary (the epsilon-constraint methods minimise it).
        Any customobj objective with one output (LambdaRank with any metric, RankNet, the listwise
        losses, ``Unbiased`` on a click label).
    labels : sequence of m entries, optional
        Per objective, its label column (one value per row of the training data, finite and
        non-negative after the objective's own conversion) or None for the data set's label (the
        ``Dataset``/``DMatrix`` label). Default: every objective on the data set's label.
    method : {"linear", "stochastic", "chebyshev", "epo", "wc_mgda", "epsilon_constraint", "ec_mgda"}
        How the weights are chosen each round (docs/multi-objective.md, :mod:`customobj.multi.solvers`).
    preference : array of m non-negative numbers, optional
        The trade-off (normalised to sum 1; default uniform): the weights of "linear", the draw
        probabilities of "stochastic", the ray of "epo" (its models aim at ``r_k l_k`` equal), the
        Chebyshev weights of "chebyshev" and "wc_mgda".
    bounds : array of m - 1 positive numbers
        "epsilon_constraint" and "ec_mgda": upper bounds on the costs (mean loss per query on the
        training data) of objectives 2..m. A bound still exceeded after training is reported by a
        ``UserWarning`` with the achieved cost when the fitted attributes are read.
    reference_point : array of m numbers, optional
        "chebyshev", "wc_mgda": the costs ``z`` subtracted before weighting (default 0).
    smoothing : float in [0, 1), optional
        "chebyshev", "epo", "wc_mgda", "ec_mgda": the previous weights' share of each round's weights
        (a moving average, MO-LightGBM's ``*_decay`` methods with ``mo_ema_multiplier = 1 - smoothing``).
    mgda_u : float > 0 or "auto", optional
        "wc_mgda", "ec_mgda": the weight of the combined gradient's norm in the round's min-max (0.1,
        fixed). "auto": MO-LightGBM's tuning (:mod:`customobj.multi.mgda_u`), 0.1 for two rounds, then
        the least ``u`` that holds the round's min-max value to the second round's, in [0.1, 10]
        ("wc_mgda") or [0.1, 0.3] ("ec_mgda").
    penalty : float > 0, optional
        "epsilon_constraint": the augmented Lagrangian's ``mu`` (1.0).
    dual_interval : int >= 1, optional
        "epsilon_constraint": rounds between two updates of the multiplier estimates (the augmented
        Lagrangian's outer iterations; 10). 1 updates them every round, which winds them up on the first
        rounds, when every cost is still far above its bound (docs/multi-objective.md).
    secondary_cap : float or array of m - 1 in (0, 1], optional
        "ec_mgda": the largest weight of each secondary before normalising (0.5); the primary keeps
        ``1 - mean``.
    random_state : int >= 0, optional
        "stochastic": the seed of the per-query draws (0).

    Notes
    -----
    What each round chose is read after training with :meth:`fitted_attributes`: ``label_weights_``
    (rounds x m), ``label_costs_`` (rounds x m, the methods that read costs), ``label_duals_``
    (rounds x m - 1, "epsilon_constraint": each round's multipliers ``nu``), ``label_u_`` (rounds,
    "wc_mgda", "ec_mgda": each round's ``u``) and ``label_fallbacks_`` (rounds whose small problem scipy
    could not solve, which took the method's fallback weights). The loss (``loss``) is the combined
    cost whose gradient the round takes where the method has one ("linear": ``sum r_k L_k``;
    "chebyshev": the loss of the label of largest weighted cost; "epsilon_constraint": the
    augmented Lagrangian, in loss-sum units); for the others, ``sum alpha_k L_k`` at the weights of the
    last round ("stochastic": the expected loss ``sum r_k L_k``; before the first round: the preference).

    References
    ----------
    Mahapatra, Dong, Chen, Momma (2023), "Multi-Label Learning to Rank through Multi-Objective
    Optimization", KDD, section 4.

    Examples
    --------
    >>> import numpy as np
    >>> from customobj import LambdaRank, RankNet
    >>> from customobj.multi import MultiObjective
    >>> second = [0, 1, 1, 0]  # a second label for the same four rows
    >>> obj = MultiObjective([LambdaRank(), RankNet()], labels=[None, second], method="linear",
    ...                      preference=[3, 1])
    >>> grad, hess = obj.grad_hess(np.zeros(4), [2, 1, 0, 0], group=[4])
    >>> obj.fitted_attributes()["label_weights_"].tolist()
    [[0.75, 0.25]]
    """

    def __init__(self, objectives: Sequence[Objective], *, labels: Optional[Sequence[Any]] = None,
                 method: str = "linear", preference: "npt.ArrayLike | None" = None,
                 bounds: "npt.ArrayLike | None" = None, reference_point: "npt.ArrayLike | None" = None,
                 smoothing: Optional[float] = None, mgda_u: "float | str | None" = None, penalty: Optional[float] = None,
                 secondary_cap: "float | npt.ArrayLike | None" = None, random_state: Optional[int] = None,
                 dual_interval: Optional[int] = None) -> None:
        if isinstance(objectives, Objective) or not isinstance(objectives, (list, tuple)):
            raise TypeError(f"objectives must be a list of objectives, got {type(objectives).__name__}")
        for k, o in enumerate(objectives):
            if not isinstance(o, Objective):
                raise TypeError(f"objectives[{k}] must be an Objective, got {type(o).__name__}")
            if o.n_outputs != 1:
                raise ValueError(f"objectives[{k}] ({type(o).__name__}) has {o.n_outputs} outputs per row; "
                                 "MultiObjective combines objectives of one score per row")
        m = len(objectives)
        if m < 2:
            raise ValueError(f"objectives needs at least 2 objectives (got {m}): one label is one objective, "
                             "train it directly")
        self.objectives = tuple(objectives)
        self.labels = check_labels(labels, m)
        spec = method_spec(method)
        self.method = spec.name
        self._settings = check_settings(spec, m, preference=preference, bounds=bounds,
                                        reference_point=reference_point, smoothing=smoothing, mgda_u=mgda_u,
                                        penalty=penalty, secondary_cap=secondary_cap, random_state=random_state,
                                        dual_interval=dual_interval)
        main = [o for o, y in zip(self.objectives, self.labels) if y is None]
        self.pairwise = any(o.pairwise for o in self.objectives)
        self.integer_labels = any(o.integer_labels for o in main)
        self.needs_group = any(o.needs_group for o in self.objectives)
        self.rounds_matter = True  # the weights' memory, the duals and the draws go on from round to round
        # costs and Gram matrices are sums over all rows: a distributed training sums them over the workers
        self.pools_rows = spec.needs_costs or spec.needs_gram or any(o.pools_rows for o in self.objectives)

    # --- identity ---------------------------------------------------------------------------------
    def _params(self) -> tuple:
        s = self._settings
        return (("method", self.method), ("objectives", self.objectives), ("labels", self.labels),
                ("preference", s.preference), ("bounds", s.bounds), ("reference_point", s.reference),
                ("smoothing", s.smoothing), ("mgda_u", AUTO_U if s.tune_u else s.u), ("penalty", s.penalty),
                ("dual_interval", s.dual_interval),
                ("secondary_cap", s.cap), ("random_state", s.seed))

    def _cache_key(self) -> tuple:
        return (type(self).__name__,) + tuple(
            (k, tuple(frozen_label(y) for y in v) if k == "labels" else freeze_option(v)) for k, v in self._params())

    def __repr__(self) -> str:
        cols = ", ".join("None" if y is None else "<Dask column>" if is_dask(y) else f"<{y.size} values>"
                         for y in self.labels)
        return (f"MultiObjective({list(self.objectives)!r}, labels=[{cols}], method={self.method!r}, "
                f"preference={self._settings.preference.tolist()!r})")

    def with_labels(self, labels: Sequence[Any]) -> "MultiObjective":
        """The same objectives, method and options against other label columns (checked as ``labels=``);
        the entries that are None (the data set's label) stay None. What a distributed training gives each
        worker: the columns of its own rows (:mod:`customobj.adapters.dask`).

        Examples
        --------
        >>> from customobj import LambdaRank, RankNet
        >>> obj = MultiObjective([LambdaRank(), RankNet()], labels=[None, [0, 1, 1, 0]])
        >>> obj.with_labels([None, [1, 0]]).labels[1].tolist()
        [1.0, 0.0]
        """
        new = check_labels(labels, len(self.objectives))
        for k, (old, y) in enumerate(zip(self.labels, new)):
            if (old is None) != (y is None):
                raise ValueError(f"labels[{k}] must stay {'None' if old is None else 'a column'}: with_labels replaces "
                                 "the columns, not which objectives read the data set's label")
        out = copy.copy(self)
        out.__dict__.pop("_last_prep", None)  # the public calls' data set belongs to the other columns
        out.labels = new
        return out

    # --- data ---------------------------------------------------------------------------------------
    def _convert_labels(self, labels):
        for o, y in zip(self.objectives, self.labels):  # the parts that read the data set's label, in turn
            if y is None:
                labels = o._convert_labels(labels)
        return labels

    def check_prepared(self, prep: Prepared) -> None:
        super().check_prepared(prep)
        for k, y in enumerate(self.labels):
            if is_dask(y):
                raise TypeError(f"labels[{k}] is a Dask collection: train through customobj.adapters.dask "
                                "(train_xgboost), which splits it with the query-aligned partitions, or pass a "
                                "numpy column here")
            if y is not None and y.shape[0] != prep.n_rows:
                raise ValueError(f"labels[{k}] has {y.shape[0]} entries but the data has {prep.n_rows} rows "
                                 "(one label per row of the training data)")

    def _state(self, prep: Prepared) -> _MultiState:
        preps = []
        for k, (o, y) in enumerate(zip(self.objectives, self.labels)):
            name = "labels (the data set's label)" if y is None else f"labels[{k}]"
            if y is None:
                sub = prep
            else:
                yk = as_labels(o._convert_labels(y), prep.n_rows, integer=o.integer_labels, name=name)
                sub = Prepared(yk, prep.groups, prep.weight, prep.position)
            try:
                sub.state_for(o)
            except ValueError as err:
                raise ValueError(f"{name} cannot train objectives[{k}] ({type(o).__name__}): {err}") from err
            preps.append(sub)
        return _MultiState(preps, len(self.objectives), self._settings.seed)

    def _fitted_attributes(self, prep: Prepared, state: object) -> dict:
        assert isinstance(state, _MultiState)
        s = self._settings
        m = s.m
        out = {"label_weights_": np.array(state.weights, dtype=np.float64).reshape(-1, m),
               "label_fallbacks_": np.array(state.fallbacks)}
        if s.spec.needs_costs:
            out["label_costs_"] = np.array(state.costs, dtype=np.float64).reshape(-1, m)
        if s.spec.method == Method.EPSILON_CONSTRAINT:
            out["label_duals_"] = np.array(state.duals, dtype=np.float64).reshape(-1, m - 1)
        if s.spec.reads_u:
            out["label_u_"] = np.array(state.us, dtype=np.float64)
        if state.costs:
            warn_unmet_bounds(s, out["label_costs_"], stacklevel=3)
        return out

    def device_route(self) -> DeviceRoute:
        """Every method on the GPU, the per-label gradients kept on the card. "linear": each label's GPU
        route, weighted there (``_weighted_route``). The others (``_round_route``): each label's route into
        a row of device buffers, with its per-query cost where the method reads costs (the label's
        ``DeviceRoute.grad_hess_loss``), the Gram matrix and the costs summed on the card in a fixed order,
        one read of those ``m^2 + m`` numbers a round, the CPU's solve and record (``_choose``), the
        weights written back and the combination on the card. Where every pairwise label's route has GPU
        couplings, the fused ``grad_hess_couplings`` (``_round_route``, every method) also writes the round's
        pairs there, each label's times its weight (``TreeBooster(device="cuda", criterion="ole")``).
        ``NotImplementedError`` naming a per-label loss without a GPU route, or without a GPU cost for a
        method that reads costs (every customobj loss of one score a row has one; a user's ``device_route``
        without ``grad_hess_loss`` has none).

        Examples
        --------
        >>> from customobj import LambdaRank, RankNet
        >>> MultiObjective([LambdaRank(), RankNet()]).device_route().grad_hess.__module__
        'customobj.multi._weighted_route'
        >>> MultiObjective([LambdaRank(), LambdaRank()], method="epo").device_route().grad_hess.__module__
        'customobj.multi._round_route'
        """
        spec = self._settings.spec
        with_pairs = True  # every pairwise label's pairs on the card: the fused route weights them
        for k, o in enumerate(self.objectives):
            route = o.device_route()  # NotImplementedError naming a per-label loss without one
            if spec.needs_costs and route.grad_hess_loss is None:
                raise NotImplementedError(
                    f"MultiObjective(method={self.method!r}) reads each label's cost every round, and objectives[{k}] "
                    f"({type(o).__name__}) has no GPU cost (its GPU route computes no loss, or a part's does not): pass "
                    "host (numpy) scores, or a method that reads no costs ('linear', 'stochastic') on the GPU")
            with_pairs = with_pairs and (not o.pairwise or route.couplings is not None
                                         or route.grad_hess_couplings is not None)  # a composite's, Unbiased's
        fused = _round_route.grad_hess_couplings if with_pairs else None
        if spec.method == Method.LINEAR:
            return DeviceRoute(_weighted_route.grad_hess, grad_hess_couplings=fused)
        return DeviceRoute(_round_route.grad_hess, grad_hess_couplings=fused)

    # --- rounds -------------------------------------------------------------------------------------
    def _parts(self, scores, prep, state, with_pairs):
        """Each label's gradient and hessian (rows of ``state``'s buffers), its couplings or None, and, for the
        methods that read costs, its loss from the gradients' own pass where the loss has one (``_grad_hess_loss``;
        every label LambdaRank: one driver, one sort a query, ``_lambdarank_kernels.lambdarank_labels``)."""
        stacked = not with_pairs and all(type(o) is LambdaRank for o in self.objectives)
        g, h = state.buffers(prep.n_rows, zeroed=not stacked)  # the stacked driver writes every row
        pairs: list = []
        costs = self._settings.spec.needs_costs
        losses = np.zeros(len(self.objectives))
        if stacked:
            # Every label LambdaRank: one driver sorts each query once for all labels (the scores are
            # theirs), each label's gradients, hessians and cost the bits of its own call.
            for sub in state.preps:
                sub.collective = prep.collective
            if state.stacked is None:  # label-only but for the scores: stacked once (0.3 ms a round, cProfile)
                state.stacked = LK.label_inputs(tuple(o.pass_inputs(scores, sub)
                                                      for o, sub in zip(self.objectives, state.preps)))
            losses, status = LK.lambdarank_stacked_labels(state.stacked._replace(scores=scores), costs, g, h)
            check_status(status, "LambdaRank")
            return g, h, [None] * len(self.objectives), losses
        for k, o in enumerate(self.objectives):
            sub = state.preps[k]
            sub.collective = prep.collective
            st = sub.state_for(o)
            if with_pairs and o.pairwise and costs:  # the cost read without pairs (and on the GPU)
                couplings, losses[k] = o._grad_hess_couplings_loss(scores, sub, st, g[k], h[k])
                pairs.append(couplings)
            elif with_pairs and o.pairwise:
                pairs.append(o._grad_hess_couplings(scores, sub, st, g[k], h[k]))
            elif costs:
                losses[k] = o._grad_hess_loss(scores, sub, st, g[k], h[k])
                pairs.append(None)
            else:
                o._grad_hess(scores, sub, st, g[k], h[k])
                pairs.append(None)
        return g, h, pairs, losses

    def _losses(self, scores, state) -> np.ndarray:
        return np.array([o._loss(scores, sub, sub.state_for(o)) for o, sub in zip(self.objectives, state.preps)],
                        dtype=np.float64)

    def _inputs(self, prep, losses, gram, pooled):
        """``(costs, gram, queries)`` of the round: mean loss per query and the gradients' Gram matrix
        (``gram``: this worker's, zeros for a method that reads none), summed over the workers of a
        distributed training when ``pooled`` (the rounds only: every worker makes the same calls)."""
        spec = self._settings.spec
        m = self._settings.m
        n_q = float(prep.groups.n_groups) if prep.groups is not None else 1.0
        if pooled and prep.collective is not None and (spec.needs_costs or spec.needs_gram):
            total = prep.collective.sum(np.concatenate([gram.ravel(), losses, [n_q]]))
            gram, losses, n_q = total[:m * m].reshape(m, m), total[m * m:-1], float(total[-1])
        return losses / max(n_q, 1.0), gram, n_q

    def _choose(self, prep, state, losses, gram):
        """``(weights, draws)`` of the round from this worker's per-label losses and Gram matrix (the CPU
        round and the GPU route, ``_round_route``, alike): the method's step on the pooled inputs, its memory
        advanced and the round recorded; ``draws``: "stochastic"'s label per query, else None."""
        s = self._settings
        costs, gram, _ = self._inputs(prep, losses, gram, True)
        result = step(s, state.memory, costs, gram)
        state.memory = result.memory
        state.fallbacks += int(result.fallback)
        w = result.weights
        draws = None
        if s.spec.method == Method.STOCHASTIC:
            sizes = prep.groups.sizes
            draws = state.rng.choice(s.m, size=sizes.size, p=s.preference).astype(np.int64)
            w = np.bincount(draws, minlength=s.m) / max(sizes.size, 1)
        state.weights.append(w)
        if s.spec.needs_costs:
            state.costs.append(costs)
        if s.spec.method == Method.EPSILON_CONSTRAINT:  # the round's multipliers nu (its weights are nu / bounds)
            state.duals.append(result.weights[1:] * s.bounds)
        if s.spec.reads_u:
            state.us.append(result.memory.u)
        return result.weights, draws

    def _round(self, scores, prep, state, out_grad, out_hess, with_pairs):
        s = self._settings
        g, h, pairs, losses = self._parts(scores, prep, state, with_pairs)
        gram = (K.gram_two(g) if s.m == 2 else g @ g.T) if s.spec.needs_gram else np.zeros((s.m, s.m))
        weights, draws = self._choose(prep, state, losses, gram)
        row_label = None
        if draws is not None:
            row_label = np.repeat(draws, prep.groups.sizes)
            K.add_picked(g, row_label, out_grad)
            K.add_picked(h, row_label, out_hess)
        else:
            K.add_weighted(g, weights, out_grad)
            K.add_weighted(h, weights, out_hess)
        if not with_pairs:
            return None
        return _weighted_pairs(pairs, weights, row_label)

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        self._round(scores, prep, state, out_grad, out_hess, False)

    def _grad_hess_couplings(self, scores, prep, state, out_grad, out_hess):
        return self._round(scores, prep, state, out_grad, out_hess, True)

    def _peek(self, scores, prep, state):
        """``(weights, losses, costs, queries)`` at ``scores``, nothing advanced: the weights the next
        round would take, except for the methods that read the Gram matrix (it would take every label's
        gradient, and advance the per-label losses whose rounds matter), which read the last round's
        (the preference before the first)."""
        s = self._settings
        losses = self._losses(scores, state)
        costs, _, n_q = self._inputs(prep, losses, np.zeros((s.m, s.m)), False)
        if s.spec.needs_gram:
            weights = state.weights[-1] if state.weights else s.preference
        else:
            weights = step(s, state.memory, costs, np.zeros((s.m, s.m))).weights
        return weights, losses, costs, n_q

    def _loss(self, scores, prep, state):
        s = self._settings
        weights, losses, costs, n_q = self._peek(scores, prep, state)
        if s.spec.method == Method.EPSILON_CONSTRAINT:  # in loss-sum units, as the gradient is
            return max(n_q, 1.0) * augmented_lagrangian(costs, s, state.memory.duals)
        if s.spec.method == Method.STOCHASTIC:
            return float(s.preference @ losses)
        return float(weights @ losses)

    def _pair_couplings(self, scores, prep, state):
        weights = self._peek(scores, prep, state)[0]
        pieces = [o._pair_couplings(scores, sub, sub.state_for(o)) if o.pairwise else None
                  for o, sub in zip(self.objectives, state.preps)]
        return _weighted_pairs(pieces, weights, None)


def _weighted_pairs(pairs: list, weights: np.ndarray, row_label: "np.ndarray | None"):
    """The parts' couplings times their weights, concatenated (stochastic: each query's drawn label's pairs)."""
    pieces = []
    for k, (i, j, c) in ((k, p) for k, p in enumerate(pairs) if p is not None):
        if row_label is None:
            pieces.append((i, j, weights[k] * c))
        else:
            keep = row_label[i] == k
            pieces.append((i[keep], j[keep], c[keep]))
    if not pieces:
        return None
    return tuple(np.concatenate(a) for a in zip(*pieces))
