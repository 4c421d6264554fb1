"""Glue between customobj objectives / metrics and LightGBM / XGBoost.

- :func:`lightgbm_objective`: for ``lightgbm.train`` and ``LGBMRanker`` / ``LGBMRegressor`` /
  ``LGBMClassifier`` alike (:func:`lightgbm_sklearn_objective` is the same, older name);
- :func:`xgboost_objective` (``xgboost.train``; pointwise objectives also with XGBRegressor),
  :func:`xgboost_params`, :func:`xgboost_sklearn_objective` (XGBRanker cannot take a callable
  objective, see ``customobj.adapters.xgboost``);
- :func:`lightgbm_metric` (feval and LGBMRanker ``eval_metric``; :func:`lightgbm_sklearn_metric`
  is the same), :func:`xgboost_metric`, :func:`xgboost_early_stopping`: customobj metrics,
  reported as ``co_<name>`` (``co_ndcg@10``; :func:`metric_key`) so they never share a key with
  the libraries' own metrics;
- :class:`customobj.adapters.callbacks.LineSearch`: QBRank's line search on each new LightGBM tree.

Every callable these return pickles (the objective only; per-dataset caches are rebuilt), so
scikit-learn models using them can be saved with pickle / joblib.

Threads: importing this package sets ``OMP_WAIT_POLICY=passive`` and ``KMP_BLOCKTIME=0`` (unless
already set) before LightGBM / XGBoost load, so numba's and the libraries' OpenMP pools do not
starve each other with spinning threads (see ``customobj.adapters._threads``). Import ``customobj.adapters`` before
``lightgbm`` / ``xgboost``, or set the variable yourself; a warning says when it came too late.
"""
from ._threads import configure_threads

configure_threads()

from .lightgbm import LightGBMObjective, lightgbm_objective, lightgbm_sklearn_objective  # noqa: E402
from .xgboost import XGBoostObjective, xgboost_objective, xgboost_params, xgboost_sklearn_objective  # noqa: E402
from .metrics import (  # noqa: E402
    PREFIX,
    LightGBMMetric,
    XGBoostMetric,
    lightgbm_metric,
    lightgbm_sklearn_metric,
    metric_key,
    xgboost_early_stopping,
    xgboost_metric,
)
from .callbacks import ExactLeaves, LineSearch  # noqa: E402

__all__ = [
    "lightgbm_objective",
    "lightgbm_sklearn_objective",
    "xgboost_objective",
    "xgboost_params",
    "xgboost_sklearn_objective",
    "lightgbm_metric",
    "lightgbm_sklearn_metric",
    "xgboost_metric",
    "xgboost_early_stopping",
    "metric_key",
    "PREFIX",
    "LightGBMObjective",
    "XGBoostObjective",
    "LightGBMMetric",
    "XGBoostMetric",
    "LineSearch",
    "ExactLeaves",
    "configure_threads",
]
