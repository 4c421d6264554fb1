"""Regression EM (Wang, Golbandi, Bendersky, Metzler, Najork, "Position Bias Estimation for Unbiased
Learning to Rank in Personal Search", WSDM 2018, sec. 4): the position-based click model
``P(click) = theta_k gamma(x)`` fitted by EM, with relevance ``gamma`` a gradient-boosted model.
"""
from __future__ import annotations

import copy
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from ._inputs import as_position, check_clicks, zero_based
from .relevance_model import (EPS, FLOAT32_MAX as _FLOAT32_MAX, LIGHTGBM, LOGISTIC as _LOGISTIC, XGBOOST,
                              BoostedRelevance, ConstantRelevance, check_relevance_model, n_trees as _n_trees,
                              raw_predict as _raw_predict, relevance, xgboost_em_params)
from .._validation import _to_numpy, as_1d_float, as_weight, check_int

__all__ = ["RegressionEM"]
__all__ += ["EPS", "LIGHTGBM", "XGBOOST", "ConstantRelevance", "relevance", "xgboost_em_params"]  # the Dask EM's

#: Largest sample weight passed to the libraries as it is (they hold weights as float32).
_FLOAT32_SAFE = 1e30
#: Most EM iterations (``n_iter``).
MAX_ITER = 10_000


def e_step(clicks, theta_at, gamma):
    """Posteriors of the PBM given a row's click (Wang et al. 2018, eq. 4): ``(P(E=1 | c), P(R=1 | c))``.

    .. math::

        P(E{=}1 \\mid c{=}0) = \\frac{\\theta (1 - \\gamma)}{1 - \\theta\\gamma},\\qquad
        P(R{=}1 \\mid c{=}0) = \\frac{(1 - \\theta)\\gamma}{1 - \\theta\\gamma},

    and both are 1 for a click.

    Examples
    --------
    >>> e, r = e_step(np.array([1.0, 0.0]), np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    >>> e.round(4).tolist(), r.round(4).tolist()
    ([1.0, 0.3333], [1.0, 0.3333])
    """
    denom = 1.0 - theta_at * gamma
    exam = np.where(clicks > 0, 1.0, theta_at * (1.0 - gamma) / denom)
    rel = np.where(clicks > 0, 1.0, (1.0 - theta_at) * gamma / denom)
    return exam, rel


def check_features(X: Any, n: Optional[int] = None) -> int:
    """``X`` as the relevance model reads it: a 2-D array of real numbers (NaN a missing value, as
    LightGBM and XGBoost take it; +-inf and magnitudes beyond float32's 3.4e38 refused), a pandas DataFrame or a scipy sparse matrix, with at
    least one column (and ``n`` rows when given); returns its row count."""
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):
        shape = X.shape
        values = np.asarray(X.tocsr().data)
    else:
        values = _to_numpy(X, "X")
        shape = values.shape
        if values.dtype.kind not in "iuf":
            raise TypeError(f"X must hold real numbers (features), got dtype {values.dtype}")
    if len(shape) != 2 or shape[1] == 0:
        raise ValueError(f"X must be 2-D with at least one feature column (one row per click row), got shape {shape}")
    if n is not None and shape[0] != n:
        raise ValueError(f"X has {shape[0]} rows but y has {n}")
    big = np.flatnonzero(np.abs(values.ravel()) > _FLOAT32_MAX)
    if big.size:
        raise ValueError(f"X holds {values.ravel()[big[0]]}: features must be finite and within float32's range "
                         f"(|x| <= {_FLOAT32_MAX:.3g}), which LightGBM and XGBoost use; NaN marks a missing value")
    return int(shape[0])


def checked_rows(X, y, position, first_position, sample_weight):
    """``fit``'s row inputs checked and converted: ``(clicks, 0-based positions, weights)`` (ones when none)."""
    clicks = as_1d_float(y, "y")
    check_clicks(clicks, "y")
    first_position = check_int(first_position, "first_position", minimum=0)
    pos = zero_based(as_position(position), first_position)
    if pos.shape[0] != clicks.shape[0]:
        raise ValueError(f"position has {pos.shape[0]} entries but y has {clicks.shape[0]} rows")
    if clicks.shape[0] == 0:
        raise ValueError("y is empty: a click log needs at least one row")
    check_features(X, clicks.shape[0])
    w = as_weight(sample_weight, clicks.shape[0], name="sample_weight")
    if w is None:
        return clicks, pos, np.ones(clicks.shape[0])
    top = float(w.max())
    if not top > 0.0:
        raise ValueError("sample_weight is 0 on every row: no row would count")
    # the libraries store weights as float32 (largest 3.4e38): larger ones, which only matter relative
    # to each other, are divided by their maximum
    return clicks, pos, w / top if top > _FLOAT32_SAFE else w


def m_step_theta(seen, count):
    """The M-step's examination per position (Wang et al. 2018, eq. 5): the mean posterior examination,
    ``seen[k] / count[k]`` (per-position sums of ``w P(E=1 | c)`` and of ``w``), kept inside (EPS, 1 - EPS).
    Distributed training sums ``seen`` and ``count`` over all rows first (``adapters.dask.train_regression_em``)."""
    return np.clip(seen / np.maximum(count, EPS), EPS, 1.0 - EPS)


class RegressionEM:
    """Regression EM: position bias and relevance from clicks, relevance learned by GBDT.

    Each EM iteration: the E-step gives every row its posterior ``P(R = 1 | click, position)``
    (:func:`e_step`); the M-step sets ``theta_k`` to the mean posterior examination at position
    ``k`` and fits the relevance model to the posteriors (soft labels). The default model,
    :class:`customobj.clicks.relevance_model.BoostedRelevance`, adds ``n_estimators`` trees each
    iteration, continuing the previous trees (each row enters twice, as relevant with weight
    ``P(R=1)`` and as not relevant with weight ``1 - P(R=1)``: the cross entropy with soft labels,
    through ``customobj.Logistic``). The paper samples binary labels instead; the soft labels are
    their expectation. Start: ``theta = 0.5``, ``gamma = 0.5``.

    Parameters
    ----------
    library : "lightgbm" or "xgboost"
    n_iter : int >= 1
        EM iterations.
    n_estimators : int >= 1
        Trees added per iteration.
    learning_rate, num_leaves, min_child_samples :
        LightGBM's names (XGBoost: ``eta``, ``max_leaves`` with ``grow_policy="lossguide"``,
        ``min_child_weight``).
    seed : int
    params : dict, optional
        Further parameters of the library, in its own names, applied last (for example LightGBM's
        ``lambda_l2``, ``feature_fraction``; XGBoost's ``lambda``, ``colsample_bytree``). The
        objective is this class's: ``objective`` / ``obj`` are refused.
    relevance_model : RelevanceLearner, optional
        The relevance model: any object with ``fit(X, y, sample_weight=)`` (``y`` the posterior
        relevance in [0, 1]) and ``predict(X)`` (``P(R = 1)``), e.g. a scikit-learn regressor; a copy
        is fitted once per EM iteration. Default (None): ``BoostedRelevance`` built from the options
        above, which configure only it.

    Attributes
    ----------
    ranker_ : lightgbm.Booster, xgboost.Booster or the fitted relevance_model
        The relevance model; its raw score ranks (``predict``).
    relevance_model_ : RelevanceLearner or None
        The fitted relevance model (None when fitted on Dask).
    n_trees_ : int or None
        Trees in ``ranker_`` (boosting rounds, counted on the model: ``params`` such as LightGBM's
        ``num_iterations`` may change how many each EM iteration adds); ``predict`` uses them all.
        None for a ``relevance_model`` of one's own.
    propensity_ : ndarray
        ``theta_k`` per position, 0-based (the top, position 0, first).
    position_bias_ : ndarray
        ``theta_k / theta_0``: examination relative to the top.

    Examples
    --------
    >>> import customobj
    >>> d = customobj.data.synthetic(30, 10, 5, seed=0)
    >>> log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=4, seed=0)
    >>> em = customobj.RegressionEM(n_iter=2, n_estimators=3).fit(log.X, log.y, position=log.position)
    >>> float(em.position_bias_[0]), em.predict(log.X).shape == log.y.shape
    (1.0, True)
    """

    _OPTIONS = ("library", "n_iter", "n_estimators", "learning_rate", "num_leaves", "min_child_samples", "seed",
                "params", "relevance_model")

    def __init__(self, *, library: str = "lightgbm", n_iter: int = 10, n_estimators: int = 20,
                 learning_rate: float = 0.1, num_leaves: int = 31, min_child_samples: int = 20,
                 seed: int = 0, params: Optional[dict] = None, relevance_model: Any = None) -> None:
        self.library = library
        self.n_iter = n_iter
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.params = params
        self.seed = seed
        self.relevance_model = relevance_model

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in self._OPTIONS}

    def set_params(self, **params: Any) -> "RegressionEM":
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"{type(self).__name__} has no parameter {k!r}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        return type(self).__name__ + "(" + ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()) + ")"

    def _boosted(self) -> BoostedRelevance:
        return BoostedRelevance(library=self.library, n_estimators=self.n_estimators, learning_rate=self.learning_rate,
                                num_leaves=self.num_leaves, min_child_samples=self.min_child_samples, seed=self.seed,
                                params=self.params)

    def _checked(self):
        """``(library code, n_iter, n_estimators, learning_rate, num_leaves, min_child_samples, seed, params)``
        (the Dask EM's settings; ``relevance_model`` is checked too)."""
        n_iter = check_int(self.n_iter, "n_iter", minimum=1, maximum=MAX_ITER)
        if self.relevance_model is not None:
            check_relevance_model(self.relevance_model)
        lib, *rest = self._boosted().checked()
        return (lib, n_iter, *rest)

    def _learner(self) -> Any:
        """A fresh relevance model for one fit: a copy of ``relevance_model`` (or the default)."""
        return self._boosted() if self.relevance_model is None else copy.deepcopy(self.relevance_model)

    def fit(self, X: Any, y: npt.ArrayLike, *, position: npt.ArrayLike, first_position: int = 0,
            sample_weight: Optional[npt.ArrayLike] = None) -> "RegressionEM":
        """Fit on click rows: features ``X``, clicks ``y`` (0 / 1), display ``position``.

        Positions are 0-based (0 = top); ``first_position=1`` takes a log numbered from 1. A log with
        no row at the top position is refused: position 0 would have no examination estimate, and
        ``position_bias_`` (relative to it) would be meaningless."""
        n_iter = self._checked()[1]
        clicks, pos, w = checked_rows(X, y, position, first_position, sample_weight)
        n_pos = int(pos.max(initial=-1)) + 1
        count = np.bincount(pos, weights=w, minlength=n_pos)
        theta = np.full(n_pos, 0.5)
        gamma = np.full(clicks.shape[0], 0.5)
        learner = self._learner()
        for _ in range(n_iter):
            exam, rel = e_step(clicks, theta[pos], gamma)
            theta = m_step_theta(np.bincount(pos, weights=w * exam, minlength=n_pos), count)
            learner.fit(X, rel, sample_weight=w)
            gamma = learned_relevance(learner, X)
        return self._fitted_learner(learner, theta)

    def _fitted_learner(self, learner, theta):
        if isinstance(learner, BoostedRelevance):
            learner.forget_rows()
            self._fitted(learner._lib, learner.booster_, theta)
        else:
            self._fitted(None, learner, theta)
        self.relevance_model_ = learner
        return self

    def _fitted(self, lib, model, theta):
        """Set the fitted attributes (also from ``customobj.adapters.dask.train_regression_em``); ``lib``
        None: ``model`` is a relevance model of the user's."""
        self.ranker_ = model
        self.n_trees_ = None if lib is None else _n_trees(lib, model)
        self.relevance_model_ = None
        self.propensity_ = theta
        self.position_bias_ = theta / theta[0]
        self._lib = lib
        return self

    def predict(self, X: Any, *, num_trees: Optional[int] = None) -> np.ndarray:
        """Raw relevance scores (logits of ``gamma``): rank by them. ``num_trees``: score with the
        first trees only (default all ``n_trees_`` of the fitted model, whatever the parameters
        say now); early stopping on a validation curve picks it. A ``relevance_model`` of one's own
        takes no ``num_trees``."""
        if not hasattr(self, "ranker_"):
            raise ValueError("this RegressionEM is not fitted yet: call fit first")
        check_features(X)
        if self._lib is None:
            if num_trees is not None:
                raise ValueError("num_trees applies to the default boosted relevance model, not to "
                                 f"relevance_model={type(self.ranker_).__name__}")
            gamma = learned_relevance(self.ranker_, X)
            return np.log(gamma) - np.log1p(-gamma)
        total = self.n_trees_
        n = check_int(num_trees, "num_trees", minimum=1, maximum=total, allow_none=True)
        return _raw_predict(self._lib, self.ranker_, X, total if n is None else n)


def learned_relevance(learner: Any, X: Any) -> np.ndarray:
    """``gamma``: the relevance model's ``P(R = 1)`` per row, checked (one finite value per row) and
    kept inside (EPS, 1 - EPS)."""
    if isinstance(learner, BoostedRelevance):
        return relevance(learner.raw(X))
    gamma = np.asarray(learner.predict(X), dtype=np.float64).reshape(-1)
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    if gamma.shape[0] != n or not np.all(np.isfinite(gamma)):
        raise ValueError(f"relevance_model.predict must give one finite relevance per row ({n}), got "
                         f"{gamma.shape[0]} values" + ("" if np.all(np.isfinite(gamma)) else " with NaN or inf"))
    return np.clip(gamma, EPS, 1.0 - EPS)
