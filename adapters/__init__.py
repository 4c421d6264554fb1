"""Glue between customobj objectives / metrics and LightGBM / XGBoost.

- :func:`lightgbm_objective` (``lightgbm.train``) and :func:`lightgbm_sklearn_objective`
  (``LGBMRanker`` / ``LGBMRegressor`` / ``LGBMClassifier``);
- :func:`xgboost_objective` (``xgboost.train``), :func:`xgboost_params`,
  :func:`xgboost_sklearn_objective` (pointwise objectives with XGBRegressor; XGBRanker cannot
  take a callable objective, see ``customobj.adapters.xgboost``);
- :func:`lightgbm_metric`, :func:`lightgbm_sklearn_metric`, :func:`xgboost_metric`,
  :func:`xgboost_early_stopping`: customobj metrics as feval / custom_metric;
- :class:`customobj.adapters.callbacks.LineSearch`: QBRank's line search on each new LightGBM tree.

Threads: importing this package sets ``OMP_WAIT_POLICY=passive`` and ``KMP_BLOCKTIME=0`` (unless
already set) before LightGBM / XGBoost load, so numba's and the libraries' OpenMP pools do not
starve each other with spinning threads (see ``customobj.adapters._threads``). Import ``customobj.adapters`` before
``lightgbm`` / ``xgboost``, or set the variable yourself; a warning says when it came too late.
"""
from ._threads import configure_threads

configure_threads()

from .lightgbm import lightgbm_objective, lightgbm_sklearn_objective  # noqa: E402
from .xgboost import xgboost_objective, xgboost_params, xgboost_sklearn_objective  # noqa: E402
from .metrics import (  # noqa: E402
    lightgbm_metric,
    lightgbm_sklearn_metric,
    xgboost_early_stopping,
    xgboost_metric,
)
from .callbacks import LineSearch  # noqa: E402

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
    "LineSearch",
    "configure_threads",
]
