"""Pairwise losses (Burges 2010 sec. 2; Chapelle 2007; Zheng et al. 2007 sec. 3; Zhu et al. 2009 sec. 3-4):
terms on score differences ``d = s_i - s_j`` of row pairs, row ``i`` to rank above row ``j``.

Label pairs are every ``(i, j)`` of one query with ``y_i > y_j``, each once, walked per query in
parallel without being stored (``_pair_sets.py``); explicit pairs (``QBRank(pairs=...)``,
``PreferencePairs``) may cross queries and are summed serially.

Pair weights: ``(w_i + w_j) / 2`` from the row weights (halved before adding), times any per-pair weight.
"""
from __future__ import annotations

import numbers
from typing import Optional, Union

import numpy as np
import numpy.typing as npt

from .._kernel_status import check_status, checked_value
from .._validation import (
    PARAM_LIMIT,
    check_choice,
    check_nonnegative,
    check_positive,
    check_real,
)
from ._arrays import kernel_weights
from ._pair_sets import (ExplicitPairs, LabelPairs, ListedPairs, QBRankState, check_pairs_option, labeled_rows,
                         explicit_pairs_refusal, listed_couplings, pairs_in_range)
from .preference_pairs import PreferencePairs  # noqa: F401 - importable from here too
from .base import DeviceRoute, Objective, PairSource, Prepared, RelevancePairs, listed_source
from . import _pairwise_kernels as PK
from ._pointwise_kernels import squared_error_grad_hess, squared_error_loss

__all__ = ["RankNet", "RankSVM", "MPBoost", "QBRank", "PreferencePairs"]

_EMPTY = np.zeros(0, dtype=np.float64)


class _LabelPairLoss(Objective):
    """Sum of ``scale * phi(s_i - s_j; theta_ij)`` over the label pairs of every query.

    A new loss of this family is a subclass with its :meth:`pair_spec`: the CPU kernels, the GPU
    route (``device_route``) and the click estimators take it from there (docs/contributing.md).
    """

    pairwise = True
    needs_group = True

    def pair_spec(self) -> PK.PairSpec:
        """The loss as the pair kernels take it: its ``PairKind``, ``Theta`` mode and parameters."""
        raise NotImplementedError(f"{type(self).__name__} must define pair_spec()")

    def pair_source(self) -> PairSource:
        """Its listed pairs (``LISTED``), or ``NONE`` under a diagonal hessian bound (no couplings)."""
        return listed_source(self.pair_spec())

    def relevance_pairs(self) -> RelevancePairs:
        """Its pair loss at a unit label difference, each pair weighed by the higher row's relevance."""
        from ._pairwise_terms import pair_theta

        spec = self.pair_spec()
        return RelevancePairs(int(spec.kind), float(pair_theta(spec.theta_mode, 1.0, 0.0, spec.p)), spec.scale,
                              spec.hmul, False, None, None, False)

    def listed_pairs(self, prep: Prepared) -> Optional[ListedPairs]:
        """Every label pair of ``prep`` with its ``theta`` (built on first use, then cached)."""
        spec = self.pair_spec()
        pi, pj, th = prep.state_for(self).pair_list(prep.labels, prep.ptr, spec.theta_mode, spec.p)
        return ListedPairs(pi, pj, th, _EMPTY, False, spec)

    def device_route(self) -> DeviceRoute:
        from . import _pairwise_route as R

        return DeviceRoute(R.label_pair_loss, R.listed_couplings, R.label_pair_loss_with_cost)

    def _state(self, prep):
        return LabelPairs(prep.labels, prep.ptr)

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        spec = self.pair_spec()
        w, use_w = kernel_weights(prep.weight)
        check_status(PK.label_pairs_grad_hess_parallel(scores, prep.labels, prep.ptr, state.order, state.lower,
                                                       w, use_w, spec, out_grad, out_hess), type(self).__name__)

    def _loss(self, scores, prep, state):
        spec = self.pair_spec()
        w, use_w = kernel_weights(prep.weight)
        return checked_value(PK.label_pairs_loss(scores, prep.labels, prep.ptr, state.order, state.lower, w, use_w,
                                               spec), type(self).__name__)

    def _pair_couplings(self, scores, prep, state):
        return listed_couplings(self, scores, prep)


class RankNet(_LabelPairLoss):
    r"""RankNet's cross entropy on the label pairs of every query: LambdaMART's gradient without ``|dZ|``.

    .. math::

        L(s) = \sum_q \sum_{i, j \in q,\, y_i > y_j} w_{ij} \log\bigl(1 + e^{-\sigma (s_i - s_j)}\bigr)

    With ``d = s_i - s_j`` and ``rho = 1 / (1 + exp(sigma d))`` each pair adds ``a = -sigma rho``
    to ``grad_i`` and ``-a`` to ``grad_j``, and has the coupling ``h_ij = sigma^2 rho (1 - rho)``
    (added to both rows' ``hess``). Evaluated without overflow for any finite ``sigma d``.

    Parameters
    ----------
    sigma : float > 0
        Sigmoid steepness.

    References
    ----------
    Burges (2010), "From RankNet to LambdaRank to LambdaMART: an overview", section 2 (RankNet).

    Examples
    --------
    >>> from customobj import RankNet
    >>> grad, hess = RankNet(sigma=1.0).grad_hess([0.0, 0.0], [1, 0], group=[2])
    >>> grad.tolist(), hess.tolist()
    ([-0.5, 0.5], [0.25, 0.25])
    >>> [a.tolist() for a in RankNet().pair_couplings([0.0, 0.0], [1, 0], group=[2])]  # (i, j, h_ij)
    [[0], [1], [0.25]]
    """

    def __init__(self, *, sigma: float = 1.0) -> None:
        self.sigma = check_positive(sigma, "sigma")

    def pair_spec(self) -> PK.PairSpec:
        return PK.pair_spec(PK.PairKind.LOGISTIC, PK.Theta.CONST, self.sigma, 1.0)


class RankSVM(_LabelPairLoss):
    r"""The primal RankSVM with the squared hinge, on the label pairs of each query.

    .. math::

        L(s) = \sum_q \sum_{i, j \in q,\, y_i > y_j} w_{ij} \max\bigl(0, m - (s_i - s_j)\bigr)^2

    with ``m`` the ``margin``. Each pair adds ``a = -2 max(0, m - d)`` to ``grad_i`` and ``-a`` to
    ``grad_j`` (``d = s_i - s_j``); coupling ``2 [d < m]`` (the generalised Hessian; 0 at the kink).

    Parameters
    ----------
    margin : float >= 0
        ``m``: the score difference below which a pair is penalised.

    References
    ----------
    Chapelle (2007), "Large scale support vector machines" (slides), "Linear SVM classifier": the
    squared hinge trained in the primal, here on preference pairs.

    Examples
    --------
    >>> from customobj import RankSVM
    >>> grad, hess = RankSVM(margin=1.0).grad_hess([0.5, 0.0], [1, 0], group=[2])
    >>> grad.tolist(), hess.tolist()
    ([-1.0, 1.0], [2.0, 2.0])
    """

    def __init__(self, *, margin: float = 1.0) -> None:
        self.margin = check_nonnegative(margin, "margin")

    def pair_spec(self) -> PK.PairSpec:
        return PK.pair_spec(PK.PairKind.SQ_HINGE, PK.Theta.CONST, self.margin, 1.0)


_DDF = {"binary": PK.Theta.CONST, "ldd": PK.Theta.LDD, "logdd": PK.Theta.LOGDD, "logitdd": PK.Theta.LOGITDD}


class MPBoost(_LabelPairLoss):
    r"""MPBoost's magnitude-preserving exponential loss, every label pair of a query once.

    .. math::

        L(s) = \sum_q \sum_{i, j \in q,\, r_i > r_j} w_{ij} \, e^{-D_{ij} (s_i - s_j)},
        \qquad D_{ij} = \operatorname{dist}(r_i, r_j)

    ``dist`` is the directed distance function ``ddf``: ``"binary"`` (``D = 1``), ``"ldd"``
    (``alpha (r_i - r_j)``), ``"logdd"`` (``log(1 + lam |r_i - r_j|)``) or ``"logitdd"``
    (``1 / (1 + exp(-beta |r_i - r_j|))``); only the parameter of the chosen DDF is used. Each pair
    adds ``a = -D e`` to ``grad_i`` and ``-a`` to ``grad_j``, coupling ``D^2 e``, with
    ``e = exp(-D d)``. GentleBoost's per-round normalisation rescales the loss only, so it is left
    to the booster.

    Overflow guard: the exponent ``x = -D d`` is clipped at ``EXP_CLIP = 50``. Beyond it the loss
    continues along its tangent, ``e^50 (1 + x - 50)``, so loss and gradient stay consistent and
    finite (``a = -D e^50``), and the hessian keeps the curvature at the clip, ``D^2 e^50``.

    References
    ----------
    Zhu, Chen, Zhu, Wang, Wang, Chen (2009), "A general magnitude-preserving boosting algorithm for
    search ranking" (CIKM 2009): section 3.2 (the DDFs) and section 4 (the MPBoost algorithm).

    Examples
    --------
    >>> from customobj import MPBoost
    >>> grad, hess = MPBoost(ddf="ldd", alpha=0.5).grad_hess([0.0, 0.0, 0.0], [2, 0, 1], group=[3])
    >>> grad.tolist(), hess.tolist()
    ([-1.5, 1.5, 0.0], [1.25, 1.25, 0.5])
    """

    def __init__(self, *, ddf: str = "binary", alpha: float = 1.0, lam: float = 1.0, beta: float = 1.0) -> None:
        self.ddf = check_choice(ddf, "ddf", set(_DDF))
        self.alpha = check_positive(alpha, "alpha")
        self.lam = check_positive(lam, "lam")
        self.beta = check_positive(beta, "beta")

    def pair_spec(self) -> PK.PairSpec:
        p = {"binary": 1.0, "ldd": self.alpha, "logdd": self.lam, "logitdd": self.beta}[self.ddf]
        return PK.pair_spec(PK.PairKind.EXPONENTIAL, _DDF[self.ddf], p, 1.0)

    def check_prepared(self, prep: Prepared) -> None:
        # D enters the hessian squared (D^2 e^50): keep the largest distance within PARAM_LIMIT.
        super().check_prepared(prep)
        y = prep.labels
        if self.ddf == "ldd" and y.size and self.alpha * (y.max() - y.min()) > PARAM_LIMIT:
            raise ValueError(
                f"MPBoost(ddf='ldd'): the largest distance alpha * (max label - min label) = "
                f"{self.alpha * (y.max() - y.min()):g} exceeds {PARAM_LIMIT:g} (customobj._validation.PARAM_LIMIT); "
                "lower alpha or rescale the labels"
            )


_LABELED = ("all", "none", "single_label_queries")


class QBRank(Objective):
    r"""QBRank: preference pairs plus squared error on labelled rows.

    .. math::

        R(s) = w \sum_{(i, j) \in S} v_{ij} \tfrac{1}{2} \max(0, s_j - s_i + \tau_{ij})^2
        + (1 - w) \sum_{z \in L} w_z \tfrac{1}{2} (y_z - s_z)^2

    ``S`` the preference pairs (``i`` preferred to ``j``), ``L`` the labelled rows.

    Parameters
    ----------
    w : float in [0, 1]
        Weight of the preference part; ``1 - w`` weighs the squared error on labelled rows.
    margin : "grade" or float >= 0
        ``tau_ij``. ``"grade"``: ``y_i - y_j`` for label pairs and 1.0 for explicit ``pairs`` (the
        paper's defaults); a float: that margin for every pair.
    hessian : "exact" or "upper_bound"
        ``"exact"``: the diagonal of the true Hessian; an active pair (``d < tau``) adds
        ``w v`` to both rows and has coupling ``h_ij = w v`` (``v`` the pair weight), an inactive
        pair adds nothing. ``"upper_bound"``: the paper's bound, which replaces each active pair's
        block ``w v [[1, -1], [-1, 1]]`` by ``w v diag(2, 2)``: both rows get ``hess += 2 w v`` and,
        the bound being diagonal, there is no coupling, so ``pair_couplings`` returns three empty
        arrays (with the OLE rule ``L'' = sum h - 2 sum h_ij`` this reproduces the bound exactly).
        The bound is taken at the current scores: pairs inactive now add nothing.
    pairs : (m, 2) int array or None
        Explicit preferences, row ``pairs[k, 0]`` preferred to ``pairs[k, 1]``; rows may lie in
        different queries (clicks, editorial preferences).
    labeled : "all", "none", "single_label_queries" or bool mask of length n
        Rows of the squared-error term. ``"single_label_queries"`` keeps the rows of queries whose
        rows all share one label (including one-row queries): they give no label pairs, the
        paper's set ``L``.
    label_pairs : bool or None
        Whether the label pairs of each query (``y_i > y_j``) join the preference part. ``None``
        (default): only when ``pairs`` is not given, so explicit pairs *replace* label pairs;
        ``True`` adds them to explicit pairs; ``False`` uses explicit pairs only (with neither,
        QBRank is GBT on the labelled rows, as the paper notes). Groups are needed only for label
        pairs and ``labeled="single_label_queries"``.

    A row may appear in many pairs and as a labelled row; contributions add. Row weights scale
    squared-error terms by ``w_z`` and pair terms by ``(w_i + w_j) / 2``. The paper's line search
    for ``s_m`` and shrinkage belong to the booster.

    References
    ----------
    Zheng, Zha, Zhang, Chapelle, Chen, Sun (2007), "A general boosting method and its application to
    learning ranking functions for web search" (NIPS 2007), section 3 (objective, Hessian bound).

    Examples
    --------
    >>> from customobj import QBRank
    >>> grad, hess = QBRank(w=0.5).grad_hess([0.0, 0.0], [1, 0], group=[2])
    >>> grad.tolist(), hess.tolist()
    ([-1.0, 0.5], [1.0, 1.0])
    """

    pairwise = True
    w: float
    hessian: str
    margin: Union[str, float]
    pairs: Optional[np.ndarray]
    labeled: Union[str, np.ndarray]
    label_pairs: Optional[bool]

    def __init__(self, *, w: float = 0.5, margin: Union[str, float] = "grade", hessian: str = "exact",
                 pairs: Optional[npt.ArrayLike] = None, labeled: Union[str, npt.ArrayLike] = "all",
                 label_pairs: Optional[bool] = None) -> None:
        if isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise TypeError(f"w must be a real number in [0, 1], got {type(w).__name__}")
        w = check_real(w, "w")
        if not 0.0 <= w <= 1.0:
            raise ValueError(f"w must be in [0, 1], got {w!r}")
        self.w = float(w)
        if isinstance(margin, str):
            check_choice(margin, "margin", {"grade"})
            self.margin = margin
        else:
            self.margin = check_nonnegative(margin, "margin")
        self.hessian = check_choice(hessian, "hessian", {"exact", "upper_bound"})
        self.pairs = None if pairs is None else check_pairs_option(pairs)
        if isinstance(labeled, str):
            self.labeled = check_choice(labeled, "labeled", set(_LABELED))
        else:
            mask = np.asarray(labeled)
            if mask.dtype != np.bool_ or mask.ndim != 1:
                raise TypeError(f"labeled must be one of {list(_LABELED)} or a 1-D boolean mask, got {labeled!r}")
            mask = mask.copy()
            mask.setflags(write=False)
            self.labeled = mask
        if label_pairs is not None and not isinstance(label_pairs, (bool, np.bool_)):
            raise TypeError(f"label_pairs must be True, False or None, got {label_pairs!r}")
        self.label_pairs = None if label_pairs is None else bool(label_pairs)

    @property
    def _use_label_pairs(self) -> bool:
        return self.pairs is None if self.label_pairs is None else self.label_pairs

    @property
    def needs_group(self) -> bool:  # type: ignore[override]  # depends on the options
        return self._use_label_pairs or (isinstance(self.labeled, str) and self.labeled == "single_label_queries")

    def _theta(self):
        if self.margin == "grade":
            return PK.Theta.DIFF, 0.0, 1.0
        return PK.Theta.CONST, self.margin, self.margin

    def _state(self, prep):
        mode, p, explicit_tau = self._theta()
        lp = LabelPairs(prep.labels, prep.ptr) if self._use_label_pairs else None
        ex = None
        if self.pairs is not None:
            pairs_in_range(self.pairs, prep.n_rows)
            ex = ExplicitPairs(np.ascontiguousarray(self.pairs[:, 0]), np.ascontiguousarray(self.pairs[:, 1]),
                                np.full(self.pairs.shape[0], explicit_tau))
        lab_w = None
        mask = labeled_rows(self.labeled, prep)
        if self.w < 1.0 and mask.any():
            lab_w = (1.0 - self.w) * mask.astype(np.float64)
            if prep.weight is not None:
                lab_w *= prep.weight
        return QBRankState(lp, ex, lab_w, {})

    def pair_spec(self) -> PK.PairSpec:
        """Half the squared hinge times ``w``; the label pairs' margin from ``margin``; the hessian
        doubled under ``hessian="upper_bound"``."""
        mode, p, _ = self._theta()
        hmul = 2.0 if self.hessian == "upper_bound" else 1.0
        return PK.pair_spec(PK.PairKind.SQ_HINGE, mode, p, 0.5 * self.w, hmul)

    def relevance_pairs(self) -> RelevancePairs:
        """A ``TypeError``: explicit pairs and labelled rows have no per-row relevance the affine correction corrects."""
        raise explicit_pairs_refusal(self)

    def pair_source(self) -> PairSource:
        """Its listed pairs (``LISTED``), or ``NONE`` under the diagonal ``hessian="upper_bound"``."""
        return listed_source(self.pair_spec())

    def squared_error_weight(self, prep: Prepared) -> Optional[np.ndarray]:
        """``(1 - w)`` times the labelled rows' mask (and row weights), or ``None`` when no row is labelled."""
        return prep.state_for(self).labeled_weight

    def listed_pairs(self, prep: Prepared) -> Optional[ListedPairs]:
        """Its label and explicit pairs (cached); None under the diagonal ``hessian="upper_bound"``
        (no couplings) or without pairs."""
        if self.hessian == "upper_bound":
            return None
        spec = self.pair_spec()
        pairs = prep.state_for(self).pair_list(prep, spec.theta_mode, spec.p)
        return None if pairs is None else ListedPairs(pairs[0], pairs[1], pairs[2], _EMPTY, False, spec)

    def device_route(self) -> DeviceRoute:
        from . import _pairwise_route as R

        return DeviceRoute(R.qbrank, R.listed_couplings, R.qbrank)

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        lp, ex, lab_w = state.label_pairs, state.explicit, state.labeled_weight
        spec = self.pair_spec()
        w, use_w = kernel_weights(prep.weight)
        if lp is not None and self.w > 0.0:
            check_status(PK.label_pairs_grad_hess_parallel(scores, prep.labels, prep.ptr, lp.order, lp.lower, w,
                                                           use_w, spec, out_grad, out_hess), "QBRank")
        if ex is not None and self.w > 0.0:
            check_status(PK.pair_list_grad_hess(scores, *ex, _EMPTY, False, w, use_w, spec, out_grad, out_hess),
                         "QBRank")
        if lab_w is not None:
            squared_error_grad_hess(scores, prep.labels, lab_w, True, out_grad, out_hess)

    def _loss(self, scores, prep, state):
        lp, ex, lab_w = state.label_pairs, state.explicit, state.labeled_weight
        spec = self.pair_spec()
        w, use_w = kernel_weights(prep.weight)
        total = 0.0
        if lp is not None:
            total += checked_value(PK.label_pairs_loss(scores, prep.labels, prep.ptr, lp.order, lp.lower, w, use_w,
                                                     spec), "QBRank")
        if ex is not None:
            total += checked_value(PK.pair_list_loss(scores, *ex, _EMPTY, False, w, use_w, spec), "QBRank")
        if lab_w is not None:
            total += squared_error_loss(scores, prep.labels, lab_w, True)
        return total

    def _pair_couplings(self, scores, prep, state):
        return listed_couplings(self, scores, prep)
