"""Regression EM (Wang, Golbandi, Bendersky, Metzler, Najork, "Position Bias Estimation for Unbiased
Learning to Rank in Personal Search", WSDM 2018, sec. 4): the position-based click model
``P(click) = theta_k gamma(x)`` fitted by EM, with relevance ``gamma`` a gradient-boosted model.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from ._inputs import as_position, check_clicks, zero_based
from .._validation import _to_numpy, as_1d_float, as_weight, check_choice, check_int, check_positive
from ..objectives.pointwise import Logistic

__all__ = ["RegressionEM"]

#: Relevance and examination are kept inside (EPS, 1 - EPS): the posteriors divide by 1 - theta gamma.
EPS = 1e-6
#: Largest feature magnitude the libraries can hold (float32).
_FLOAT32_MAX = float(np.finfo(np.float32).max)
#: Largest sample weight passed to the libraries as it is (they hold weights as float32).
_FLOAT32_SAFE = 1e30
#: Most EM iterations (``n_iter``).
MAX_ITER = 10_000
#: LightGBM / XGBoost, as codes once the option is read.
LIGHTGBM, XGBOOST = 0, 1
_LIBRARIES = {"lightgbm": LIGHTGBM, "xgboost": XGBOOST}
#: Logistic(sigma=0.5): ``P(relevant) = sigmoid(score)``.
_LOGISTIC = Logistic(sigma=0.5)


def _sigmoid(s):
    return 0.5 * (1.0 + np.tanh(0.5 * s))


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


def relevance(margin):
    """``gamma``: ``P(R = 1)`` from the relevance model's raw scores, kept inside (EPS, 1 - EPS)."""
    return np.clip(_sigmoid(margin), EPS, 1.0 - EPS)


def m_step_theta(seen, count):
    """The M-step's examination per position (Wang et al. 2018, eq. 5): the mean posterior examination,
    ``seen[k] / count[k]`` (per-position sums of ``w P(E=1 | c)`` and of ``w``), kept inside (EPS, 1 - EPS).
    Distributed training sums ``seen`` and ``count`` over all rows first (``adapters.dask.train_regression_em``)."""
    return np.clip(seen / np.maximum(count, EPS), EPS, 1.0 - EPS)


def xgboost_em_params(lr, leaves, min_child, seed, extra):
    """The XGBoost parameters of the relevance model (LightGBM's names mapped, ``extra`` applied last)."""
    from ..adapters import xgboost_params

    return xgboost_params(_LOGISTIC, dict(dict(eta=lr, max_leaves=leaves, grow_policy="lossguide", max_depth=0,
                                               tree_method="hist", min_child_weight=min_child, seed=seed), **extra))


class RegressionEM:
    """Regression EM: position bias and relevance from clicks, relevance learned by GBDT.

    Each EM iteration: the E-step gives every row its posterior ``P(R = 1 | click, position)``
    (:func:`e_step`); the M-step sets ``theta_k`` to the mean posterior examination at position
    ``k`` and fits ``n_estimators`` more trees of the relevance model to the posteriors, continuing
    the previous trees (each row enters twice, as relevant with weight ``P(R=1)`` and as not relevant
    with weight ``1 - P(R=1)``: the cross entropy with soft labels, through ``customobj.Logistic``
    and the library's adapter). The paper samples binary labels instead; the soft labels are their
    expectation. Start: ``theta = 0.5``, ``gamma = 0.5``.

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

    Attributes
    ----------
    ranker_ : lightgbm.Booster or xgboost.Booster
        The relevance model; its raw score ranks (``predict``).
    n_trees_ : int
        Trees in ``ranker_`` (boosting rounds, counted on the model: ``params`` such as LightGBM's
        ``num_iterations`` may change how many each EM iteration adds); ``predict`` uses them all.
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

    def __init__(self, *, library: str = "lightgbm", n_iter: int = 10, n_estimators: int = 20,
                 learning_rate: float = 0.1, num_leaves: int = 31, min_child_samples: int = 20,
                 seed: int = 0, params: Optional[dict] = None) -> None:
        self.library = library
        self.n_iter = n_iter
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.params = params
        self.seed = seed

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in ("library", "n_iter", "n_estimators", "learning_rate", "num_leaves",
                                              "min_child_samples", "seed", "params")}

    def set_params(self, **params: Any) -> "RegressionEM":
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"{type(self).__name__} has no parameter {k!r}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        return type(self).__name__ + "(" + ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()) + ")"

    def _checked(self):
        lib = _LIBRARIES[check_choice(self.library, "library", set(_LIBRARIES))]
        return (lib, check_int(self.n_iter, "n_iter", minimum=1, maximum=MAX_ITER),
                check_int(self.n_estimators, "n_estimators", minimum=1, maximum=100_000),
                check_positive(self.learning_rate, "learning_rate"),
                check_int(self.num_leaves, "num_leaves", minimum=2, maximum=131_072),
                check_int(self.min_child_samples, "min_child_samples", minimum=0),
                check_int(self.seed, "seed", minimum=0), _checked_params(self.params))

    def fit(self, X: Any, y: npt.ArrayLike, *, position: npt.ArrayLike, first_position: int = 0,
            sample_weight: Optional[npt.ArrayLike] = None) -> "RegressionEM":
        """Fit on click rows: features ``X``, clicks ``y`` (0 / 1), display ``position``.

        Positions are 0-based (0 = top); ``first_position=1`` takes a log numbered from 1. A log with
        no row at the top position is refused: position 0 would have no examination estimate, and
        ``position_bias_`` (relative to it) would be meaningless."""
        lib, n_iter, n_est, lr, leaves, min_child, seed, extra = self._checked()
        clicks, pos, w = checked_rows(X, y, position, first_position, sample_weight)
        n_pos = int(pos.max(initial=-1)) + 1
        count = np.bincount(pos, weights=w, minlength=n_pos)
        theta = np.full(n_pos, 0.5)
        gamma = np.full(clicks.shape[0], 0.5)
        X2 = _stack(X)
        labels2 = np.concatenate([np.ones(clicks.shape[0]), np.zeros(clicks.shape[0])])
        model = None
        for _ in range(n_iter):
            exam, rel = e_step(clicks, theta[pos], gamma)
            theta = m_step_theta(np.bincount(pos, weights=w * exam, minlength=n_pos), count)
            weight2 = np.concatenate([w * rel, w * (1.0 - rel)])
            model = _fit_more(lib, model, X2, labels2, weight2, n_est, lr, leaves, min_child, seed, extra)
            gamma = relevance(_raw_predict(lib, model, X, 0))
        return self._fitted(lib, model, theta)

    def _fitted(self, lib, model, theta):
        """Set the fitted attributes (also from ``customobj.adapters.dask.train_regression_em``)."""
        self.ranker_ = model
        self.n_trees_ = _n_trees(lib, model)
        self.propensity_ = theta
        self.position_bias_ = theta / theta[0]
        self._lib = lib
        return self

    def predict(self, X: Any, *, num_trees: Optional[int] = None) -> np.ndarray:
        """Raw relevance scores (logits of ``gamma``): rank by them. ``num_trees``: score with the
        first trees only (default all ``n_trees_`` of the fitted model, whatever the parameters
        say now); early stopping on a validation curve picks it."""
        if not hasattr(self, "ranker_"):
            raise ValueError("this RegressionEM is not fitted yet: call fit first")
        total = self.n_trees_
        n = check_int(num_trees, "num_trees", minimum=1, maximum=total, allow_none=True)
        check_features(X)
        return _raw_predict(self._lib, self.ranker_, X, total if n is None else n)


def _stack(X):
    if hasattr(X, "tocsr"):
        import scipy.sparse as sp

        return sp.vstack([X, X]).tocsr()
    X = np.asarray(X)
    return np.concatenate([X, X])


def _checked_params(params):
    """``params`` as a dict of library parameters (str keys), without an objective of its own."""
    if params is None:
        return {}
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise TypeError(f"params must be a dict of library parameter names to values, got {type(params).__name__}")
    clash = sorted({"objective", "obj", "fobj"} & set(params))
    if clash:
        raise ValueError(f"params may not set {clash[0]!r}: RegressionEM trains its own soft-label objective")
    return dict(params)


class ConstantRelevance:
    """The relevance model of a log no tree can split (one row, constant or identical feature rows,
    features LightGBM bins into nothing): one logit for every row, the soft labels' weighted mean,
    refit at each EM iteration (the optimum the trees would approach). ``n_trees``: the rounds that
    trees would have taken, so ``n_trees_`` and ``predict(num_trees=)`` read as for a tree model.

    Examples
    --------
    >>> ConstantRelevance(0.5, 3).predict(np.zeros((2, 4))).tolist()
    [0.5, 0.5]
    """

    def __init__(self, margin: float, n_trees: int) -> None:
        self.margin = float(margin)
        self.n_trees = int(n_trees)

    def predict(self, X: Any) -> np.ndarray:
        return np.full(check_features(X), self.margin)

    def __repr__(self) -> str:
        return f"ConstantRelevance(margin={self.margin!r}, n_trees={self.n_trees})"


def _constant_more(model, labels2, weight2, n_est):
    """The next :class:`ConstantRelevance`: the logit of the soft labels' weighted mean."""
    p = float(np.clip(np.dot(weight2, labels2) / max(float(weight2.sum()), EPS), EPS, 1.0 - EPS))
    return ConstantRelevance(np.log(p / (1.0 - p)), (0 if model is None else model.n_trees) + n_est)


def _fit_more(lib, model, X2, labels2, weight2, n_est, lr, leaves, min_child, seed, extra):
    """``n_est`` more trees of the soft-label logistic fit, continuing ``model``; a
    :class:`ConstantRelevance` when LightGBM finds no feature to split (its internal error otherwise)."""
    from ..adapters import lightgbm_objective, xgboost_objective

    if isinstance(model, ConstantRelevance):
        return _constant_more(model, labels2, weight2, n_est)
    if lib == LIGHTGBM:
        import lightgbm as lgb

        params = dict(learning_rate=lr, num_leaves=leaves, min_data_in_leaf=min_child, seed=seed,
                      deterministic=True, verbose=-1)
        params.update(extra)
        data = lgb.Dataset(X2, labels2, weight=weight2, params=dict(params))
        if model is None:  # binned once, here: a feature LightGBM keeps has at least one bin
            data.construct()
            if not any(data.feature_num_bin(f) > 0 for f in range(data.num_feature())):
                return _constant_more(None, labels2, weight2, n_est)
        params["objective"] = lightgbm_objective(_LOGISTIC)
        return lgb.train(params, data, n_est, init_model=model, keep_training_booster=True)
    import xgboost as xgb

    params = xgboost_em_params(lr, leaves, min_child, seed, extra)
    return xgb.train(params, xgb.DMatrix(X2, labels2, weight=weight2), n_est, obj=xgboost_objective(_LOGISTIC),
                     xgb_model=model)


def _n_trees(lib, model):
    """Boosting rounds in the fitted model, counted on the model itself."""
    if isinstance(model, ConstantRelevance):
        return model.n_trees
    return int(model.current_iteration() if lib == LIGHTGBM else model.num_boosted_rounds())


def _raw_predict(lib, model, X, n_trees):
    if isinstance(model, ConstantRelevance):
        return model.predict(X)
    if lib == LIGHTGBM:
        return np.asarray(model.predict(X, raw_score=True, num_iteration=n_trees), dtype=np.float64)
    import xgboost as xgb

    return np.asarray(model.predict(xgb.DMatrix(X), output_margin=True, iteration_range=(0, n_trees)),
                      dtype=np.float64)
