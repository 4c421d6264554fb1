"""customobj objectives as LightGBM 4.x custom objectives.

``lightgbm_objective(obj)`` is for ``lightgbm.train(params={"objective": f})`` (and
``Booster.update(fobj=f)``): LightGBM calls ``f(preds, train_data)``. Labels, weights and query
boundaries are read from the Dataset once (``get_label``, ``get_weight``, ``get_field("group")``)
and prepared once per Dataset (a weak-keyed cache: nothing keeps a Dataset alive).

``lightgbm_sklearn_objective(obj)`` is for ``LGBMRanker`` / ``LGBMRegressor`` /
``LGBMClassifier(objective=f)``: a plain 4-parameter function ``f(y_true, y_pred, weight, group)``
(the estimators pick their calling convention by counting parameters; ``*args`` would never
receive ``group``). Preparation is cached on the identity of the label array LightGBM passes
(the same object every round).

What LightGBM does and does not do for a custom objective (checked on 4.7):

- ``preds`` are float64 raw scores that already include ``init_score``; the buffer is reused
  across rounds, so it is read, never written.
- it does NOT multiply by weights: the objective applies them (customobj objectives do).
- grad/hess are converted to float32: they are handed over as float32 buffers reused every round.
- multiclass (``num_class=K``, McRank): scores arrive as ``(n, K)`` and grad/hess go back as
  ``(n, K)`` (a flat array would be read class-major without complaint).
- with a custom objective there is no boost-from-average: start from ``init_score`` if needed.

Line search (``customobj.adapters.callbacks.LineSearch``) rescales leaves after LightGBM has updated its
own training scores; the corrections are kept as a per-Dataset score offset in ``_SCORE_OFFSETS``
that this objective adds to ``preds`` every round.
"""
from __future__ import annotations

import weakref

import numpy as np

from customobj.groups import as_groups

from ._data import check_outputs, prepare_state, require_objective, rows_weight

__all__ = ["lightgbm_objective", "lightgbm_sklearn_objective", "LightGBMObjective"]

#: Dataset -> float64 array added to LightGBM's training scores (written by LineSearch).
_SCORE_OFFSETS = weakref.WeakKeyDictionary()

_GROUP_HINT = "pass group= (query sizes) to lightgbm.Dataset, or group= to LGBMRanker.fit"
_CLASS_HINT = "set params num_class={k} (LightGBM then passes (n, {k}) scores)"


def _dataset_ptr(dataset):
    bounds = dataset.get_field("group")  # query boundaries (offsets) on a constructed Dataset
    if bounds is None or len(bounds) == 0:
        return None
    return np.asarray(bounds, dtype=np.int64)


def _grad_hess(objective, state, preds, offset=None):
    scores = preds
    if offset is not None:
        np.add(preds, offset, out=state.scores)
        scores = state.scores
    objective.grad_hess_prepared(scores, state.prep, state.grad, state.hess)
    np.copyto(state.out_grad, state.grad, casting="same_kind")
    np.copyto(state.out_hess, state.hess, casting="same_kind")
    return state.out_grad, state.out_hess


def _check_preds(objective, preds):
    preds = np.asarray(preds)
    k = objective.n_outputs
    check_outputs(objective, preds, "LightGBM", _CLASS_HINT.format(k=k))
    return preds


def _new_state(objective, labels, ptr, weight):
    labels = np.asarray(labels)
    w = rows_weight(weight, ptr, labels.shape[0])
    return prepare_state(
        objective, labels, ptr, w, library="LightGBM", group_hint=_GROUP_HINT,
        out_dtype=np.float32, out_order="F",
    )


class LightGBMObjective:
    """``f(preds, train_data) -> (grad, hess)`` for ``lightgbm.train``; see the module docstring."""

    def __init__(self, objective):
        self.objective = require_objective(objective, "lightgbm_objective")
        self._states = weakref.WeakKeyDictionary()

    def __repr__(self):
        return f"lightgbm_objective({self.objective!r})"

    def __getstate__(self):
        # The per-dataset cache holds weak references (not picklable) and is rebuilt where the
        # callable lands, e.g. on a Dask worker: only the objective travels.
        return {"objective": self.objective}

    def __setstate__(self, state):
        self.__init__(state["objective"])

    def __deepcopy__(self, memo):
        # lightgbm.train deep-copies params; sharing the per-Dataset cache is what we want.
        return self

    def state_for(self, dataset):
        """The prepared data and buffers of ``dataset`` (built on first use)."""
        state = self._states.get(dataset)
        if state is None:
            ptr = _dataset_ptr(dataset)
            state = _new_state(self.objective, dataset.get_label(), ptr, dataset.get_weight())
            self._states[dataset] = state
        return state

    def __call__(self, preds, train_data):
        state = self.state_for(train_data)
        preds = _check_preds(self.objective, preds)
        return _grad_hess(self.objective, state, preds, _SCORE_OFFSETS.get(train_data))


def lightgbm_objective(objective):
    """Wrap a customobj objective for ``lightgbm.train(params={"objective": ...})``.

    >>> params = {"objective": lightgbm_objective(customobj.LambdaRank()), "metric": "None"}
    >>> booster = lightgbm.train(params, lightgbm.Dataset(X, y, group=sizes), 100)

    Multi-output objectives (McRank with ``K`` grades) need ``params["num_class"] = K``.
    """
    return LightGBMObjective(objective)


def lightgbm_sklearn_objective(objective):
    """Wrap a customobj objective for the scikit-learn estimators (``LGBMRanker(objective=f)``).

    Returns a plain function ``f(y_true, y_pred, weight, group)``: LGBMRanker then passes the
    query sizes given to ``fit(group=...)``. With LGBMRegressor / LGBMClassifier ``group`` is
    None, so only pointwise objectives (and McRank with LGBMClassifier) work there; a ranking
    objective raises a ValueError saying so.
    """
    obj = require_objective(objective, "lightgbm_sklearn_objective")
    cache = {}  # id(y_true) -> (weakref to y_true, id(weight), id(group), state)

    def forget(key):
        cache.pop(key, None)

    def objective_function(y_true, y_pred, weight, group):
        key = id(y_true)
        hit = cache.get(key)
        if hit is not None and hit[0]() is y_true and hit[1] == id(weight) and hit[2] == id(group):
            state = hit[3]
        else:
            ptr = None
            if group is not None and len(group) > 0:
                ptr = as_groups(group, len(y_true)).ptr
            state = _new_state(obj, y_true, ptr, weight)
            try:
                ref = weakref.ref(y_true, lambda _r, k=key: forget(k))
            except TypeError:  # not weak-referenceable (plain list): no caching
                return _grad_hess(obj, state, _check_preds(obj, y_pred))
            cache[key] = (ref, id(weight), id(group), state)
        return _grad_hess(obj, state, _check_preds(obj, y_pred))

    objective_function.objective = obj
    objective_function.__name__ = f"customobj_{type(obj).__name__}"
    objective_function.__qualname__ = objective_function.__name__
    objective_function.__doc__ = f"LightGBM scikit-learn objective for {obj!r}."
    return objective_function
