"""customobj objectives as XGBoost custom objectives (``xgboost.train(..., obj=f)``).

``f(preds, dtrain)``: labels, weights and query offsets (``get_uint_info("group_ptr")``) are read
from the DMatrix once and prepared once per DMatrix (weak-keyed cache).

What XGBoost does for a custom objective (checked on 3.2):

- ``preds`` are float32 margins that include ``base_margin`` (model adaptation: put the base
  model's scores there) and ``base_score``. With a custom objective XGBoost does not estimate
  ``base_score``; unless set it adds the constant 0.5 to every margin. Ranking losses do not see a
  constant shift, but pointwise terms (SquaredError, Logistic, the regression part of QBRank) do:
  :func:`xgboost_params` sets ``base_score=0`` unless you chose one.
- the margins are copied once per round into a reused float64 buffer (the objective works in
  float64); grad/hess buffers are reused too.
- weights: for ranking data XGBoost stores one weight per query; they are spread over the
  query's rows (customobj weights are per row).
- multi-output (McRank, ``K`` grades): set ``num_class=K``; margins arrive as ``(n, K)`` and
  grad/hess go back as ``(n, K)``.

XGBRanker: does not work. It rejects callable objectives (it must run a ``rank:*`` objective)
and, unlike LightGBM's estimators, XGBoost's scikit-learn objective signature
``(y_true, y_pred[, sample_weight])`` carries no query information, so a ranking objective
cannot be passed through XGBRegressor either. Use ``xgboost.train`` with a ``DMatrix(group=...)``
or ``DMatrix(qid=...)``. Pointwise objectives work with XGBRegressor through
:func:`xgboost_sklearn_objective`.
``xgboost.dask.train(obj=...)`` silently splits queries across workers: use ``customobj.adapters.dask.train_xgboost``, which aligns partitions to whole queries.
"""
from __future__ import annotations

import inspect
import weakref

import numpy as np

from ._data import check_outputs, prepare_state, require_objective, rows_weight

__all__ = ["xgboost_objective", "xgboost_params", "xgboost_sklearn_objective", "XGBoostObjective"]

_GROUP_HINT = "build the DMatrix with group= (query sizes) or qid="


def _dmatrix_ptr(dtrain):
    ptr = dtrain.get_uint_info("group_ptr")
    if ptr is None or len(ptr) < 2:
        return None
    return np.asarray(ptr, dtype=np.int64)


def _new_state(objective, labels, ptr, weight):
    labels = np.asarray(labels)
    w = rows_weight(weight, ptr, labels.shape[0])
    return prepare_state(objective, labels, ptr, w, library="XGBoost", group_hint=_GROUP_HINT,
                         out_dtype=np.float32)


def _grad_hess(objective, state, preds):
    preds = np.asarray(preds)
    if preds.ndim == 2 and objective.n_outputs == 1 and preds.shape[1] == 1:
        preds = preds[:, 0]
    check_outputs(objective, preds, "XGBoost", f"set params num_class={objective.n_outputs}")
    np.copyto(state.scores, preds, casting="same_kind")
    objective.grad_hess_prepared(state.scores, state.prep, state.grad, state.hess)
    np.copyto(state.out_grad, state.grad, casting="same_kind")
    np.copyto(state.out_hess, state.hess, casting="same_kind")
    return state.out_grad, state.out_hess


class XGBoostObjective:
    """``f(preds, dtrain) -> (grad, hess)`` for ``xgboost.train(obj=f)``; see the module docstring."""

    def __init__(self, objective):
        self.objective = require_objective(objective, "xgboost_objective")
        self._states = weakref.WeakKeyDictionary()

    def __repr__(self):
        return f"xgboost_objective({self.objective!r})"

    def __getstate__(self):
        # The per-dataset cache holds weak references (not picklable) and is rebuilt where the
        # callable lands, e.g. on a Dask worker: only the objective travels.
        return {"objective": self.objective}

    def __setstate__(self, state):
        self.__init__(state["objective"])

    def state_for(self, dtrain):
        state = self._states.get(dtrain)
        if state is None:
            ptr = _dmatrix_ptr(dtrain)
            state = _new_state(self.objective, dtrain.get_label(), ptr, dtrain.get_weight())
            self._states[dtrain] = state
        return state

    def __call__(self, preds, dtrain):
        return _grad_hess(self.objective, self.state_for(dtrain), preds)


def xgboost_objective(objective):
    """Wrap a customobj objective for ``xgboost.train(params, dtrain, obj=...)``.

    >>> obj = customobj.RankNet()
    >>> booster = xgboost.train(xgboost_params(obj, {"tree_method": "hist"}), dtrain, 100,
    ...                         obj=xgboost_objective(obj))
    """
    return XGBoostObjective(objective)


def xgboost_params(objective, params=None):
    """A copy of ``params`` completed for a custom objective: ``base_score=0`` unless set (so
    pointwise terms see the true margin), ``num_class=K`` for multi-output objectives, and
    ``disable_default_eval_metric`` (the default metric would evaluate a meaningless objective)."""
    require_objective(objective, "xgboost_params")
    out = dict(params or {})
    out.setdefault("base_score", 0.0)
    out.setdefault("disable_default_eval_metric", 1)
    k = objective.n_outputs
    if k is None:
        raise ValueError(
            f"{type(objective).__name__} does not know its number of outputs yet: pass n_classes= "
            "so that num_class can be set before training"
        )
    if k > 1:
        if out.get("num_class", k) != k:
            raise ValueError(f"{type(objective).__name__} has {k} outputs but params num_class={out['num_class']}")
        out["num_class"] = k
    return out


def xgboost_sklearn_objective(objective):
    """A ``(y_true, y_pred, sample_weight)`` objective for XGBRegressor / XGBClassifier.

    Pointwise objectives only (see the module docstring: XGBoost's estimators pass no query
    groups). Preparation is reused while the labels and weights stay the same.
    """
    obj = require_objective(objective, "xgboost_sklearn_objective")
    if obj.needs_group:
        raise ValueError(
            f"{type(obj).__name__} needs query groups, which XGBoost's scikit-learn estimators never pass "
            "to a custom objective (and XGBRanker rejects callables): use xgboost.train with "
            "customobj.adapters.xgboost_objective and a DMatrix built with group= or qid="
        )
    last = []  # [(labels, weight, state)] of the previous call

    def objective_function(y_true, y_pred, sample_weight=None):
        # XGBoost hands a fresh label array every round, so identity cannot key a cache:
        # compare with the previous round's data instead (O(n), like the score copy).
        y = np.asarray(y_true)
        w = None if sample_weight is None or np.size(sample_weight) == 0 else np.asarray(sample_weight)
        if last and np.array_equal(last[0][0], y) and (
            (w is None and last[0][1] is None) or (w is not None and last[0][1] is not None and np.array_equal(last[0][1], w))
        ):
            state = last[0][2]
        else:
            state = _new_state(obj, y, None, w)
            last[:] = [(y.copy(), None if w is None else w.copy(), state)]
        return _grad_hess(obj, state, y_pred)

    objective_function.objective = obj
    objective_function.__name__ = f"customobj_{type(obj).__name__}"
    objective_function.__signature__ = inspect.signature(objective_function)
    return objective_function
