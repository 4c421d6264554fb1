"""The relevance model of the EM click models (:class:`customobj.RegressionEM`, :class:`customobj.clicks.TrustEM`):
the :class:`RelevanceLearner` protocol they call once per EM iteration, and its default,
:class:`BoostedRelevance` (LightGBM or XGBoost with customobj's soft-label logistic loss, called
directly: nothing here imports ``customobj.adapters``).
"""
from __future__ import annotations

from typing import Any, Optional, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .._validation import check_choice, check_int, check_positive
from ..objectives.pointwise import Logistic

__all__ = ["RelevanceLearner", "BoostedRelevance", "ConstantRelevance", "relevance", "check_relevance_model"]

#: Relevance is kept inside (EPS, 1 - EPS): the posteriors divide by 1 - theta gamma.
EPS = 1e-6
#: Largest feature magnitude the libraries can hold (float32).
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: LightGBM / XGBoost, as codes once the option is read.
LIGHTGBM, XGBOOST = 0, 1
LIBRARIES = {"lightgbm": LIGHTGBM, "xgboost": XGBOOST}
#: Logistic(sigma=0.5): ``P(relevant) = sigmoid(score)``.
LOGISTIC = Logistic(sigma=0.5)


@runtime_checkable
class RelevanceLearner(Protocol):
    """What an EM click model needs of its relevance model, called once per EM iteration:
    ``fit(X, y, sample_weight=w)`` with ``y`` the rows' posterior relevance ``P(R = 1 | click)`` in
    [0, 1] (soft labels), and ``predict(X)``: ``P(R = 1)`` per row, in [0, 1]. A scikit-learn
    regressor qualifies (it fits the soft labels by squared error); the EM copies the learner it is
    given before fitting, so the same one can serve several fits."""

    def fit(self, X: Any, y: np.ndarray, sample_weight: Optional[np.ndarray] = None) -> Any: ...

    def predict(self, X: Any) -> Any: ...


def relevance(margin):
    """``gamma``: ``P(R = 1)`` from the relevance model's raw scores, kept inside (EPS, 1 - EPS)."""
    return np.clip(0.5 * (1.0 + np.tanh(0.5 * margin)), EPS, 1.0 - EPS)


class _SoftLabelLoss:
    """LightGBM's and XGBoost's custom objective ``(preds, data) -> (grad, hess)``: customobj's
    ``Logistic(sigma=0.5)`` on the stacked soft labels, prepared once (what the adapters would compute,
    without them). Weights are applied here: the libraries do not weight a custom objective's terms."""

    def __init__(self, labels: np.ndarray, weight: np.ndarray) -> None:
        # the weights as the libraries hold them (float32), which is what the adapters read back
        self.prep = LOGISTIC.prepare(labels, None, weight.astype(np.float32).astype(np.float64))

    def __call__(self, preds: Any, data: Any) -> tuple:
        grad, hess = LOGISTIC.grad_hess_prepared(np.asarray(preds, dtype=np.float64), self.prep)
        return grad.astype(np.float32), hess.astype(np.float32)  # the libraries' precision, as the adapters hand it


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
        return np.full(_n_rows(X), self.margin)

    def __repr__(self) -> str:
        return f"ConstantRelevance(margin={self.margin!r}, n_trees={self.n_trees})"


def _n_rows(X):
    return int(X.shape[0]) if hasattr(X, "shape") else len(X)


def _stack(X):
    if hasattr(X, "tocsr"):
        import scipy.sparse as sp

        return sp.vstack([X, X]).tocsr()
    X = np.asarray(X)
    return np.concatenate([X, X])


def checked_params(params):
    """``params`` as a dict of library parameters (str keys), without an objective of its own."""
    if params is None:
        return {}
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise TypeError(f"params must be a dict of library parameter names to values, got {type(params).__name__}")
    clash = sorted({"objective", "obj", "fobj"} & set(params))
    if clash:
        raise ValueError(f"params may not set {clash[0]!r}: RegressionEM trains its own soft-label objective")
    return dict(params)


def xgboost_em_params(lr, leaves, min_child, seed, extra):
    """The XGBoost parameters of the relevance model (LightGBM's names mapped, ``extra`` applied last;
    ``base_score=0`` so the loss sees the true margin, no default metric for a custom objective)."""
    out = dict(eta=lr, max_leaves=leaves, grow_policy="lossguide", max_depth=0, tree_method="hist",
               min_child_weight=min_child, seed=seed)
    out.update(extra)
    out.setdefault("base_score", 0.0)
    out.setdefault("disable_default_eval_metric", 1)
    return out


class BoostedRelevance:
    """The default relevance model: gradient-boosted trees of LightGBM or XGBoost fitted to soft labels
    by cross entropy (each row enters twice, relevant with weight ``w y`` and not with ``w (1 - y)``,
    through ``customobj.Logistic``). Each ``fit`` adds ``n_estimators`` trees to the model of the
    previous calls (the EM continues its trees; scikit-learn's ``warm_start``): a fresh copy starts anew.

    Parameters: :class:`customobj.RegressionEM`'s of the same names.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> m = BoostedRelevance(n_estimators=2).fit(X, (X[:, 0] > 0) * 0.8 + 0.1)
    >>> m.n_trees_, bool(((m.predict(X) > 0) & (m.predict(X) < 1)).all())
    (2, True)
    """

    def __init__(self, *, library: str = "lightgbm", n_estimators: int = 20, learning_rate: float = 0.1,
                 num_leaves: int = 31, min_child_samples: int = 20, seed: int = 0,
                 params: Optional[dict] = None) -> None:
        self.library = library
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.seed = seed
        self.params = params

    def checked(self) -> tuple:
        """``(library code, n_estimators, learning_rate, num_leaves, min_child_samples, seed, params)``."""
        return (LIBRARIES[check_choice(self.library, "library", set(LIBRARIES))],
                check_int(self.n_estimators, "n_estimators", minimum=1, maximum=100_000),
                check_positive(self.learning_rate, "learning_rate"),
                check_int(self.num_leaves, "num_leaves", minimum=2, maximum=131_072),
                check_int(self.min_child_samples, "min_child_samples", minimum=0),
                check_int(self.seed, "seed", minimum=0), checked_params(self.params))

    def fit(self, X: Any, y: npt.ArrayLike, sample_weight: Optional[npt.ArrayLike] = None) -> "BoostedRelevance":
        lib, n_est, lr, leaves, min_child, seed, extra = self.checked()
        y = np.asarray(y, dtype=np.float64)
        w = np.ones(y.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if "_X2" not in self.__dict__ or self.__dict__["_X2_of"] is not X:
            self.__dict__["_X2"], self.__dict__["_X2_of"] = _stack(X), X  # stacked once per EM fit, not per iteration
        labels2 = np.concatenate([np.ones(y.shape[0]), np.zeros(y.shape[0])])
        weight2 = np.concatenate([w * y, w * (1.0 - y)])
        self.booster_ = fit_more(lib, getattr(self, "booster_", None), self.__dict__["_X2"], labels2, weight2,
                                 (n_est, lr, leaves, min_child, seed, extra))
        self.n_trees_ = n_trees(lib, self.booster_)
        self._lib = lib
        return self

    def raw(self, X: Any, num_trees: Optional[int] = None) -> np.ndarray:
        """Raw scores (logits) with the first ``num_trees`` trees (all when None)."""
        return raw_predict(self._lib, self.booster_, X, self.n_trees_ if num_trees is None else num_trees)

    def predict(self, X: Any) -> np.ndarray:
        return relevance(self.raw(X))

    def forget_rows(self) -> None:
        """Drop the stacked training rows kept between the calls of one EM fit (the EM calls it at its end)."""
        self.__dict__.pop("_X2", None)
        self.__dict__.pop("_X2_of", None)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_X2", None)  # the stacked training rows are a cache of one fit
        state.pop("_X2_of", None)
        return state

    def __repr__(self) -> str:
        names = ("library", "n_estimators", "learning_rate", "num_leaves", "min_child_samples", "seed", "params")
        return "BoostedRelevance(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in names) + ")"


def _constant_more(model, labels2, weight2, n_est):
    """The next :class:`ConstantRelevance`: the logit of the soft labels' weighted mean."""
    p = float(np.clip(np.dot(weight2, labels2) / max(float(weight2.sum()), EPS), EPS, 1.0 - EPS))
    return ConstantRelevance(np.log(p / (1.0 - p)), (0 if model is None else model.n_trees) + n_est)


def fit_more(lib, model, X2, labels2, weight2, options):
    """``n_est`` more trees of the soft-label logistic fit, continuing ``model``; a
    :class:`ConstantRelevance` when LightGBM finds no feature to split (its internal error otherwise).
    ``options``: ``(n_est, lr, leaves, min_child, seed, extra)``."""
    n_est, lr, leaves, min_child, seed, extra = options
    if isinstance(model, ConstantRelevance):
        return _constant_more(model, labels2, weight2, n_est)
    loss = _SoftLabelLoss(labels2, weight2)
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
        params["objective"] = loss
        return lgb.train(params, data, n_est, init_model=model, keep_training_booster=True)
    import xgboost as xgb

    params = xgboost_em_params(lr, leaves, min_child, seed, extra)
    return xgb.train(params, xgb.DMatrix(X2, labels2, weight=weight2), n_est, obj=loss, xgb_model=model)


def n_trees(lib, model):
    """Boosting rounds in the fitted model, counted on the model itself."""
    if isinstance(model, ConstantRelevance):
        return model.n_trees
    return int(model.current_iteration() if lib == LIGHTGBM else model.num_boosted_rounds())


def raw_predict(lib, model, X, n_trees):
    if isinstance(model, ConstantRelevance):
        return model.predict(X)
    if lib == LIGHTGBM:
        return np.asarray(model.predict(X, raw_score=True, num_iteration=n_trees), dtype=np.float64)
    import xgboost as xgb

    return np.asarray(model.predict(xgb.DMatrix(X), output_margin=True, iteration_range=(0, n_trees)),
                      dtype=np.float64)


def check_relevance_model(model: Any) -> Any:
    """``model`` if it is an instance with ``fit`` and ``predict`` (a :class:`RelevanceLearner`), else TypeError."""
    if isinstance(model, type) or not isinstance(model, RelevanceLearner):
        raise TypeError(f"relevance_model must have fit(X, y, sample_weight=) and predict(X) (a RelevanceLearner, "
                        f"e.g. BoostedRelevance or a scikit-learn regressor), got {type(model).__name__}")
    return model

