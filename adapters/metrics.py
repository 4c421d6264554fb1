"""customobj metrics (``customobj.metrics.get_metric`` names) as LightGBM ``feval`` /
``eval_metric`` and XGBoost ``custom_metric``.

Names: ``"ndcg@10"``, ``"err@10"``, ``"map"``, ``"mrr"``, ``"precision@100%"``, ``"misordered"``,
``"ndcg_mpboost@5"``, ... (see ``customobj.metrics.METRIC_NAMES``). Each metric is the mean over
the queries of the evaluated data, read from the Dataset / DMatrix query boundaries (prepared once
per data set, again after ``set_label`` / ``set_group``). Multiclass margins ``(n, K)`` (McRank)
are ranked by their expected grade.

Reported names carry the prefix :data:`PREFIX` (``"co_ndcg@10"``): LightGBM and XGBoost have
their own ``ndcg@10`` with other conventions, and one name for both would interleave two curves
under one key of ``record_evaluation`` / ``evals_result``. (``co_`` and not ``customobj:``:
XGBoost parses ``name:value`` out of its evaluation strings.) Everything here that takes a metric
name accepts both forms (``"ndcg@10"`` or ``"co_ndcg@10"``); :func:`metric_key` gives the key
to read a history with.

Learning curves: these factories feed LightGBM's ``record_evaluation`` / ``evals_result_`` and
XGBoost's ``evals_result``; nothing else records them.

Early stopping direction:

- LightGBM: every result carries its own ``is_higher_better`` flag; ``lightgbm.early_stopping``
  uses it. Nothing to do.
- XGBoost: ``custom_metric`` returns only ``(name, value)``; the direction is the single
  ``maximize=`` argument of ``xgboost.train`` (or ``EarlyStopping(maximize=...)``). Left out,
  XGBoost 3.2 guesses it from the metric's name at the first evaluation
  (``xgboost.callback.EarlyStopping._update_rounds``: maximise only names starting ``ndcg``,
  ``map``, ``auc``, ``pre``), so it would *minimise* ``co_ndcg@10`` and keep the worst round. An
  :func:`xgboost_metric` therefore sets the direction itself: at each evaluation it finds the
  ``xgboost.train`` / ``xgboost.cv`` run calling it (the callback container on the call stack) and
  gives every ``EarlyStopping`` of that run whose ``maximize`` is still unset the direction of the
  metric it watches (the one named by ``metric_name``, else the last name: XGBoost watches the last
  metric). A ``maximize=`` you pass is never changed; ``maximize=m.maximize`` or
  :func:`xgboost_early_stopping` (to stop on any one of the names) say the same explicitly.
"""
from __future__ import annotations

import functools
import operator
import sys
from typing import Callable
import weakref

import numpy as np

from customobj.groups import Groups
from customobj.metrics import Metric, get_metric

from ._data import ranking_scores
from ._score_offsets import apply_offset
from ._stamp import Stamp, lightgbm_fields, xgboost_fields

__all__ = ["lightgbm_metric", "lightgbm_sklearn_metric", "xgboost_metric", "xgboost_early_stopping", "resolve_metrics",
           "metric_key", "lookup_metric", "PREFIX"]

#: Prefix of every metric name the adapters report (see the module docstring).
PREFIX = "co_"


def lookup_metric(name: "str | Metric") -> Metric:
    """``customobj.metrics.get_metric`` that also accepts the reported form ``"co_ndcg@10"``, and a
    :class:`~customobj.metrics.Metric` itself (``customobj.metrics.click_metric``: a metric with arguments)."""
    if isinstance(name, Metric):
        return name
    if isinstance(name, str) and name.strip().lower().startswith(PREFIX):
        bare = name.strip()[len(PREFIX):]
        try:
            return get_metric(bare)
        except ValueError as exc:  # name what the caller wrote, not the stripped form
            raise ValueError(str(exc).replace(repr(bare), repr(name), 1)) from None
    return get_metric(name)


def metric_key(name: "str | Metric") -> str:
    """The name under which the adapters report metric ``name``: ``metric_key("NDCG@10") == "co_ndcg@10"``."""
    return PREFIX + lookup_metric(name).name


def resolve_metrics(names: tuple) -> tuple:
    """``lookup_metric`` for each name (at least one); errors name the bad one."""
    if len(names) == 1 and isinstance(names[0], (list, tuple)) and not isinstance(names[0], Metric):
        names = tuple(names[0])
    if not names:
        raise ValueError("give at least one metric name, e.g. 'ndcg@10'")
    return tuple(lookup_metric(n) for n in names)


#: How far up the call stack an XGBoost metric looks for the training run calling it:
#: ``xgboost.train`` -> CallbackContainer.after_iteration -> Booster.eval_set -> the metric (two
#: frames), ``xgboost.cv`` -> ... -> _PackedBooster.eval -> CVPack.eval -> Booster.eval_set (four).
_XGBOOST_STACK_DEPTH = 8


def _xgboost_run_callbacks():
    """The callbacks of the ``xgboost.train`` / ``xgboost.cv`` run that called the metric calling
    this, or ``()`` when it was called some other way."""
    from xgboost.callback import CallbackContainer

    frame = sys._getframe(2)  # the metric's own frame (XGBoostMetric.__call__ -> _direct_early_stopping -> here)
    for _ in range(_XGBOOST_STACK_DEPTH):
        if frame is None:
            break
        owner = frame.f_locals.get("self")
        if isinstance(owner, CallbackContainer):
            return owner.callbacks
        frame = frame.f_back
    return ()


def _direct_early_stopping(higher: dict, last: str) -> None:
    """Give each ``EarlyStopping`` of the calling XGBoost run whose ``maximize`` is unset the
    direction of the metric it watches, before XGBoost guesses one from the name (module docstring).
    ``higher`` maps each reported name to its direction, ``last`` is the last name. An EarlyStopping
    watching a metric that is not one of ``higher`` (XGBoost's own) is left alone."""
    from xgboost.callback import EarlyStopping

    for cb in _xgboost_run_callbacks():
        if isinstance(cb, EarlyStopping) and cb.maximize is None:
            watched = cb.metric_name if cb.metric_name else last  # XGBoost watches the last
            if watched in higher:
                cb.maximize = higher[watched]


def _groups_or_error(ptr, n_rows, what):
    if ptr is None or len(ptr) < 2:
        raise ValueError(
            f"ranking metrics need query groups but the {what} has none (pass group= / qid= when building it)"
        )
    return Groups.from_ptr(np.asarray(ptr, dtype=np.int64), n_rows)


def _evaluate(metrics, preds, labels, groups):
    s = ranking_scores(preds)
    return [(PREFIX + m.name, float(m.func(s, labels, groups)), m.higher_is_better) for m in metrics]


class _PerDatasetData:
    """Labels and query groups read once per Dataset / DMatrix (weakly keyed), read again when
    the data's labels or groups changed (``adapters._stamp``). Pickles without the cache."""

    _what = "training data"
    #: Set by each library's subclass: a data set's query boundaries, its ``(label, weight, group)``
    #: fields (``adapters._stamp``), and how a :class:`Stamp` compares them ("identity" or "content").
    _boundaries: Callable[[object], np.ndarray]
    _fields: Callable[[object], tuple]
    _stamp_by: str
    #: Both libraries' data sets hand out their labels so.
    _labels = operator.methodcaller("get_label")

    def __init__(self, metrics: tuple) -> None:
        self.metrics = tuple(metrics)
        # Dataset / DMatrix -> (Stamp, labels float64, Groups)
        self._data: weakref.WeakKeyDictionary[object, tuple[Stamp, np.ndarray, Groups]] = weakref.WeakKeyDictionary()

    def __getstate__(self) -> dict:
        return {"metrics": self.metrics}

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["metrics"])

    def __deepcopy__(self, memo: dict):
        # LGBMModel.fit deep-copies eval_metric; the cache is per data set, so sharing it is right.
        return self

    @property
    def names(self) -> tuple:
        """The reported names, ``("co_ndcg@10", ...)``: the keys of the recorded histories."""
        return tuple(PREFIX + m.name for m in self.metrics)

    def data_for(self, data: object) -> "tuple[np.ndarray, Groups]":
        fields = self._fields(data)
        hit = self._data.get(data)
        if hit is None or not hit[0].matches(fields):
            labels = np.asarray(self._labels(data), dtype=np.float64)
            groups = _groups_or_error(self._boundaries(data), labels.shape[0], self._what)
            hit = self._data[data] = (Stamp(fields, by=self._stamp_by), labels, groups)
        return hit[1], hit[2]


class LightGBMMetric(_PerDatasetData):
    """customobj metrics for LightGBM, in both calling conventions: ``feval(preds, eval_data)``
    of ``lightgbm.train`` and ``eval_metric(y_true, y_pred, weight, group)`` of the scikit-learn
    estimators (four parameters, so LGBMRanker passes the query sizes). Results are
    ``[(name, value, is_higher_better), ...]`` with names ``co_<metric>``."""

    _what = "LightGBM Dataset"

    _boundaries = operator.methodcaller("get_field", "group")
    _fields = functools.partial(lightgbm_fields, weight=False)
    _stamp_by = "identity"  # the Dataset's own arrays: no leak

    def __repr__(self) -> str:
        return f"lightgbm_metric({', '.join(repr(m.name) for m in self.metrics)})"

    def __call__(self, first: np.ndarray, second: object, weight: np.ndarray | None = None,
                 group: np.ndarray | None = None) -> list:
        """``(preds, eval_data)`` from ``lightgbm.train`` or ``(y_true, y_pred, weight, group)``
        from the scikit-learn estimators."""
        if isinstance(second, np.ndarray):  # scikit-learn: labels and sizes come as arrays
            labels = np.asarray(first, dtype=np.float64)
            ptr = None
            if group is not None and len(group) > 0:
                ptr = np.concatenate(([0], np.cumsum(np.asarray(group, dtype=np.int64))))
            return _evaluate(self.metrics, second, labels, _groups_or_error(ptr, labels.shape[0], "evaluation data"))
        labels, groups = self.data_for(second)
        preds = apply_offset(second, first)  # corrections made by LineSearch / ExactLeaves
        return _evaluate(self.metrics, preds, labels, groups)


def lightgbm_metric(*names: "str | Metric") -> LightGBMMetric:
    """customobj metrics as LightGBM ``feval`` (``lightgbm.train``) or ``eval_metric`` (``LGBMRanker.fit``).

    Parameters
    ----------
    *names : str or Metric
        Metric names (``"ndcg@10"``, ``"err@10"``, ``"map"``, ... or their reported form ``"co_ndcg@10"``),
        or metrics with arguments: ``customobj.metrics.click_metric("ips_ndcg@10", propensity=...)``
        evaluates a click-only validation log (its labels are clicks, its rows in display order).

    Returns
    -------
    LightGBMMetric
        A picklable callable; results are named ``co_<metric>`` (``curves["valid"]["co_ndcg@10"]``).

    Examples
    --------
    >>> import lightgbm, customobj
    >>> from customobj.adapters import lightgbm_metric, lightgbm_objective
    >>> d = customobj.data.synthetic(20, 10, 5)
    >>> dtrain = lightgbm.Dataset(d.X, d.y, group=d.group)
    >>> curves = {}
    >>> booster = lightgbm.train({"objective": lightgbm_objective(customobj.LambdaRank()), "metric": "None",
    ...                           "verbose": -1}, dtrain, 5, valid_sets=[dtrain], valid_names=["train"],
    ...                          feval=lightgbm_metric("ndcg@10"), callbacks=[lightgbm.record_evaluation(curves)])
    >>> len(curves["train"]["co_ndcg@10"])
    5
    """
    return LightGBMMetric(resolve_metrics(names))


def lightgbm_sklearn_metric(*names: "str | Metric") -> LightGBMMetric:
    """The same as :func:`lightgbm_metric` (kept for existing code): ``eval_metric`` for ``LGBMRanker.fit``."""
    return LightGBMMetric(resolve_metrics(names))


class XGBoostMetric(_PerDatasetData):
    """customobj metrics as XGBoost ``custom_metric(preds, dmat) -> [(name, value), ...]``."""

    _what = "XGBoost DMatrix"

    _boundaries = operator.methodcaller("get_uint_info", "group_ptr")
    _fields = functools.partial(xgboost_fields, weight=False)
    _stamp_by = "content"  # views of XGBoost's buffers: hashed, never kept

    def __init__(self, metrics: tuple) -> None:
        super().__init__(metrics)
        #: Direction of the last metric: what ``xgboost.train(maximize=...)`` should get.
        self.maximize = self.metrics[-1].higher_is_better
        # Reported name -> direction, for _direct_early_stopping at every evaluation.
        self._higher = {name: m.higher_is_better for name, m in zip(self.names, self.metrics)}

    def __repr__(self) -> str:
        return f"xgboost_metric({', '.join(repr(m.name) for m in self.metrics)})"

    def __call__(self, preds: np.ndarray, dmat: object) -> list:
        if not hasattr(dmat, "get_uint_info"):
            raise TypeError(
                "xgboost_metric is custom_metric for xgboost.train, called as f(preds, dmatrix); got a "
                f"{type(dmat).__name__} second argument (XGBoost's scikit-learn eval_metric passes no query "
                "groups: train with xgboost.train and a DMatrix built with group= or qid=)"
            )
        _direct_early_stopping(self._higher, self.names[-1])
        labels, groups = self.data_for(dmat)
        return [(name, value) for name, value, _ in _evaluate(self.metrics, preds, labels, groups)]


def xgboost_metric(*names: "str | Metric") -> XGBoostMetric:
    """``custom_metric`` for ``xgboost.train``: a list of ``(name, value)``, names ``co_<metric>``.

    Early stopping keeps the best round without ``maximize=``: the metric tells XGBoost's
    ``EarlyStopping`` its direction (see the module docstring); ``.maximize`` is the direction of
    the last name, the one XGBoost watches, for ``xgboost.train(maximize=...)``.
    With a custom objective XGBoost hands the metric raw margins; with a native objective it hands
    transformed predictions, which for ``rank:*`` and ``reg:squarederror`` are the margins too.

    Examples
    --------
    >>> import xgboost, customobj
    >>> from customobj.adapters import xgboost_metric
    >>> d = customobj.data.synthetic(20, 10, 5)
    >>> dtrain = xgboost.DMatrix(d.X, d.y, group=d.group)
    >>> m, hist = xgboost_metric("ndcg@10"), {}
    >>> booster = xgboost.train({"objective": "rank:ndcg"}, dtrain, 5, evals=[(dtrain, "train")],
    ...                         custom_metric=m, maximize=m.maximize, evals_result=hist, verbose_eval=False)
    >>> len(hist["train"]["co_ndcg@10"])
    5
    """
    return XGBoostMetric(resolve_metrics(names))


def xgboost_early_stopping(rounds: int, metric: "str | Metric", *, data_name: str | None = None, save_best: bool = False,
                           min_delta: float = 0.0) -> object:
    """``xgboost.callback.EarlyStopping`` watching one customobj metric (``"ndcg@10"`` or
    ``"co_ndcg@10"``) of :func:`xgboost_metric` in its right direction."""
    import xgboost

    m = resolve_metrics((metric,))[0]
    return xgboost.callback.EarlyStopping(
        rounds=rounds, metric_name=PREFIX + m.name, data_name=data_name, maximize=m.higher_is_better,
        save_best=save_best, min_delta=min_delta,
    )
