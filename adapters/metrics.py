"""customobj metrics (``customobj.metrics.get_metric`` names) as LightGBM ``feval`` and XGBoost
``custom_metric``.

Names: ``"ndcg@10"``, ``"err@10"``, ``"map"``, ``"mrr"``, ``"precision@100%"``, ``"misordered"``,
``"ndcg_mpboost@5"``, ... (see ``customobj.metrics.METRIC_NAMES``). Each metric is the mean over
the queries of the evaluated data, read from the Dataset / DMatrix query boundaries (prepared once
per data set). Multiclass margins ``(n, K)`` (McRank) are ranked by their expected grade.

Learning curves: these factories feed LightGBM's ``record_evaluation`` / ``evals_result`` and
XGBoost's ``evals_result``; nothing else records them.

Early stopping direction:

- LightGBM: every result carries its own ``is_higher_better`` flag; ``lightgbm.early_stopping``
  uses it. Nothing to do.
- XGBoost: ``custom_metric`` returns only ``(name, value)``; the direction is the single
  ``maximize=`` argument of ``xgboost.train`` (or ``EarlyStopping(maximize=...)``), and by default
  XGBoost guesses it from the name (it would minimise ``err@10``). Pass
  ``maximize=m.maximize`` (the direction of the last name, which XGBoost's early stopping watches),
  or use :func:`xgboost_early_stopping` to stop on any one of the names.
"""
from __future__ import annotations

import weakref

import numpy as np

from customobj.groups import Groups
from customobj.metrics import get_metric

from ._data import ranking_scores

__all__ = ["lightgbm_metric", "lightgbm_sklearn_metric", "xgboost_metric", "xgboost_early_stopping", "resolve_metrics"]


def resolve_metrics(names):
    """``get_metric`` for each name (at least one); errors name the bad one."""
    if len(names) == 1 and isinstance(names[0], (list, tuple)):
        names = tuple(names[0])
    if not names:
        raise ValueError("give at least one metric name, e.g. 'ndcg@10'")
    return tuple(get_metric(n) for n in names)


def _groups_or_error(ptr, n_rows, what):
    if ptr is None or len(ptr) < 2:
        raise ValueError(
            f"ranking metrics need query groups but the {what} has none (pass group= / qid= when building it)"
        )
    return Groups.from_ptr(np.asarray(ptr, dtype=np.int64), n_rows)


def _evaluate(metrics, preds, labels, groups):
    s = ranking_scores(preds)
    return [(m.name, float(m.func(s, labels, groups)), m.higher_is_better) for m in metrics]


class _PerDatasetData:
    """Labels and query groups read once per Dataset / DMatrix (weakly keyed)."""

    _what = "training data"

    def __init__(self, metrics):
        self.metrics = metrics
        self._data = weakref.WeakKeyDictionary()  # Dataset / DMatrix -> (labels float64, Groups)

    def data_for(self, data):
        hit = self._data.get(data)
        if hit is None:
            labels = np.asarray(data.get_label(), dtype=np.float64)
            groups = _groups_or_error(self._boundaries(data), labels.shape[0], self._what)
            hit = self._data[data] = (labels, groups)
        return hit


class _LightGBMMetric(_PerDatasetData):
    _what = "LightGBM Dataset"

    @staticmethod
    def _boundaries(dataset):
        return dataset.get_field("group")

    def __repr__(self):
        return f"lightgbm_metric({', '.join(repr(m.name) for m in self.metrics)})"

    def __call__(self, preds, eval_data):
        from .lightgbm import _SCORE_OFFSETS  # corrections made by adapters.callbacks.LineSearch

        labels, groups = self.data_for(eval_data)
        offset = _SCORE_OFFSETS.get(eval_data)
        if offset is not None:
            preds = np.asarray(preds) + offset
        return _evaluate(self.metrics, preds, labels, groups)


def lightgbm_metric(*names):
    """``feval`` for ``lightgbm.train(..., feval=...)``: a list of ``(name, value, is_higher_better)``.

    >>> lightgbm.train(params | {"metric": "None"}, dtrain, 100, valid_sets=[dvalid],
    ...                feval=lightgbm_metric("ndcg@10", "err@10"),
    ...                callbacks=[lightgbm.early_stopping(20), lightgbm.record_evaluation(curves)])
    """
    return _LightGBMMetric(resolve_metrics(names))


def lightgbm_sklearn_metric(*names):
    """``eval_metric`` for ``LGBMRanker.fit``: a plain ``f(y_true, y_pred, weight, group)``."""
    metrics = resolve_metrics(names)

    def eval_metric(y_true, y_pred, weight, group):
        labels = np.asarray(y_true, dtype=np.float64)
        if group is None or len(group) == 0:
            ptr = None
        else:
            ptr = np.concatenate(([0], np.cumsum(np.asarray(group, dtype=np.int64))))
        groups = _groups_or_error(ptr, labels.shape[0], "evaluation data")
        return _evaluate(metrics, y_pred, labels, groups)

    eval_metric.metrics = metrics
    return eval_metric


class _XGBoostMetric(_PerDatasetData):
    _what = "XGBoost DMatrix"

    @staticmethod
    def _boundaries(dmat):
        return dmat.get_uint_info("group_ptr")

    def __init__(self, metrics):
        super().__init__(metrics)
        #: Direction of the last metric: what ``xgboost.train(maximize=...)`` should get.
        self.maximize = metrics[-1].higher_is_better
        self.names = tuple(m.name for m in metrics)

    def __repr__(self):
        return f"xgboost_metric({', '.join(repr(n) for n in self.names)})"

    def __call__(self, preds, dmat):
        labels, groups = self.data_for(dmat)
        return [(name, value) for name, value, _ in _evaluate(self.metrics, preds, labels, groups)]


def xgboost_metric(*names):
    """``custom_metric`` for ``xgboost.train``: a list of ``(name, value)``.

    The returned callable has ``.maximize`` (direction of the last name) for ``xgboost.train(maximize=...)``.
    With a custom objective XGBoost hands the metric raw margins; with a native objective it hands
    transformed predictions, which for ``rank:*`` and ``reg:squarederror`` are the margins too.
    """
    return _XGBoostMetric(resolve_metrics(names))


def xgboost_early_stopping(rounds, metric, *, data_name=None, save_best=False, min_delta=0.0):
    """``xgboost.callback.EarlyStopping`` watching one customobj metric in its right direction."""
    import xgboost

    m = resolve_metrics((metric,))[0]
    return xgboost.callback.EarlyStopping(
        rounds=rounds, metric_name=m.name, data_name=data_name, maximize=m.higher_is_better,
        save_best=save_best, min_delta=min_delta,
    )
