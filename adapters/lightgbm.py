"""customobj objectives as LightGBM 4.x custom objectives.

``lightgbm_objective(obj)`` works with both of LightGBM's APIs (one picklable callable,
:class:`LightGBMObjective`):

- ``lightgbm.train(params={"objective": f})`` (and ``Booster.update(fobj=f)``): LightGBM calls
  ``f(preds, train_data)``. Labels, weights and query boundaries are read from the Dataset and
  prepared once per Dataset (a weak-keyed cache: nothing keeps a Dataset alive), and prepared
  again when ``set_label`` / ``set_weight`` / ``set_group`` changed them (``adapters._stamp``).
- ``LGBMRanker`` / ``LGBMRegressor`` / ``LGBMClassifier(objective=f)``: the estimators count the
  parameters of ``f``; four (``*args`` would count as one and never receive ``group``), so they
  call ``f(y_true, y_pred, weight, group)``. Preparation is cached on the identity of the label
  array LightGBM passes (the same object every round) and checked against a sample hash of its
  content, weights and groups, so an array edited in place is prepared again. ``lightgbm_sklearn_objective`` is the
  same thing under its older name.

What LightGBM does and does not do for a custom objective (checked on 4.7):

- ``preds`` are float64 raw scores that already include ``init_score``; the buffer is reused
  across rounds, so it is read, never written.
- it does NOT multiply by weights: the objective applies them (customobj objectives do).
- grad/hess are converted to float32: they are handed over as float32 buffers reused every round.
- multiclass (``num_class=K``, McRank): scores arrive as ``(n, K)`` and grad/hess go back as
  ``(n, K)`` (a flat array would be read class-major without complaint).
- with a custom objective there is no boost-from-average: start from ``init_score`` if needed.

Line search (``customobj.adapters.callbacks.LineSearch``) rescales leaves after LightGBM has updated its
own training scores; the corrections are kept as a score offset in the Dataset's own record
(``customobj.adapters._score_offsets``) that this objective adds to ``preds`` every round.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import functools
import weakref
import numpy as np

from customobj.groups import as_groups
from customobj.objectives.base import Objective

from ._data import (AdapterObjective, TrainState, as_label_array, as_preds, check_outputs, copy_out, known_outputs,
                    prepare_state, require_objective, rows_weight)
from ._score_offsets import record_of
from ._stamp import Stamp, lightgbm_fields

if TYPE_CHECKING:  # the libraries' types, for the checker only
    from lightgbm.callback import CallbackEnv

__all__ = ["lightgbm_objective", "lightgbm_sklearn_objective", "LightGBMObjective", "trained_objective"]

_GROUP_HINT = "pass group= (query sizes) to lightgbm.Dataset, or group= to LGBMRanker.fit"
_CLASS_HINT = "set params num_class={k} (LightGBM then passes (n, {k}) scores)"


def _dataset_ptr(dataset):
    bounds = dataset.get_field("group")  # query boundaries (offsets) on a constructed Dataset
    if bounds is None or len(bounds) == 0:
        return None
    return np.asarray(bounds, dtype=np.int64)


def _grad_hess(objective, state, preds, offset=None, request=None):
    scores = preds
    if offset is not None:
        np.add(preds, offset, out=state.scores)
        scores = state.scores
    if request is not None:  # one pass for both: the couplings at exactly these gradients' scores
        request.couplings = objective.grad_hess_couplings_prepared(scores, state.prep, state.grad, state.hess,
                                                                   pair_buffer=request.pair_buffer)[2]
        request.grad, request.hess = state.grad, state.hess
    else:
        objective.grad_hess_prepared(scores, state.prep, state.grad, state.hess)
    return copy_out(state, objective, "LightGBM")


def _check_preds(objective, preds):
    preds = as_preds(preds, "LightGBM")
    k = known_outputs(objective, "LightGBM")
    check_outputs(objective, preds, "LightGBM", _CLASS_HINT.format(k=k))
    return preds


def _first_position(objective) -> int:
    """The ``first_position`` of the click objective in ``objective`` (itself, a wrapped one, or a
    part of a sum), 0 when none has one."""
    for part in (objective, getattr(objective, "objective", None), *getattr(objective, "parts", ())):
        if part is not None and hasattr(part, "first_position"):
            return int(part.first_position)
    return 0


def _as_given(position, objective):
    """A constructed Dataset's position field holds LightGBM's position ids, 0, 1, ... by first
    appearance, whatever numbers the user gave (a 1-based field reads back 0-based): renumbered
    from the objective's ``first_position`` so that ``first_position=1`` with a 1-based field is
    accepted, as the user wrote it, instead of refused (issue 39)."""
    if position is None:
        return None
    first = _first_position(objective)
    return np.asarray(position) + first if first else position


def _new_state(objective, labels, ptr, weight, position=None):
    """``labels``: the array :func:`as_label_array` made (labels are converted once, by the caller);
    ``position``: the Dataset's position field (LightGBM's position ids), or None."""
    w = rows_weight(weight, ptr, labels.shape[0])
    return prepare_state(
        objective, labels, ptr, w, library="LightGBM", group_hint=_GROUP_HINT,
        out_dtype=np.float32, out_order="F", position=position,
    )


def trained_objective(env: CallbackEnv, who: str) -> Objective:
    """The customobj objective this LightGBM training runs, for a callback that needs it.

    ``env`` is the ``lightgbm.callback.CallbackEnv`` of an after-iteration callback (the
    objective has run once by then, and noted itself in the training Dataset's record,
    :mod:`customobj.adapters._score_offsets`). Raises TypeError, naming ``who``, when the booster
    trains a native objective (``"objective": "lambdarank"``), a custom objective that is not a
    :func:`lightgbm_objective`, or runs through the scikit-learn estimators (which hand the
    objective labels, never the Dataset, so score corrections could not reach it): a callback that
    changes trees by a customobj loss would then work on a loss the booster never sees. Used by
    :class:`customobj.adapters.callbacks.LineSearch` and ``ExactLeaves``.
    """
    fix = "train with params['objective'] = customobj.adapters.lightgbm_objective(<the customobj objective>)"
    native = env.params.get("objective", "none") if env.params else "none"
    if isinstance(native, str) and native.strip().lower() not in ("none", "custom"):
        raise TypeError(
            f"{who} needs the booster to train a customobj objective, but it trains LightGBM's native "
            f"objective {native!r}, whose gradients {who} would not match: {fix}"
        )
    record = record_of(env.model.train_set) if env.model.train_set is not None else None
    if record is None or record.trained_by is None:
        raise TypeError(
            f"{who} works with lightgbm.train only, and needs it to train a customobj objective: no "
            "lightgbm_objective has seen this training Dataset, so the custom objective is not a customobj "
            "adapter, or training runs through LGBMRanker / LGBMRegressor, which hand the objective labels "
            f"but never the Dataset (the score corrections {who} makes could not reach it); {fix} and "
            "lightgbm.train"
        )
    return record.trained_by


def _is_dataset(data):
    return hasattr(data, "get_field") and hasattr(data, "get_label")


class LightGBMObjective(AdapterObjective):
    """A customobj objective as a LightGBM objective, for both of LightGBM's calling conventions.

    - ``lightgbm.train(params={"objective": f})`` / ``Booster.update(fobj=f)``: ``f(preds, train_data)``;
      labels, weights and query boundaries are read from the Dataset and prepared once per Dataset
      (weakly keyed), rebuilt when ``set_label`` / ``set_weight`` / ``set_group`` changed them.
    - ``LGBMRanker`` / ``LGBMRegressor`` / ``LGBMClassifier(objective=f)``: ``f(y_true, y_pred, weight,
      group)`` (the estimators count the parameters: four, so they pass the query sizes); prepared
      once per label array LightGBM hands over (the same object every round; a sample hash of the
      content notices in-place edits). With LGBMRegressor /
      LGBMClassifier ``group`` is None, so only pointwise objectives (and McRank with
      LGBMClassifier) work there; a ranking objective raises a ValueError saying so.

    The second argument tells the two apart: a Dataset, or the score array. Pickles (objective
    only: per-dataset state is rebuilt where it is unpickled), so estimators using it pickle too.
    """

    _factory = "lightgbm_objective"

    def _init_caches(self) -> None:
        super()._init_caches()  # Dataset -> TrainState
        # id(y_true) -> (weakref to y_true, TrainState): scikit-learn calls
        self._by_labels: dict[int, tuple[weakref.ref[np.ndarray], TrainState]] = {}

    def state_for(self, dataset: object) -> TrainState:
        """The prepared data and buffers of ``dataset`` (built on first use and after its labels,
        weights or groups changed)."""
        fields = lightgbm_fields(dataset)
        state = self._states.get(dataset)
        if state is None or not state.stamp.matches(fields):
            # the position field travels with the prepared data (click debiasing reads it; LightGBM keeps
            # its ids by first appearance: docs/clicks.md)
            position = _as_given(getattr(dataset, "get_position", lambda: None)(), self.objective)
            state = _new_state(self.objective, as_label_array(fields[0]), _dataset_ptr(dataset), fields[1], position)
            state.stamp = Stamp(fields, by="identity")  # arrays owned by the Dataset: no leak
            self._states[dataset] = state
        return state

    def _sklearn_state(self, y_true, weight, group) -> TrainState:
        key = id(y_true)
        hit = self._by_labels.get(key)
        # labels by content too: the same array edited in place must not train on the old values
        if hit is not None and hit[0]() is y_true and hit[1].stamp.matches((y_true, weight, group)):
            return hit[1]
        labels = as_label_array(y_true)  # the labels' shape first: group is checked against it
        ptr = None
        if group is not None and len(group) > 0:
            ptr = as_groups(group, labels.shape[0]).ptr
        state = _new_state(self.objective, labels, ptr, weight)
        # Stamped by content (sample hashes: y_true is not kept, and an in-place edit of it is seen);
        # the entry lives as long as y_true, through the weakref below, so its id is not reused meanwhile.
        state.stamp = Stamp((y_true, weight, group), by="content")
        try:
            ref = weakref.ref(y_true, functools.partial(_forget_labels, self._by_labels, key))
        except TypeError:  # not weak-referenceable (a plain list): not cached
            return state
        self._by_labels[key] = (ref, state)
        return state

    def __call__(self, first: np.ndarray | None, second: object, weight: np.ndarray | None = None,
                 group: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(preds, train_data)`` from ``lightgbm.train``, or ``(y_true, y_pred, weight, group)``
        from the scikit-learn estimators; returns float32 ``(grad, hess)``."""
        if _is_dataset(second):
            state = self.state_for(second)
            record = record_of(second, create=True)
            record.trained_by = self.objective  # for LineSearch / ExactLeaves: the loss LightGBM trains
            preds = _check_preds(self.objective, first)
            return _grad_hess(self.objective, state, preds, record.offset, record.couplings)
        if not isinstance(second, np.ndarray):
            raise TypeError(
                "lightgbm_objective is called as f(preds, train_data) by lightgbm.train or f(y_true, y_pred, "
                f"weight, group) by LGBMRanker / LGBMRegressor; got a {type(second).__name__} second argument"
            )
        state = self._sklearn_state(first, weight, group)
        return _grad_hess(self.objective, state, _check_preds(self.objective, second))


def _forget_labels(cache, key, ref):
    hit = cache.get(key)
    if hit is not None and hit[0] is ref:
        del cache[key]


def lightgbm_objective(objective: Objective) -> LightGBMObjective:
    """Wrap a customobj objective for LightGBM: ``lightgbm.train`` and the scikit-learn estimators.

    Parameters
    ----------
    objective : customobj objective
        The loss to train (``customobj.LambdaRank()``, ``customobj.QBRank()``, ...).

    Returns
    -------
    LightGBMObjective
        A picklable callable taking either calling convention (see :class:`LightGBMObjective`).
        Multi-output objectives (McRank with ``K`` grades) need ``params["num_class"] = K``.

    Examples
    --------
    >>> import lightgbm, customobj
    >>> from customobj.adapters import lightgbm_objective
    >>> d = customobj.data.synthetic(20, 10, 5)
    >>> params = {"objective": lightgbm_objective(customobj.LambdaRank()), "verbose": -1}
    >>> booster = lightgbm.train(params, lightgbm.Dataset(d.X, d.y, group=d.group), 5)
    >>> ranker = lightgbm.LGBMRanker(objective=lightgbm_objective(customobj.LambdaRank()), n_estimators=5,
    ...                              verbose=-1).fit(d.X, d.y, group=d.group)
    """
    return LightGBMObjective(objective)


def lightgbm_sklearn_objective(objective: Objective) -> LightGBMObjective:
    """The same as :func:`lightgbm_objective` (kept for existing code): its result works with
    ``LGBMRanker`` / ``LGBMRegressor`` / ``LGBMClassifier(objective=...)`` and ``lightgbm.train``."""
    return LightGBMObjective(require_objective(objective, "lightgbm_sklearn_objective"))
