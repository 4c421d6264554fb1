"""Pointwise losses (Friedman 2001; Burges 2010 sec. 6; Chapelle 2007; Li, Burges, Wu 2007): one term
per row, no query structure needed."""
from __future__ import annotations

from typing import ClassVar, Optional

import numpy as np

from .._validation import SCORE_LIMIT, as_scores, check_int, check_positive
from ._arrays import kernel_weights
from .base import DeviceRoute, Objective, Prepared
from . import _pointwise_kernels as K
from ._pointwise_terms import RowKind

__all__ = ["SquaredError", "Logistic", "SquaredHinge", "McRank"]

#: Largest number of McRank classes (one score column per grade): 1024 grades, far beyond any
#: editorial scale; more would mean a regression target, not grades.
MAX_CLASSES = 1024


class _RowLoss(Objective):
    """A loss of one term a row of a :class:`~._pointwise_terms.RowKind` (``_ROW_KIND``), with the
    parameter :meth:`_param`: its CPU kernels are ``_pointwise_kernels.rows_grad_hess`` / ``rows_loss``
    over the weights of :meth:`_row_weights`; its GPU route is ``_pointwise_route.<_ROUTE>`` (imported
    on use). McRank, with K outputs a row, brings its own kernels."""

    _ROW_KIND: ClassVar[RowKind]
    _ROUTE: ClassVar[str]
    #: Its route also writes each query's loss (``DeviceRoute.grad_hess_loss``; not McRank's).
    _PER_QUERY_COST: ClassVar[bool] = True

    def _param(self) -> float:
        return 0.0

    def _row_weights(self, prep, state):
        """The prepared weights in kernel form (:func:`~customobj.objectives._arrays.kernel_weights`)."""
        return kernel_weights(prep.weight)

    def device_route(self) -> DeviceRoute:
        from . import _pointwise_route as R

        route = getattr(R, self._ROUTE)
        return DeviceRoute(route, None, route if self._PER_QUERY_COST else None)

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        w, use_w = self._row_weights(prep, state)
        K.rows_grad_hess(int(self._ROW_KIND), scores, prep.labels, w, use_w, self._param(), out_grad, out_hess)

    def _loss(self, scores, prep, state):
        w, use_w = self._row_weights(prep, state)
        return K.rows_loss(int(self._ROW_KIND), scores, prep.labels, w, use_w, self._param())


class SquaredError(_RowLoss):
    r"""Least squares on the labels: MART / GBT regression.

    .. math::

        L(s) = \sum_i w_i \tfrac{1}{2} (s_i - y_i)^2, \qquad
        \frac{\partial L}{\partial s_i} = w_i (s_i - y_i), \qquad
        \frac{\partial^2 L}{\partial s_i^2} = w_i

    References
    ----------
    Friedman (2001), "Greedy function approximation: a gradient boosting machine", least-squares
    boosting; the GBT baseline of Zheng et al. (2007), "A general boosting method and its
    application to learning ranking functions for web search", experiments.

    Examples
    --------
    >>> from customobj import SquaredError
    >>> grad, hess = SquaredError().grad_hess([0.5, 2.0], [1.0, 2.0])
    >>> grad.tolist(), hess.tolist()
    ([-0.5, 0.0], [1.0, 1.0])
    """

    _ROW_KIND = RowKind.SQUARED_ERROR
    _ROUTE = "SQUARED_ERROR"


def _binary_labels(y):
    """Map ``{-1, +1}`` labels to ``{0, 1}`` (``{0, 1}`` pass through; other values are rejected later)."""
    if y.size and y.min() < 0:
        if not np.all((y == -1.0) | (y == 1.0)):
            bad = int(np.flatnonzero((y != -1.0) & (y != 1.0))[0])
            raise ValueError(
                f"labels must be binary, {{0, 1}} or {{-1, +1}}; found {y[bad]} at row {bad} among -1 labels"
            )
        return (y > 0).astype(np.float64)
    return y


class _BinaryObjective(_RowLoss):
    """Shared label handling of the two-class losses: ``t = 2 y - 1`` with ``y`` in ``{0, 1}``.

    ``prepare`` also accepts ``{-1, +1}`` labels and maps them to ``{0, 1}`` (also inside a ``Sum``,
    whose other parts then see the ``{0, 1}`` labels).
    """

    def _convert_labels(self, labels):
        return _binary_labels(labels)

    def check_prepared(self, prep: Prepared) -> None:
        y = prep.labels
        bad = np.flatnonzero((y != 0.0) & (y != 1.0))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"{type(self).__name__} needs binary labels {{0, 1}} or {{-1, +1}}; found {y[k]} at row {k}")
        super().check_prepared(prep)

    def _row_weights(self, prep, state):
        if state is not None:
            return state, True
        return kernel_weights(prep.weight)


class Logistic(_BinaryObjective):
    r"""MART's two-class logistic loss, labels ``y`` in ``{0, 1}`` (or ``{-1, +1}``), ``t = 2 y - 1``.

    .. math::

        L(s) = \sum_i w_i \log\bigl(1 + e^{-2 t_i \sigma s_i}\bigr), \qquad
        \frac{\partial L}{\partial s_i} = -w_i u_i, \qquad
        \frac{\partial^2 L}{\partial s_i^2} = w_i |u_i| (2 \sigma - |u_i|), \qquad
        u_i = \frac{2 t_i \sigma}{1 + e^{2 t_i \sigma s_i}}

    The hessian is computed as ``4 sigma^2 p (1 - p)`` so it stays finite and >= 0 for any score.

    Parameters
    ----------
    sigma : float > 0
        Sigmoid steepness.
    balanced : bool
        Burges 2010, sec. 6.1: multiply each row's weight by ``1 / n_pos`` (positive rows) or
        ``1 / n_neg`` (negative rows), where ``n_pos`` / ``n_neg`` count the rows of the whole
        prepared data set (not per query; user weights are not summed). User weights still multiply.

    References
    ----------
    Burges (2010), "From RankNet to LambdaRank to LambdaMART: an overview", section 6 (6.1 for
    ``balanced``); Friedman (2001), two-class logistic regression boosting.

    Examples
    --------
    >>> from customobj import Logistic
    >>> grad, hess = Logistic(sigma=1.0).grad_hess([0.0, 1.0], [1, 0])
    >>> grad.round(4).tolist(), hess.round(4).tolist()
    ([-1.0, 1.7616], [1.0, 0.42])
    """

    def __init__(self, *, sigma: float = 1.0, balanced: bool = False) -> None:
        self.sigma = check_positive(sigma, "sigma")
        if not isinstance(balanced, (bool, np.bool_)):
            raise TypeError(f"balanced must be True or False, got {balanced!r}")
        self.balanced = bool(balanced)

    def _state(self, prep):
        if not self.balanced:
            return None
        pos = prep.labels > 0.5
        n_pos = int(pos.sum())
        n_neg = prep.n_rows - n_pos
        w = np.where(pos, 1.0 / max(n_pos, 1), 1.0 / max(n_neg, 1))
        if prep.weight is not None:
            w = w * prep.weight
        return np.ascontiguousarray(w, dtype=np.float64)

    _ROW_KIND = RowKind.LOGISTIC
    _ROUTE = "LOGISTIC"

    def _param(self) -> float:
        return self.sigma


class SquaredHinge(_BinaryObjective):
    r"""The L2-SVM loss trained in the primal, labels ``{0, 1}`` (or ``{-1, +1}``), ``t = 2 y - 1``.

    .. math::

        L(s) = \sum_i w_i C \max(0, 1 - t_i s_i)^2, \qquad
        \frac{\partial L}{\partial s_i} = -2 w_i C t_i \max(0, 1 - t_i s_i), \qquad
        \frac{\partial^2 L}{\partial s_i^2} = 2 w_i C \, [t_i s_i < 1]

    The hessian is Chapelle's generalised Hessian: the loss is not twice differentiable at
    ``t s = 1``, where it is taken as 0.

    Parameters
    ----------
    C : float > 0
        The loss constant (the SVM's ``C``).

    References
    ----------
    Chapelle (2007), "Large scale support vector machines" (slides), "Linear SVM classifier:
    objective function" (squared hinge, primal training).

    Examples
    --------
    >>> from customobj import SquaredHinge
    >>> grad, hess = SquaredHinge(C=1.0).grad_hess([0.5, -2.0], [1, 0])
    >>> grad.tolist(), hess.tolist()
    ([-1.0, 0.0], [2.0, 0.0])
    """

    def __init__(self, *, C: float = 1.0) -> None:
        self.C = check_positive(C, "C")

    _ROW_KIND = RowKind.SQUARED_HINGE
    _ROUTE = "SQUARED_HINGE"

    def _param(self) -> float:
        return self.C


class McRank(_RowLoss):
    r"""McRank: ranking by multiclass classification, ``K`` outputs (one per grade) per row.

    .. math::

        L(f) = -\sum_i w_i \log p_{i y_i}, \qquad p_{ik} = \frac{e^{f_{ik}}}{\sum_l e^{f_{il}}},
        \qquad \frac{\partial L}{\partial f_{ik}} = w_i (p_{ik} - [y_i = k]), \qquad
        \frac{\partial^2 L}{\partial f_{ik}^2} = w_i p_{ik} (1 - p_{ik})

    Scores, grad and hess have shape ``(n, K)``; the hessian is the diagonal, as LightGBM /
    XGBoost multiclass take it. The softmax subtracts each row's
    maximum, so any finite scores work. Rank with :meth:`predict_relevance`, the expected grade.

    Parameters
    ----------
    n_classes : int in ``2..MAX_CLASSES`` (1024) or None
        ``K``. Given, ``n_outputs == K`` at once and labels above ``K - 1`` are rejected. ``None``:
        ``K = max(max label + 1, 2)`` is inferred by the first ``prepare`` and then kept
        (``n_outputs`` is ``None`` until then, so adapters that need ``num_class`` before seeing
        data should pass ``n_classes``); a later data set with a grade ``>= K`` raises ValueError.

    References
    ----------
    Li, Burges, Wu (2007), "McRank: learning to rank using multiple classification and gradient
    boosting" (NIPS 2007); analysed by Xia, Zhai, Wang, "Analysis of regression
    tree fitting algorithms in learning to rank".

    Examples
    --------
    >>> import numpy as np
    >>> from customobj import McRank
    >>> grad, hess = McRank(n_classes=2).grad_hess(np.zeros((2, 2)), [1, 0])
    >>> grad.tolist(), hess.tolist()
    ([[0.5, -0.5], [-0.5, 0.5]], [[0.25, 0.25], [0.25, 0.25]])
    """

    integer_labels = True

    def __init__(self, *, n_classes: Optional[int] = None) -> None:
        self.n_classes = check_int(n_classes, "n_classes", minimum=2, maximum=MAX_CLASSES, allow_none=True)
        self._inferred: Optional[int] = None

    @property
    def n_outputs(self) -> Optional[int]:  # type: ignore[override]  # None until K is inferred
        return self.n_classes if self.n_classes is not None else self._inferred

    def check_prepared(self, prep: Prepared) -> None:
        super().check_prepared(prep)
        top = int(prep.labels.max()) if prep.labels.size else 0
        if top >= MAX_CLASSES:
            raise ValueError(
                f"labels has grade {top} but McRank allows at most {MAX_CLASSES} classes (grades "
                f"0..{MAX_CLASSES - 1}, customobj.objectives.pointwise.MAX_CLASSES); rank by regression instead"
            )
        if self.n_classes is not None:
            if top >= self.n_classes:
                raise ValueError(f"labels has grade {top} but McRank(n_classes={self.n_classes}) allows 0..{self.n_classes - 1}")
        elif self._inferred is None:
            self._inferred = max(top + 1, 2)
        elif top >= self._inferred:
            raise ValueError(
                f"labels has grade {top} but this McRank inferred n_classes={self._inferred} from earlier data; "
                "pass n_classes= explicitly"
            )

    def _check_scores(self, scores, prep):
        if self.n_outputs is None:  # K is learnt from the labels (also of a Prepared built elsewhere)
            self.check_prepared(prep)
        k = self.n_outputs
        s = as_scores(scores, prep.n_rows, allow_2d=True, max_abs=SCORE_LIMIT)
        if s.ndim != 2 or s.shape[1] != k:
            raise ValueError(f"scores must have shape (n_rows, {k}) for McRank with {k} classes, got {s.shape}")
        return s

    _ROUTE = "mcrank"
    _PER_QUERY_COST = False

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        K.mcrank_grad_hess(scores, prep.labels, *self._row_weights(prep, state), out_grad, out_hess)

    def _loss(self, scores, prep, state):
        return K.mcrank_loss(scores, prep.labels, *self._row_weights(prep, state))

    def predict_relevance(self, raw_scores: np.ndarray) -> np.ndarray:
        """Expected grade ``sum_k k p_k`` of each row (the McRank ranking score), shape ``(n,)``."""
        s = as_scores(raw_scores, allow_2d=True, name="raw_scores")
        if s.ndim != 2:
            raise ValueError(f"raw_scores must have shape (n_rows, n_classes), got {s.shape}")
        if self.n_outputs is not None and s.shape[1] != self.n_outputs:
            raise ValueError(f"raw_scores has {s.shape[1]} columns but McRank has {self.n_outputs} classes")
        return self.expected_grade(s)

    @staticmethod
    def expected_grade(raw_scores: np.ndarray) -> np.ndarray:
        """Expected grade of each row under the softmax of its ``K`` scores: McRank's ranking score.

        .. math:: r_i = \\sum_{k=0}^{K-1} k\\, p_{ik}, \\qquad p_{ik} = \\frac{e^{f_{ik}}}{\\sum_j e^{f_{ij}}}

        The one home of this score: the adapters, the OLE booster and ``compare`` all rank McRank's
        ``(n, K)`` outputs with it. Unlike :meth:`predict_relevance` it does not check the number of
        columns against a fitted ``K`` (callers that hold raw library outputs have no McRank at hand).
        Li, Burges, Wu (2007), "McRank: learning to rank using multiple classification and gradient
        boosting" (NIPS 2007): rank by the expected relevance.

        Parameters
        ----------
        raw_scores : array of shape (n, K)
            One score per class (grade) and row; any finite values.

        Returns
        -------
        ndarray of shape (n,), float64

        Examples
        --------
        >>> import numpy as np
        >>> McRank.expected_grade(np.array([[0.0, 0.0], [0.0, np.log(3.0)]])).round(6).tolist()
        [0.5, 0.75]
        """
        s = np.ascontiguousarray(raw_scores, dtype=np.float64)
        if s.ndim != 2:
            raise ValueError(f"raw_scores must have shape (n_rows, n_classes), got {s.shape}")
        out = np.empty(s.shape[0], dtype=np.float64)
        K.mcrank_expected_grade(s, out)
        return out
